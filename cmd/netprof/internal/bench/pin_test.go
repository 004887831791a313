package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// --cpus 1 pins both ends' stream loops to CPU 1: on the veth bed the
// receive softirq a send raises runs on the sending CPU, so every receiving
// socket's SO_INCOMING_CPU (the trace's incoming_cpu, the report's
// steering) is 1; the manifest records the list.
func TestBenchPinnedCPUs(t *testing.T) {
	requireBench(t, true)
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil || !allowed.IsSet(1) {
		t.Skip("needs CPU 1")
	}
	cfg := DefaultConfig()
	cfg.Duration, cfg.Interval, cfg.Streams, cfg.CPUs = time.Second, 250*time.Millisecond, 3, []int{1}
	cfg.Out = filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Steering) != cfg.Streams {
		t.Fatalf("steering %+v: want %d streams", res.Report.Steering, cfg.Streams)
	}
	for _, s := range res.Report.Steering {
		if s.CPU != 1 {
			t.Errorf("stream %d received on CPU %d, pinned to 1", s.Stream, s.CPU)
		}
	}
	if got, ok := res.Report.Manifest.Config["cpus"].([]any); !ok || len(got) != 1 || got[0] != 1.0 {
		t.Errorf("manifest config cpus %v", res.Report.Manifest.Config["cpus"])
	}
	bad := DefaultConfig()
	bad.CPUs, bad.Peer = []int{1}, "198.18.0.2"
	if err := bad.Validate(); err == nil {
		t.Error("--cpus with --peer accepted")
	}
}
