package htmlreport

import (
	"slices"
	"testing"
	"time"

	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/trace"
)

// Labels get more digits only where 0.1 s would print two alike (a final
// interval cut short 40 ms after the last full one).
func TestAxisLabels(t *testing.T) {
	start := time.Unix(100, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, start.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	if got := axisLabels(start, at(1000, 2000, 3000)); !slices.Equal(got, []string{"1.0", "2.0", "3.0"}) {
		t.Errorf("labels %v", got)
	}
	if got := axisLabels(start, at(1000, 2000, 3000, 3040)); !slices.Equal(got, []string{"1.00", "2.00", "3.00", "3.04"}) {
		t.Errorf("labels %v", got)
	}
}

// A final interval shorter than half the nominal one is not plotted; a
// full final one is.
func TestPlottedDropsFinalSliver(t *testing.T) {
	r := &analysis.Report{Manifest: trace.Manifest{IntervalNs: 1e9}}
	pts := []analysis.Point{{IntervalNs: 1e9}, {IntervalNs: 1e9}, {IntervalNs: 4e7}}
	if got := plotted(r, pts); len(got) != 2 {
		t.Errorf("%d points plotted, want 2", len(got))
	}
	if got := plotted(r, pts[:2]); len(got) != 2 {
		t.Errorf("%d points plotted, want 2", len(got))
	}
}

// Marks within 2% share one line and one label; others keep their own.
func TestMarkLinesMerge(t *testing.T) {
	got := markLines([]opts.MarkLineNameYAxisItem{{Name: "peak", YAxis: 10.0}, {Name: "steady state", YAxis: 9.9},
		{Name: "whole run", YAxis: 9.85}})
	if len(got) != 1 || got[0].Name != "peak ≈ steady state ≈ whole run" || got[0].YAxis != 10.0 {
		t.Errorf("one level: %+v", got)
	}
	got = markLines([]opts.MarkLineNameYAxisItem{{Name: "peak", YAxis: 12.0}, {Name: "steady state", YAxis: 10.0},
		{Name: "whole run", YAxis: 9.95}})
	if len(got) != 2 || got[0].Name != "peak" || got[1].Name != "steady state ≈ whole run" {
		t.Errorf("two levels: %+v", got)
	}
}
