package bench

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/analysis/analysistest"
)

// sweepRow analyses a synthetic run as a sweep row.
func sweepRow(t *testing.T, dir string, s analysistest.Scenario) SweepRow {
	t.Helper()
	ifaces, cpus, flows, tr := s.Tables()
	r, err := analysis.BuildTables(s.Manifest(), analysis.Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: tr}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Dir = dir
	cfg := DefaultConfig()
	cfg.Streams = 4
	return SweepRow{Config: cfg, Dir: dir, Status: "ok", Report: r}
}

// The sweep table's busiest CPU column is labelled by what it counts:
// NET_RX time (softirq probe), or /proc/stat's softirq of every vector
// when the probe did not run (bench's default probes), never the one for
// the other; runs of both kinds name their source per cell.
func TestSweepTableHotSource(t *testing.T) {
	netRx := func(dir string) SweepRow { // NET_RX 30% on CPU 0
		return sweepRow(t, dir, analysistest.Scenario{})
	}
	procStat := func(dir string) SweepRow { // every vector: 62% on CPU 1
		return sweepRow(t, dir, analysistest.Scenario{NoSoftirqProbe: true, ProcStat: func(_, c int) (float64, float64) {
			if c == 1 {
				return 0.62, 0.9
			}
			return 0.05, 0.3
		}})
	}
	failed := SweepRow{Config: DefaultConfig(), Dir: "/s/streams8-block128KiB", Status: "failed", Err: errors.New("boom")}
	for _, tc := range []struct {
		name      string
		rows      []SweepRow
		want, not []string
		sources   []string
	}{
		{"bpf", []SweepRow{netRx("/s/a"), netRx("/s/b")},
			[]string{"busiest CPU NET_RX %", "30.0 (CPU 0)", "busiest CPU %: NET_RX = " + SweepNetRx},
			[]string{"all-vector", "/proc/stat", "measured it differently"}, []string{SweepNetRx, SweepNetRx}},
		{"default probes", []SweepRow{procStat("/s/a"), procStat("/s/b"), failed},
			[]string{"busiest CPU all-vector softirq %", "62.0 (CPU 1)", "busiest CPU %: all-vector softirq = " + SweepAllSoftirq, "n/a (no report)"},
			[]string{"NET_RX %", "NET_RX =", "30.0", "measured it differently"}, []string{SweepAllSoftirq, SweepAllSoftirq, ""}},
		{"mixed", []SweepRow{netRx("/s/a"), procStat("/s/b")},
			[]string{"busiest CPU softirq %", "30.0 (CPU 0, NET_RX)", "62.0 (CPU 1, all-vector softirq)",
				"NET_RX = " + SweepNetRx, "all-vector softirq = " + SweepAllSoftirq, "measured it differently"},
			[]string{"busiest CPU NET_RX %"}, []string{SweepNetRx, SweepAllSoftirq}},
	} {
		tab := NewSweepTable(tc.rows)
		var b strings.Builder
		if err := tab.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: table lacks %q:\n%s", tc.name, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("%s: table has %q:\n%s", tc.name, n, out)
			}
		}
		js, err := json.Marshal(tab)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Runs []struct {
				Pct    *float64 `json:"busiest_cpu_pct"`
				Source string   `json:"busiest_cpu_source"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(js, &back); err != nil || len(back.Runs) != len(tc.sources) {
			t.Fatalf("%s: json %s: %v", tc.name, js, err)
		}
		for i, r := range back.Runs {
			if r.Source != tc.sources[i] || (r.Source == "") != (r.Pct == nil) {
				t.Errorf("%s: run %d: source %q pct %v, want source %q", tc.name, i, r.Source, r.Pct, tc.sources[i])
			}
		}
	}
}
