// Package bpfmap drains BPF hash maps that user space reads each interval:
// whole-table reads (ReadAll) and deletion of idle entries (Idle). netprof's per-flow and per-socket tables are plain
// (not LRU) hashes shared by all CPUs: an LRU hash evicts silently, and on
// hosts with many CPUs long before it is full (per-CPU free lists). So the
// kernel refuses new keys when the table is full (and counts what they
// carried), and user space makes room by deleting keys whose values did not
// change for a number of reads: their totals were already read, so nothing
// is lost unless the key moves again between the last read and the delete.
package bpfmap

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// Idle tracks, per key, a fingerprint of its value and for how many
// consecutive reads it stayed the same. The zero value is not usable: use
// NewIdle.
type Idle[K comparable] struct {
	after int
	state map[K]*idleState
	epoch uint64
}

type idleState struct {
	fp    uint64
	same  int
	epoch uint64
}

// NewIdle returns a tracker that calls a key idle after its fingerprint was
// the same in `after` consecutive reads following the one that set it.
func NewIdle[K comparable](after int) *Idle[K] {
	return &Idle[K]{after: after, state: map[K]*idleState{}}
}

// Seen records key's fingerprint in the current read (any value that
// changes whenever the entry's counters change).
func (g *Idle[K]) Seen(key K, fp uint64) {
	st, ok := g.state[key]
	if !ok {
		g.state[key] = &idleState{fp: fp, epoch: g.epoch + 1}
		return
	}
	if st.fp == fp {
		st.same++
	} else {
		st.fp, st.same = fp, 0
	}
	st.epoch = g.epoch + 1
}

// Collect ends the current read: it forgets keys not seen in it, and
// deletes from m the keys idle for long enough. It returns the keys it
// deleted (also on error: those deleted before it).
func (g *Idle[K]) Collect(m *ebpf.Map) ([]K, error) {
	g.epoch++
	var idle []K
	for k, st := range g.state {
		switch {
		case st.epoch != g.epoch:
			delete(g.state, k)
		case st.same >= g.after:
			idle = append(idle, k)
		}
	}
	if len(idle) == 0 {
		return nil, nil
	}
	n, err := deleteKeys(m, idle)
	for _, k := range idle[:n] {
		delete(g.state, k)
	}
	return idle[:n], err
}

// deleteKeys deletes keys from m, in one batch where the kernel has
// BPF_MAP_DELETE_BATCH (Linux >= 5.6), else one by one. A key already gone
// counts as deleted. It returns how many of keys (a prefix) were handled.
func deleteKeys[K comparable](m *ebpf.Map, keys []K) (int, error) {
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
