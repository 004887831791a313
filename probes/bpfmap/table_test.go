package bpfmap

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/netprof/netprof/internal/kerneltest"
)

// A real hash map read whole each round: the table returns each key's
// previous value, deletes the keys that stayed the same for `after` reads
// (from the kernel's map too) and treats a deleted key that comes back as
// new. The kernel's map, read after each round, is the ground truth.
func TestTableIdleDeletion(t *testing.T) {
	kerneltest.RequireRoot(t)
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16})
	if err != nil {
		kerneltest.Skip(t, "create hash map: "+err.Error())
	}
	defer m.Close()
	put := func(k uint32, v uint64) {
		if err := m.Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	const after = 3
	tab := NewTable[uint32, uint64, string](after)
	var b Batch[uint32, uint64]
	// read returns, per key read, its previous value (-1: fresh).
	read := func() (map[uint32]int64, int) {
		t.Helper()
		prevs := map[uint32]int64{}
		err := b.ReadAll(m, func(k *uint32, v *uint64) {
			e, prev, fresh := tab.Seen(k, *v)
			if fresh {
				prevs[*k] = -1
				e.X = "kept"
			} else {
				prevs[*k] = int64(prev)
				if e.X != "kept" {
					t.Errorf("key %d lost its data", *k)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		n, err := tab.Collect(m)
		if err != nil {
			t.Fatal(err)
		}
		return prevs, n
	}
	for k := uint32(1); k <= 4; k++ {
		put(k, 10)
	}
	if prevs, n := read(); n != 0 || len(prevs) != 4 || prevs[1] != -1 {
		t.Fatalf("first read: prevs %v, deleted %d", prevs, n)
	}
	// Key 1 moves every round; 2..4 stay: deleted at the `after`th read
	// that saw them unchanged.
	for round := 1; round <= after; round++ {
		put(1, uint64(10+round))
		prevs, n := read()
		if prevs[1] != int64(10+round-1) || prevs[2] != 10 {
			t.Errorf("round %d: prevs %v", round, prevs)
		}
		wantDel := 0
		if round == after {
			wantDel = 3
		}
		if n != wantDel {
			t.Errorf("round %d: deleted %d, want %d", round, n, wantDel)
		}
	}
	var left []uint32
	if err := ReadAll(m, func(k *uint32, _ *uint64) { left = append(left, *k) }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != 1 || tab.Len() != 1 {
		t.Fatalf("after idle deletion the map holds %v, the table %d keys; want only key 1", left, tab.Len())
	}
	// A deleted key that comes back counts from zero; one deleted behind the
	// table's back is forgotten.
	put(2, 5)
	if err := m.Delete(uint32(1)); err != nil {
		t.Fatal(err)
	}
	if prevs, _ := read(); len(prevs) != 1 || prevs[2] != -1 || tab.Len() != 1 {
		t.Fatalf("after key 2 came back and key 1 went: prevs %v, table %d keys", prevs, tab.Len())
	}
}
