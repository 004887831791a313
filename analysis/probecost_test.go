package analysis

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// probeCostTables is a 6-interval run on 2 CPUs (CPU 0 busiest: 30% of
// each interval in NET_RX) whose two programs ran 3 ms and 2 ms per 1 s
// interval (1000 and 4000 runs), beside a map row (not a program).
func probeCostTables(runNs uint64) (trace.Manifest, Tables) {
	s := analysistest.Scenario{Intervals: 6, RateBps: flat(4e9)}
	m := s.Manifest()
	var t Tables
	for i := range s.Intervals {
		iv := s.IntervalRows(i)
		end, ns := iv.Ifaces[0].Time, iv.Ifaces[0].IntervalNs
		t.Ifaces, t.CPUs = append(t.Ifaces, iv.Ifaces...), append(t.CPUs, iv.CPUs...)
		t.Flows, t.Traffic = append(t.Flows, iv.Flows...), append(t.Traffic, iv.Traffic...)
		t.Probes = append(t.Probes,
			trace.ProbeRow{Time: end, IntervalNs: ns, Program: "np_nd_rx", Hook: "net:netif_receive_skb", RunCount: 1000, RunTimeNs: 3 * runNs / 5},
			trace.ProbeRow{Time: end, IntervalNs: ns, Program: "np_si_entry", Hook: "irq:softirq_entry", RunCount: 4000, RunTimeNs: 2 * runNs / 5},
			trace.ProbeRow{Time: end, IntervalNs: ns, Program: "np_nd_flows", Hook: "map:netdev", MapUpdateFailures: 7, MapEntries: ptrU64(9)})
	}
	return m, t
}

// The probes' run time over the CPU window, as a share of the host's CPU
// time (2 CPUs) and of the busiest CPU's NET_RX time: 5 ms per 1 s
// interval is 0.25% of 2 CPUs and 5/300 of CPU 0's 300 ms of NET_RX,
// whatever the window's length; 1 µs per run.
func TestProbeCost(t *testing.T) {
	m, tables := probeCostTables(5e6)
	r, err := BuildTables(m, tables, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := r.ProbeCost
	if c == nil {
		t.Fatalf("no probe cost: %q", r.reasons[figProbeCost])
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if c.CPUs != 2 || !near(c.HostShare, 0.0025) || c.BusiestCPU != 0 || c.BusiestNetRxShare == nil ||
		!near(*c.BusiestNetRxShare, 5.0/300) || !near(c.NsPerEvent(), 1000) || c.Window != r.CPUWindow {
		t.Fatalf("probe cost %+v (busiest share %v), want 2 CPUs, 0.25%% of the host, 1.67%% of CPU 0's NET_RX, 1000 ns per run",
			c, c.BusiestNetRxShare)
	}
	if n := c.WindowNs / 1e9; c.RunNs != n*5e6 || c.Events != n*5000 || int(n) != r.CPUIntervals {
		t.Errorf("run %d ns, %d runs over %d s; want 5 ms and 5000 runs per second of the %d-interval window", c.RunNs, c.Events, n, r.CPUIntervals)
	}
	line := r.ProbeCostLine()
	if !strings.Contains(line, "0.25% of the host's CPU time") || !strings.Contains(line, "1.7% of CPU 0's NET_RX softirq time") {
		t.Errorf("line %q", line)
	}
	// The one screen names the window: the steady state, the 4 middle
	// intervals of 6, so 4 x 5000 runs; 5 ms a second, with a space
	// before the unit.
	want := "probe cost   over the steady state: 0.25% of the host's CPU time (BPF run time 5.00 ms per second over 2 " +
		"CPUs: 20000 runs of 1000 ns; hooks' entry cost, tens of ns a run, not counted); 1.7% of CPU 0's NET_RX softirq time"
	screen := summaryText(t, r)
	if got := summaryLine(screen, "probe cost   "); got != want {
		t.Errorf("probe cost\n got %q\nwant %q", got, want)
	}
	if u := regexp.MustCompile(`\d(ns|µs|ms)\b`).FindString(screen); u != "" {
		t.Errorf("a unit without a space (%q) on the one screen:\n%s", u, screen)
	}
	js, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		ProbeCost *JSONProbeCost `json:"probe_cost"`
	}
	if err := json.Unmarshal(js, &out); err != nil {
		t.Fatal(err)
	}
	if out.ProbeCost == nil || !near(out.ProbeCost.HostPct, 0.25) || out.ProbeCost.RunTimeNs != c.RunNs {
		t.Errorf("JSON probe_cost %+v", out.ProbeCost)
	}
}

// Without run time (BPF stats off) or without program rows the figure is
// n/a with the reason, never 0.
func TestProbeCostNotMeasured(t *testing.T) {
	m, tables := probeCostTables(0)
	for i := range tables.Probes {
		tables.Probes[i].RunCount = 0
	}
	r, err := BuildTables(m, tables, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.ProbeCost != nil || !strings.Contains(r.ProbeCostLine(), "n/a (run_count and run_time_ns are 0: the kernel's BPF run-time statistics were off") {
		t.Errorf("stats off: %+v, %q", r.ProbeCost, r.ProbeCostLine())
	}
	tables.Probes = nil
	if r, err = BuildTables(m, tables, Options{}); err != nil {
		t.Fatal(err)
	}
	if r.ProbeCost != nil || !strings.Contains(r.ProbeCostLine(), "n/a (no program rows in the probes table") {
		t.Errorf("no rows: %+v, %q", r.ProbeCost, r.ProbeCostLine())
	}
}
