package analysis

import (
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
)

// The cpus rows' softnet_* columns add up per CPU over the CPU window;
// the busiest CPU's are in the text report and in the softirq-bound
// evidence, and each CPU's in the JSON. Rows without them give nil.
func TestSoftnetPerCPU(t *testing.T) {
	s := analysistest.Scenario{Intervals: 6, RateBps: flat(4e9)}
	m := s.Manifest()
	var tables Tables
	for i := range s.Intervals {
		iv := s.IntervalRows(i)
		for j := range iv.CPUs {
			c := &iv.CPUs[j]
			v := []uint64{1000 * uint64(c.CPU+1), 2, 3, 4, 5}
			c.SoftnetProcessed, c.SoftnetDropped, c.SoftnetTimeSqueeze = &v[0], &v[1], &v[2]
			c.SoftnetReceivedRPS, c.SoftnetFlowLimitDrops = &v[3], &v[4]
		}
		tables.Ifaces, tables.CPUs = append(tables.Ifaces, iv.Ifaces...), append(tables.CPUs, iv.CPUs...)
		tables.Flows, tables.Traffic = append(tables.Flows, iv.Flows...), append(tables.Traffic, iv.Traffic...)
	}
	r, err := BuildTables(m, tables, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.CPUs {
		n := uint64(c.Intervals)
		want := SoftnetStat{Processed: 1000 * uint64(c.CPU+1) * n, Dropped: 2 * n, TimeSqueeze: 3 * n, ReceivedRPS: 4 * n,
			FlowLimitDrops: 5 * n, Intervals: c.Intervals}
		if c.Softnet == nil || *c.Softnet != want {
			t.Errorf("CPU %d softnet %+v, want %+v", c.CPU, c.Softnet, want)
		}
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "CPU 0 softnet (/proc/net/softnet_stat") {
		t.Errorf("text lacks the busiest CPU's softnet line:\n%s", text.String())
	}
	for _, v := range r.Verdicts {
		if v.Rule == RuleSoftirq && !strings.Contains(strings.Join(v.Evidence, "\n"), "time squeezes") {
			t.Errorf("softirq-bound evidence lacks softnet: %q", v.Evidence)
		}
	}
	js := r.JSON()
	if len(js.CPUs) == 0 || js.CPUs[0].SoftnetTimeSqueeze == nil || *js.CPUs[0].SoftnetTimeSqueeze != 3*uint64(r.CPUs[0].Intervals) {
		t.Errorf("JSON cpus %+v", js.CPUs)
	}
	// Without the columns: nil, null.
	for i := range tables.CPUs {
		tables.CPUs[i].SoftnetProcessed = nil
	}
	if r, err = BuildTables(m, tables, Options{}); err != nil {
		t.Fatal(err)
	}
	if r.CPUs[0].Softnet != nil || r.JSON().CPUs[0].SoftnetProcessed != nil {
		t.Errorf("softnet without columns: %+v", r.CPUs[0].Softnet)
	}
}
