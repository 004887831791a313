package bpfmap

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// batchSize is how many entries one BPF_MAP_LOOKUP_BATCH call returns.
const batchSize = 4096

// ReadAll calls fn for every entry of the hash map m, reading it in
// batches (BPF_MAP_LOOKUP_BATCH, Linux >= 5.6: one system call per
// batchSize entries, where iterating key by key costs two per entry: ~10
// ms more per 10,000 entries here). Where the kernel has no batch lookup
// it iterates. Entries added or deleted during the read may or may not be
// seen, as with any iteration of a live hash map. K and V must be the
// map's key and value types (for a per-CPU map V is not supported).
func ReadAll[K, V any](m *ebpf.Map, fn func(k *K, v *V)) error {
	keys, vals := make([]K, batchSize), make([]V, batchSize)
	var cursor ebpf.MapBatchCursor
	for first := true; ; first = false {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		for i := range n {
			fn(&keys[i], &vals[i])
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return nil // the last batch
		case first && errors.Is(err, ebpf.ErrNotSupported):
			return iterate(m, fn)
		case err != nil:
			return fmt.Errorf("batch lookup: %w", err)
		}
	}
}

func iterate[K, V any](m *ebpf.Map, fn func(k *K, v *V)) error {
	var k K
	var v V
	it := m.Iterate()
	for it.Next(&k, &v) {
		fn(&k, &v)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("iterate: %w", err)
	}
	return nil
}
