package analysis

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// messInterval roughens the bench rows of interval i: nulls, rows without
// RTT samples, a second row per socket (the tcp probe's, ifindex 0), IPv6
// and a second namespace, implausible and zero-length intervals.
func messInterval(iv *trace.Interval, i int) {
	for f := range iv.Flows {
		x := &iv.Flows[f]
		switch (i + f) % 11 {
		case 1:
			x.RTTP50Us, x.SndCwnd, x.MinRttUs = nil, nil, nil
		case 2:
			x.RTTSamples, x.MSS = 0, nil
		case 3:
			x.SrttUs = nil
		case 4:
			x.Netns, x.Family, x.SrcAddr, x.DstAddr = 7, 6, "2001:db8::1", fmt.Sprintf("2001:db8::%x", 2+f%5)
		case 5:
			x.RTTP99Us, x.RTTMinUs, x.RTTMaxUs = nil, nil, nil
		}
	}
	tcp := iv.Flows[0]
	tcp.Ifindex, tcp.Ifname, tcp.TxBytes, tcp.RxBytes = 0, "", 0, 0
	iv.Flows = append(iv.Flows, tcp)
	switch i {
	case 5:
		iv.Flows[3].TxBytes = math.MaxUint64 - 5 // a counter that went backwards
	case 9:
		iv.Flows[4].IntervalNs = 0
	case 13:
		iv.Flows[2].RxBytes = 1 << 60
	}
}

// writeMessyTrace records intervals × flows rows (plus messInterval's) in
// row groups of 7 intervals; with phases, the first 3 intervals are
// warm-up and the last 2 cool-down.
func writeMessyTrace(t *testing.T, intervals, flows int, phases bool) *trace.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := trace.Create(dir, trace.Manifest{Start: start, End: start.Add(time.Duration(intervals) * time.Second),
		IntervalNs: 1e9, CPUCount: 4, Status: trace.StatusOK,
		Interfaces: []trace.Interface{{Name: "eth0", Role: trace.RoleReceiver}, {Name: "eth1", Role: trace.RoleSender}}},
		trace.WithFlushEvery(7))
	if err != nil {
		t.Fatal(err)
	}
	src, dst := make([]string, flows), make([]string, 19)
	for f := range src {
		src[f] = fmt.Sprintf("198.18.%d.%d", f/250, f%250+1)
	}
	for p := range dst {
		dst[p] = fmt.Sprintf("198.19.0.%d", p+1)
	}
	for i := range intervals {
		iv := trace.Interval{Flows: make([]trace.FlowRow, flows)}
		fillBenchInterval(&iv, start.Add(time.Duration(i+1)*time.Second), i, src, dst)
		messInterval(&iv, i)
		if phases {
			setPhase(&iv, i, intervals)
		}
		if err := w.WriteInterval(iv); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(start.Add(time.Duration(intervals)*time.Second), trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// setPhase marks the traffic rows of interval i of n.
func setPhase(iv *trace.Interval, i, n int) {
	p := trace.PhaseMeasure
	switch {
	case i < 3:
		p = trace.PhaseWarmup
	case i >= n-2:
		p = trace.PhaseCooldown
	}
	for k := range iv.Traffic {
		iv.Traffic[k].Phase = &p
	}
}

// checkSameReport compares two reports field by field (NaN equal to NaN)
// and as text and JSON.
func checkSameReport(t *testing.T, got, want *Report) {
	t.Helper()
	if !reflect.DeepEqual(nanFree(got), nanFree(want)) {
		for name, pair := range map[string][2]any{
			"Flows": {got.Flows, want.Flows}, "Peers": {got.Peers, want.Peers}, "RTT": {got.RTT, want.RTT},
			"RTTHist": {got.RTTHist, want.RTTHist}, "RetxTimeline": {got.RetxTimeline, want.RetxTimeline},
			"Retx": {got.Retx, want.Retx}, "Notes": {got.Notes, want.Notes}, "Tx": {got.Tx, want.Tx},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("%s differ:\n got %+v\nwant %+v", name, pair[0], pair[1])
			}
		}
		t.Fatal("reports differ")
	}
	var a, b bytes.Buffer
	if err := got.WriteText(&a); err != nil {
		t.Fatal(err)
	}
	if err := want.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || jsonOf(t, got) != jsonOf(t, want) {
		t.Errorf("text or JSON differ:\n%s\n%s", a.String(), b.String())
	}
}

// nanFree returns a copy of r's top level with the NaN per-GB figures
// (unknown) set to -1, so that DeepEqual can compare it.
func nanFree(r *Report) Report {
	c := *r
	for _, v := range []*float64{&c.Retx.FirstPerGB, &c.Retx.SecondPerGB} {
		if math.IsNaN(*v) {
			*v = -1
		}
	}
	return c
}

// The columnar path (Analyze) and the row path (trace.Scan into row
// structs) give the same Report, on a trace with nulls, implausible rows
// and several row groups (with and without warm-up and cool-down phases),
// and on a scenario's trace.
func TestColumnarFlowsMatchRowPath(t *testing.T) {
	runs := map[string]*trace.Run{"messy": writeMessyTrace(t, 30, 400, false), "phases": writeMessyTrace(t, 30, 400, true)}
	dir := filepath.Join(t.TempDir(), "scenario")
	s := analysistest.Scenario{Intervals: 12, RatedMbps: 10_000, RetxFraction: 0.001,
		RTTP50Us: func(i int) uint32 { return 80 + uint32(i)*700 }}
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs["scenario"] = run
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			got, err := Analyze(run, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := analyzeSources(run, runSources(run), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Flows) == 0 || got.RTT == nil || (got.Phases != nil) != (name == "phases") {
				t.Fatalf("%d flows, RTT %v, phases %+v: the trace should have flows and RTT, and phases only in %q",
					len(got.Flows), got.RTT, got.Phases, "phases")
			}
			checkSameReport(t, got, want)
		})
	}
}

// A wdist gives the weighted percentiles of a plain map of weights, with
// few values (inline) and many (spilled), whatever the order of adds.
func TestWdistMatchesMap(t *testing.T) {
	for _, distinct := range []int{1, 5, wdistInline, wdistInline + 1, 200} {
		var d, merged wdist
		m := map[uint32]uint64{}
		for i := range 3000 {
			v, w := uint32((i*7919)%distinct)*37+5, uint64(i%13+1)
			d.add(v, w)
			m[v] += w
		}
		merged.add(5, 1)
		merged.merge(&d)
		m[5]++
		vals, ws := merged.view()
		if len(vals) != len(m) || !slices.IsSorted(vals) {
			t.Fatalf("%d distinct: %d values, sorted %v; want %d", distinct, len(vals), slices.IsSorted(vals), len(m))
		}
		var total uint64
		for i, v := range vals {
			if ws[i] != m[v] {
				t.Errorf("%d distinct: weight of %d = %d, want %d", distinct, v, ws[i], m[v])
			}
			total += ws[i]
		}
		for _, q := range []float64{0, 0.5, 0.99, 1} {
			if got, want := merged.percentile(q), mapPercentile(m, q*float64(total)); got != want {
				t.Errorf("%d distinct: percentile(%v) = %d, want %d", distinct, q, got, want)
			}
		}
	}
}

// mapPercentile is the smallest value of m whose cumulative weight reaches
// target.
func mapPercentile(m map[uint32]uint64, target float64) uint32 {
	vals := slices.Sorted(maps.Keys(m))
	var cum uint64
	for _, v := range vals {
		if cum += m[v]; float64(cum) >= target {
			return v
		}
	}
	return 0
}
