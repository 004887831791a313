package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

// A bench run writes the maps into manifest.json: every default probe's,
// the flow table with the size asked for.
func TestBenchManifestMaps(t *testing.T) {
	requireBench(t, true)
	cfg := DefaultConfig()
	cfg.Duration, cfg.Interval, cfg.Streams = time.Second, 250*time.Millisecond, 2
	cfg.FlowEntries = 1000
	cfg.Out = filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), cfg, "test", nil); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	probes := map[string]int{}
	for _, m := range run.Manifest.Maps {
		probes[m.Probe]++
		if m.Name == "np_nd_flows" && m.MaxEntries != 1000 {
			t.Errorf("np_nd_flows max_entries %d, want 1000", m.MaxEntries)
		}
		if (m.MemlockBytes == nil && m.Type != "RingBuf") || m.ValueBytes == 0 || m.PossibleCPUs == 0 {
			t.Errorf("map %+v: want memlock, value_bytes and possible CPUs", m)
		}
	}
	for _, p := range []string{"netdev", "tcp", "softirq", "sockstate"} {
		if probes[p] == 0 {
			t.Errorf("manifest maps %v: none of probe %s", probes, p)
		}
	}
}
