package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// phaseOf marks intervals 0-1 warm-up, 8-9 cool-down, the rest measured.
func phaseOf(i int) string {
	switch {
	case i < 2:
		return trace.PhaseWarmup
	case i >= 8:
		return trace.PhaseCooldown
	}
	return trace.PhaseMeasure
}

// Warm-up and cool-down intervals (traffic.phase) are left out of every
// figure: peak, steady state and whole run cover the measured window, in
// every counter, and the CPU figures skip the warm-up's hot core.
func TestPhasesExcluded(t *testing.T) {
	rate := func(i int) float64 {
		switch phaseOf(i) {
		case trace.PhaseWarmup:
			return 20e9
		case trace.PhaseCooldown:
			return 1e9
		}
		return 5e9
	}
	s := analysistest.Scenario{RateBps: rate, Softirq: func(i, cpu int) float64 {
		if cpu == 1 && i < 2 {
			return 0.99
		}
		return 0.2
	}}
	ifaces, cpus, flows, traffic := s.Tables()
	m := s.Manifest()
	for i := range traffic {
		idx := int(traffic[i].Time.Sub(m.Start)/time.Second) - 1
		p := phaseOf(idx)
		traffic[i].Phase = &p
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Phases == nil || r.Phases.WarmupIntervals != 2 || r.Phases.CooldownIntervals != 2 {
		t.Fatalf("phases %+v, want 2 warm-up and 2 cool-down intervals", r.Phases)
	}
	if want := m.Start.Add(2 * time.Second); !r.RunStart.Equal(want) || !r.RunEnd.Equal(m.Start.Add(8*time.Second)) {
		t.Errorf("run %v to %v, want the measured window %v to +6s", r.RunStart, r.RunEnd, want)
	}
	for _, d := range []*Direction{&r.Rx, &r.Tx} {
		for _, c := range []string{CounterApp, CounterNetlink} {
			w := d.Rate(c).W
			if w.Intervals != 6 || !near(w.PeakBps, 5e9, 0.02) || !near(w.WholeRunBps, 5e9, 0.02) || !near(w.SteadyBps, 5e9, 0.02) {
				t.Errorf("%s %s: %d intervals, peak %.3g, steady %.3g, whole run %.3g; want 6 and 5e9 each",
					d.Name, c, w.Intervals, w.PeakBps, w.SteadyBps, w.WholeRunBps)
			}
		}
	}
	for _, c := range r.CPUs {
		if c.MaxShare > 0.5 {
			t.Errorf("CPU %d max NET_RX share %.2f: the warm-up's hot core leaked into the figures", c.CPU, c.MaxShare)
		}
	}
	if !hasNote(r, "warm-up (2 interval(s)) and cool-down (2 interval(s)) kept in the trace") {
		t.Errorf("notes %q", r.Notes)
	}

	// The same rows without phases: the warm-up's 20 Gbit/s is the peak.
	for i := range traffic {
		traffic[i].Phase = nil
	}
	r, err = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Phases != nil || !near(r.Rx.Rate(CounterApp).W.PeakBps, 20e9, 0.02) {
		t.Errorf("without phases: %+v, peak %.3g; want no phases and peak 20e9", r.Phases, r.Rx.Rate(CounterApp).W.PeakBps)
	}
}

// A run that ended during its warm-up has no figures, and says why.
func TestPhasesOnlyWarmup(t *testing.T) {
	s := analysistest.Scenario{Intervals: 3}
	ifaces, cpus, flows, traffic := s.Tables()
	w := trace.PhaseWarmup
	for i := range traffic {
		traffic[i].Phase = &w
	}
	r, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Primary != nil || !hasNote(r, "ended during its warm-up (3 interval(s))") {
		t.Errorf("primary %v, notes %q", r.Primary, r.Notes)
	}
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// A two-machine run records only this host's interface (role sender): the
// rx interface figures are n/a rather than this interface's ACK traffic,
// while the rx application rate (the peer's rows) stays. Payload above
// the wire estimate (a bidir run's two directions against one
// interface) gives no header gap, with a note, never a negative one.
func TestPeerRunInterfaces(t *testing.T) {
	s := analysistest.Scenario{}
	ifaces, cpus, flows, traffic := s.Tables()
	m := s.Manifest()
	m.Interfaces = m.Interfaces[:1] // veth-a, the sender
	for i := range traffic {
		if traffic[i].Role == trace.RoleSender {
			traffic[i].AppBytes *= 2 // as if both directions' senders
		}
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rt := r.Rx.Rate(CounterNetlink); rt.W != nil || r.Rx.Iface != "" || r.Rx.Gap != nil {
		t.Errorf("rx interface %q rate %+v gap %+v, want none", r.Rx.Iface, rt.W, r.Rx.Gap)
	}
	if rt := r.Rx.Rate(CounterApp); rt.W == nil || r.Primary != rt {
		t.Errorf("rx application %+v is not the primary rate", rt)
	}
	if r.Tx.Iface != "veth-a" || r.Tx.Gap != nil {
		t.Errorf("tx interface %q gap %+v, want veth-a without a gap", r.Tx.Iface, r.Tx.Gap)
	}
	if !hasNote(r, "no interface has role receiver in the manifest") || !hasNote(r, "tx application vs wire: n/a") {
		t.Errorf("notes %q", r.Notes)
	}
}
