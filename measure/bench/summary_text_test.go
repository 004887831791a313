package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
)

// The CPU section's per-GB label says what the figure divides by: on the
// local test bed one host is both ends and the payload is counted once
// (moved_app_bytes is the received payload); with a peer each end's sent
// plus received. When netprof's own CPU (getrusage) exceeds the host's
// busy CPU (tick-sampled /proc/stat), a note says so.
func TestSummaryCPUText(t *testing.T) {
	u := cpustat.Usage{IntervalNs: int64(time.Second), CPUs: 2, UserPct: 5, SystemPct: 10, IdlePct: 85,
		BusiestSoftIRQCPU: 0, ProcessUserS: 0.2, ProcessSystemS: 0.3} // host busy 0.30 s < process 0.50 s
	us := []phasedUsage{{phase: trace.PhaseMeasure, cpu: u}, {phase: trace.PhaseMeasure, cpu: u}}
	f, ok := cpuFigures(us, 2e9)
	if !ok || f.Note == "" || !strings.Contains(f.Note, "tick-sampled") {
		t.Fatalf("process 1.00 s > host 0.60 s: note %q", f.Note)
	}
	if *f.HostCPUSecondsPerGB != 0.3 || *f.ProcessCPUSecondsPerGB != 0.5 {
		t.Errorf("per GB host %g process %g, want 0.3 and 0.5", *f.HostCPUSecondsPerGB, *f.ProcessCPUSecondsPerGB)
	}
	f.End, f.Role, f.MovedBasis = "local test bed (both ends)", "both", MovedOnce
	s := &Summary{CPU: []CPUFigures{f}}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"per 10^9 payload bytes transferred, each byte once (this host is both ends",
		"note (local test bed (both ends)): netprof's own CPU (1.00 s, getrusage, exact) exceeds the host's busy CPU (0.60 s, /proc/stat)"} {
		if !strings.Contains(out, want) {
			t.Errorf("cpu section lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "that end sent plus received") {
		t.Errorf("local test bed labelled as sent plus received:\n%s", out)
	}
	// A summary recorded before the basis was (read back by analyze).
	f.MovedBasis = ""
	if got := movedBasis(f); got != MovedOnce {
		t.Errorf("old local test bed summary: basis %q", got)
	}
	// Two machines: sent plus received per end; no note when host >= process.
	u.ProcessUserS, u.ProcessSystemS = 0.1, 0.1
	g, _ := cpuFigures([]phasedUsage{{phase: trace.PhaseMeasure, cpu: u}}, 1e9)
	g.End, g.Role = "local", "sender"
	b.Reset()
	_ = (&Summary{CPU: []CPUFigures{g}}).WriteText(&b)
	if !strings.Contains(b.String(), "per 10^9 payload bytes sent plus received by this end") || strings.Contains(b.String(), "note (") {
		t.Errorf("peer run cpu section:\n%s", b.String())
	}
}

// The socket options asked print with units, also when the summary is
// read back from manifest.json (analyze), where numbers are float64: not
// "window_bytes=1.048576e+06".
func TestSummarySockOptsText(t *testing.T) {
	nd := false
	s := &Summary{SockOpts: &SockOptsReport{Requested: sockOptsConfig(traffic.SockOpts{Window: 1 << 20, Congestion: "cubic",
		MSS: 1400, NoDelay: &nd, PacingRate: 1e9})}}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	want := "socket options asked: window 1.00 MiB, congestion cubic, mss 1400 B, Nagle on (--nodelay=false), pacing 1.00 Gbit/s per stream\n"
	for name, sum := range map[string]*Summary{"in memory": s, "from JSON": &back} {
		var b strings.Builder
		if err := sum.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) || strings.Contains(b.String(), "e+0") {
			t.Errorf("%s: socket options:\n%s", name, b.String())
		}
	}
}
