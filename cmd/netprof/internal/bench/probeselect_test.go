package bench

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/netprof/netprof/cmd/netprof/internal/probeset"
	"github.com/netprof/netprof/trace"
)

// With --probes tcp only the tcp programs attach: every other program is
// in the manifest with the reason, the trace has RTT samples but no BPF
// interface bytes, and netlink's figures are still there.
func TestBenchProbeSelection(t *testing.T) {
	requireBench(t, true)
	cfg := DefaultConfig()
	cfg.Duration = time.Second
	cfg.Interval = 250 * time.Millisecond
	cfg.Streams = 2
	cfg.Probes = []string{"tcp"}
	cfg.Out = filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), cfg, "test", nil); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	all := 0
	var tcpProgs []string
	for _, g := range probeset.Groups {
		all += len(g.Programs)
		if g.Name == "tcp" {
			tcpProgs = g.Programs
		}
	}
	if len(run.Manifest.Probes) != all {
		t.Errorf("manifest lists %d programs, want %d: %+v", len(run.Manifest.Probes), all, run.Manifest.Probes)
	}
	for _, p := range run.Manifest.Probes {
		tcp := slices.Contains(tcpProgs, p.Name)
		if p.Attached != tcp || (!tcp && p.Reason != probeset.NotSelected) {
			t.Errorf("program %s: attached %v reason %q", p.Name, p.Attached, p.Reason)
		}
	}
	ifs, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	var netlinkRx uint64
	for _, r := range ifs {
		if r.BpfRxBytes != nil {
			t.Fatalf("bpf_rx_bytes set on %s without the netdev group", r.Ifname)
		}
		netlinkRx += r.RxBytes
	}
	flows, err := run.Flows()
	if err != nil {
		t.Fatal(err)
	}
	var samples uint64
	for _, f := range flows {
		samples += f.RTTSamples
	}
	if samples == 0 || netlinkRx == 0 {
		t.Errorf("rtt samples %d, netlink rx bytes %d: want both > 0", samples, netlinkRx)
	}
}
