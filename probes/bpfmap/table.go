// Package bpfmap drains BPF hash maps that user space reads each interval:
// whole-table reads (ReadAll, Batch) and a per-key memory of the previous
// read that finds idle entries and deletes them (Table). netprof's per-flow
// and per-socket tables are plain (not LRU) hashes shared by all CPUs: an
// LRU hash evicts silently, and on hosts with many CPUs long before it is
// full (per-CPU free lists). So the kernel refuses new keys when the table
// is full (and counts what they carried), and user space makes room by
// deleting keys whose values did not change for a number of reads: their
// totals were already read, so nothing is lost unless the key moves again
// between the last read and the delete.
package bpfmap

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// Table remembers, per key of a map read whole each interval, a
// fingerprint of its value at the previous read (any comparable value that
// changes whenever the entry's counters do: for small values the value
// itself), data the caller attaches to the key (X: a decoded key, names),
// and for how many consecutive reads the fingerprint stayed the same. One
// Seen per entry read is the only per-entry work: a reader built on it
// computes deltas and finds idle entries in one map operation per entry.
// The zero value is not usable: use NewTable.
type Table[K, F comparable, X any] struct {
	after   int
	entries map[K]*Entry[F, X]
	read    uint64 // number of the current read
	seen    int    // entries seen in the current read
	idle    []K    // entries idle for long enough, seen in the current read
}

// Entry is what a Table keeps for one key.
type Entry[F, X any] struct {
	fp   F
	same int
	read uint64
	// X is the caller's data for this key; it lives as long as the key
	// stays in the table (a key deleted and seen again gets a new Entry).
	X X
}

// NewTable returns a table that calls a key idle after its fingerprint was
// the same in `after` consecutive reads following the one that set it.
func NewTable[K, F comparable, X any](after int) *Table[K, F, X] {
	return &Table[K, F, X]{after: after, entries: map[K]*Entry[F, X]{}, read: 1}
}

// Seen records key's fingerprint in the current read. It returns the key's
// entry and the fingerprint of the previous read (the zero F, with fresh
// true, for a key not in the previous read).
func (t *Table[K, F, X]) Seen(key *K, fp F) (e *Entry[F, X], prev F, fresh bool) {
	e, ok := t.entries[*key]
	if !ok {
		e = &Entry[F, X]{fp: fp, read: t.read}
		t.entries[*key] = e
		t.seen++
		return e, prev, true
	}
	if e.read == t.read {
		return e, e.fp, false // seen twice in one read: nothing changed
	}
	prev = e.fp
	if fp == prev {
		if e.same++; e.same >= t.after {
			t.idle = append(t.idle, *key)
		}
	} else {
		e.fp, e.same = fp, 0
	}
	e.read = t.read
	t.seen++
	return e, prev, false
}

// Len returns the number of keys the table remembers: after Collect, the
// map's entries as read (less those it deleted).
func (t *Table[K, F, X]) Len() int { return len(t.entries) }

// Collect ends the current read: it forgets keys not seen in it, and
// deletes from m (and forgets) the keys idle for long enough. It returns
// how many it deleted (also on error: those deleted before it).
func (t *Table[K, F, X]) Collect(m *ebpf.Map) (int, error) {
	if t.seen < len(t.entries) {
		for k, e := range t.entries {
			if e.read != t.read {
				delete(t.entries, k)
			}
		}
	}
	idle := t.idle
	t.read++
	t.seen, t.idle = 0, t.idle[:0]
	if len(idle) == 0 {
		return 0, nil
	}
	n, err := DeleteKeys(m, idle)
	for _, k := range idle[:n] {
		delete(t.entries, k)
	}
	return n, err
}

// DeleteKeys deletes keys from m, in one batch where the kernel has
// BPF_MAP_DELETE_BATCH (Linux >= 5.6), else one by one. A key already gone
// counts as deleted. It returns how many of keys (a prefix) were handled.
func DeleteKeys[K comparable](m *ebpf.Map, keys []K) (int, error) {
	n, err := m.BatchDelete(keys, nil)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, ebpf.ErrNotSupported) && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return n, fmt.Errorf("batch delete: %w", err)
	}
	for i := range keys {
		if err := m.Delete(keys[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return i, fmt.Errorf("delete: %w", err)
		}
	}
	return len(keys), nil
}
