package trace

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// stringTable gives every distinct string of one ScanColumns call an id,
// "" being 0. It is safe for concurrent use.
type stringTable struct {
	mu   sync.RWMutex
	ids  map[string]uint32
	vals []string
}

func newStringTable() *stringTable {
	return &stringTable{ids: map[string]uint32{"": 0}, vals: []string{""}}
}

// intern returns s's id, giving it the next one if it has none.
func (t *stringTable) intern(s string) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[s]; ok {
		return id
	}
	id := uint32(len(t.vals))
	t.vals = append(t.vals, s)
	t.ids[s] = id
	return id
}

// get returns the string of id ("" for an unknown id).
func (t *stringTable) get(id uint32) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if int(id) < len(t.vals) {
		return t.vals[id]
	}
	return ""
}

// localStrings is one decoding goroutine's cache of a stringTable: lookups
// of known strings take no lock and allocate nothing.
type localStrings struct {
	t   *stringTable
	ids map[string]uint32
}

func (t *stringTable) local() *localStrings {
	return &localStrings{t: t, ids: map[string]uint32{}}
}

// id returns the id of the string with bytes b.
func (l *localStrings) id(b []byte) uint32 {
	if id, ok := l.ids[string(b)]; ok {
		return id
	}
	s := string(b)
	id := l.t.intern(s)
	l.ids[s] = id
	return id
}

// internAll appends to dst the id of each PLAIN byte-array value, value i being
// vals[offs[i]:offs[i+1]]. A run of equal values costs one lookup.
func (l *localStrings) internAll(dst []uint32, vals []byte, offs []uint32) ([]uint32, error) {
	var prev []byte
	var id uint32
	for i := 0; i+1 < len(offs); i++ {
		lo, hi := offs[i], offs[i+1]
		if lo > hi || int(hi) > len(vals) {
			return dst, fmt.Errorf("byte array offsets %d..%d out of %d bytes: %w", lo, hi, len(vals), parquet.ErrCorrupted)
		}
		b := vals[lo:hi]
		if i == 0 || !bytes.Equal(b, prev) {
			id, prev = l.id(b), b
		}
		dst = append(dst, id)
	}
	return dst, nil
}
