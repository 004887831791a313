package bench

import (
	"context"
	"path/filepath"
	"strings"
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
	if len(run.Manifest.Probes) != 8 {
		t.Errorf("manifest lists %d programs, want 8: %+v", len(run.Manifest.Probes), run.Manifest.Probes)
	}
	for _, p := range run.Manifest.Probes {
		tcp := strings.HasPrefix(p.Name, "np_tcp_")
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
