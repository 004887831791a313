package bench

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

func TestParseProbes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"all", nil, ""},
		{"tcp", []string{"tcp"}, ""},
		{" netdev , tcp,netdev", []string{"netdev", "tcp"}, ""},
		{"tcp,bogus", nil, `unknown probe group "bogus": want all, or some of netdev,napi,softirq,tcp,sockstate`},
	} {
		got, err := ParseProbes(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseProbes(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseProbes(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// Every program of every probe belongs to exactly one group.
	seen := map[string]bool{}
	for _, g := range ProbeGroups {
		for _, p := range g.Programs {
			if seen[p] {
				t.Errorf("program %s in two groups", p)
			}
			seen[p] = true
		}
	}
	if len(seen) != 8 {
		t.Errorf("%d programs in the groups, want the 8 attached programs", len(seen))
	}
}

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
		if p.Attached != tcp || (!tcp && p.Reason != notSelected) {
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
