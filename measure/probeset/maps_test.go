package probeset

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/trace"
)

// bpftoolMap is what `bpftool map show id N -j` says of a map.
type bpftoolMap struct {
	ID         uint32 `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	KeyBytes   uint32 `json:"bytes_key"`
	ValueBytes uint32 `json:"bytes_value"`
	MaxEntries uint32 `json:"max_entries"`
	Memlock    uint64 `json:"bytes_memlock"`
}

// bpftoolTypes are bpftool's names of the map types cilium/ebpf spells
// as in the manifest.
var bpftoolTypes = map[string]string{
	"Hash": "hash", "Array": "array", "PerCPUHash": "percpu_hash", "PerCPUArray": "percpu_array",
	"RingBuf": "ringbuf", "LRUHash": "lru_hash", "LRUCPUHash": "lru_percpu_hash",
}

// possibleCPUs returns the highest possible CPU + 1, read from sysfs
// (per-CPU maps hold that many values).
func possibleCPUs(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	last := s[strings.LastIndexAny(s, ",-")+1:]
	n, err := strconv.Atoi(last)
	if err != nil {
		t.Fatalf("possible cpus %q: %v", s, err)
	}
	return n + 1
}

// Every probe's maps as the manifest lists them (Running.Maps) match, map by map,
// what bpftool reads from the kernel (type, key and value size, max
// entries, memlock); value_bytes is max_entries × the value size rounded
// up to 8 × possible CPUs for per-CPU maps; the flow table has the size
// asked for.
func TestProbeMapsMatchBpftool(t *testing.T) {
	requireBPF(t)
	if _, err := exec.LookPath("bpftool"); err != nil {
		kerneltest.Skip(t, "bpftool not installed")
	}
	ps := Start(Options{Scope: Scope{FlowEntries: 1000}}, nil)
	defer ps.Close()
	want := 0
	byKey := map[string]trace.BPFMap{}
	for _, m := range ps.Maps {
		byKey[m.Probe+"/"+m.Name] = m
	}
	possible := possibleCPUs(t)
	for _, l := range ps.set.Loaded {
		for name, em := range l.Maps {
			want++
			m, ok := byKey[l.Probe+"/"+name]
			if !ok {
				t.Errorf("%s map %s not in the manifest's maps", l.Probe, name)
				continue
			}
			info, err := em.Info()
			if err != nil {
				t.Fatal(err)
			}
			id, _ := info.ID()
			checkMap(t, m, bpftoolShow(t, uint32(id)), possible)
		}
	}
	if len(ps.Maps) != want || want == 0 {
		t.Errorf("manifest lists %d maps, the loaded probes have %d", len(ps.Maps), want)
	}
	if f := byKey["netdev/np_nd_flows"]; f.MaxEntries != 1000 || f.Type != "Hash" || f.PerCPU {
		t.Errorf("flow table %+v: want a shared Hash of 1000 entries", f)
	}
}

func bpftoolShow(t *testing.T, id uint32) bpftoolMap {
	t.Helper()
	out, err := exec.Command("bpftool", "map", "show", "id", strconv.Itoa(int(id)), "-j").Output()
	if err != nil {
		t.Fatalf("bpftool map show id %d: %v", id, err)
	}
	var bm bpftoolMap
	if err := json.Unmarshal(out, &bm); err != nil {
		t.Fatalf("bpftool: %v\n%s", err, out)
	}
	return bm
}

// checkMap compares one manifest entry with bpftool's view of the map.
func checkMap(t *testing.T, m trace.BPFMap, bm bpftoolMap, possible int) {
	t.Helper()
	if bpftoolTypes[m.Type] != bm.Type || m.KeySizeBytes != bm.KeyBytes || m.ValueSizeBytes != bm.ValueBytes || m.MaxEntries != bm.MaxEntries {
		t.Errorf("%s/%s: manifest %s key %d value %d entries %d; bpftool %s key %d value %d entries %d",
			m.Probe, m.Name, m.Type, m.KeySizeBytes, m.ValueSizeBytes, m.MaxEntries, bm.Type, bm.KeyBytes, bm.ValueBytes, bm.MaxEntries)
	}
	// 6.1 reports no memlock for ring buffers (0; bpftool shows 0 too).
	switch {
	case m.MemlockBytes == nil && (m.Type != "RingBuf" || bm.Memlock != 0):
		t.Errorf("%s/%s: no memlock, bpftool %d", m.Probe, m.Name, bm.Memlock)
	case m.MemlockBytes != nil && *m.MemlockBytes != bm.Memlock:
		t.Errorf("%s/%s: memlock %d, bpftool %d", m.Probe, m.Name, *m.MemlockBytes, bm.Memlock)
	}
	perCPU := strings.HasPrefix(bm.Type, "percpu_") || bm.Type == "lru_percpu_hash"
	value := uint64(bm.MaxEntries) * uint64((bm.ValueBytes+7)/8*8)
	if perCPU {
		value *= uint64(possible)
	}
	if bm.Type == "ringbuf" {
		value = uint64(bm.MaxEntries)
	}
	if m.PerCPU != perCPU || m.PossibleCPUs != possible || m.ValueBytes != value {
		t.Errorf("%s/%s: per-CPU %v, possible CPUs %d, value_bytes %d; want %v, %d, %d",
			m.Probe, m.Name, m.PerCPU, m.PossibleCPUs, m.ValueBytes, perCPU, possible, value)
	}
	t.Logf("%s/%s: %s, %d entries × %d B value, value_bytes %d, memlock %d (%.0f B per entry)",
		m.Probe, m.Name, m.Type, m.MaxEntries, m.ValueSizeBytes, m.ValueBytes, bm.Memlock, float64(bm.Memlock)/float64(max(bm.MaxEntries, 1)))
}
