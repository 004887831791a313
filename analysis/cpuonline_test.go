package analysis

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

const neverOnlineNote = "238 possible CPUs were never online during the run: not shown"

// buildScenario builds the report of s, with its manifest changed by edit.
func buildScenario(t *testing.T, s analysistest.Scenario, edit func(*trace.Manifest)) *Report {
	t.Helper()
	m := s.Manifest()
	if edit != nil {
		edit(&m)
	}
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func cpuNumbers(cs []CPUStat) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.CPU)
	}
	return out
}

// A VM with 2 online of 240 possible CPUs: whether the trace has the 238
// all-zero rows per interval (netprof before the online filter) and
// whether its manifest lists the CPUs, the report shows CPUs 0 and 1,
// averages over those two, picks CPU 0 as the hot core and says once that
// 238 CPUs were never online.
func TestNeverOnlineCPUs(t *testing.T) {
	for name, s := range map[string]analysistest.Scenario{
		"old trace: 240 rows, no lists":   {PossibleCPUs: 240, NeverOnlineRows: true, LegacyManifest: true},
		"new trace: 2 rows, lists":        {PossibleCPUs: 240},
		"240 rows and lists":              {PossibleCPUs: 240, NeverOnlineRows: true},
		"old trace with /proc/stat cols":  {PossibleCPUs: 240, NeverOnlineRows: true, LegacyManifest: true, ProcStat: procShares},
		"new trace with /proc/stat cols":  {PossibleCPUs: 240, ProcStat: procShares},
		"240 rows, lists, /proc/stat col": {PossibleCPUs: 240, NeverOnlineRows: true, ProcStat: procShares},
	} {
		t.Run(name, func(t *testing.T) {
			r := buildScenario(t, s, nil)
			if got := cpuNumbers(r.CPUs); !slices.Equal(got, []int{0, 1}) {
				t.Fatalf("CPUs %v, want [0 1]", got)
			}
			// The scenario's shares: 30% on CPU 0, 10% on CPU 1.
			if r.BusiestCPU != 0 || math.Abs(meanShare(r.CPUs)-0.2) > 1e-9 || math.Abs(r.BusiestMedianShare-0.3) > 1e-9 {
				t.Errorf("busiest %d, mean %.4f, busiest median %.4f; want 0, 0.2, 0.3", r.BusiestCPU, meanShare(r.CPUs), r.BusiestMedianShare)
			}
			if r.CPUs[0].BusiestIntervals != r.CPUIntervals || r.CPUs[1].BusiestIntervals != 0 || r.CPUIntervals == 0 {
				t.Errorf("busiest in %d and %d of %d intervals, want all and none", r.CPUs[0].BusiestIntervals, r.CPUs[1].BusiestIntervals, r.CPUIntervals)
			}
			if r.Heat == nil || !slices.Equal(r.Heat.CPUs, []int{0, 1}) {
				t.Errorf("heat map CPUs %v, want [0 1]", r.Heat)
			}
			if s.ProcStat != nil && (r.HostCPU == nil || r.HostCPU.CPUs != 2 || math.Abs(r.HostCPU.Busy-0.5) > 1e-6) {
				t.Errorf("host CPU %+v, want 2 CPUs 50%% busy", r.HostCPU)
			}
			if r.CPUsNeverOnline != 238 || countNotes(r.Notes, neverOnlineNote) != 1 {
				t.Errorf("never online %d, notes %q; want 238 and the note once", r.CPUsNeverOnline, r.Notes)
			}
			checkText(t, r, s.LegacyManifest)
			checkJSON(t, r)
		})
	}
}

// procShares is 20% all-softirq and 40% or 60% busy on CPUs 0 and 1.
func procShares(_, cpu int) (float64, float64) { return 0.2, 0.4 + 0.2*float64(cpu) }

func countNotes(notes []string, prefix string) int {
	n := 0
	for _, s := range notes {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// checkText: the CPU table has rows for CPUs 0 and 1 only, the mean is
// over 2 CPUs, the header counts CPUs, the note is there once.
func checkText(t *testing.T, r *Report, legacy bool) {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	_, table, _ := strings.Cut(out, "per-CPU softirq (cpus table)")
	table, _, _ = strings.Cut(table, "  % = softirq ns")
	rows := regexp.MustCompile(`(?m)^  (\d+) +`).FindAllStringSubmatch(table, -1)
	if len(rows) != 2 || rows[0][1] != "0" || rows[1][1] != "1" {
		t.Errorf("%d text CPU rows, want 2 (CPUs 0 and 1):\n%.2000s", len(rows), table)
	}
	host := "(kernel 6.18, 2 CPUs online of 240 possible)"
	if legacy {
		host = "(kernel 6.18, 2 CPUs)"
	}
	for _, want := range []string{host, "mean over the 2 CPUs: NET_RX softirq 20.0%"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, neverOnlineNote); n != 1 {
		t.Errorf("text has the never-online note %d times, want 1", n)
	}
}

// checkJSON: cpus holds 2 entries, busiest_cpu 0, cpus_never_online 238.
func checkJSON(t *testing.T, r *Report) {
	t.Helper()
	b, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		CPUs []struct {
			CPU int `json:"cpu"`
		} `json:"cpus"`
		BusiestCPU      *int     `json:"busiest_cpu"`
		CPUsNeverOnline *int     `json:"cpus_never_online"`
		Notes           []string `json:"notes"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if len(j.CPUs) != 2 || j.CPUs[0].CPU != 0 || j.CPUs[1].CPU != 1 || j.BusiestCPU == nil || *j.BusiestCPU != 0 ||
		j.CPUsNeverOnline == nil || *j.CPUsNeverOnline != 238 || countNotes(j.Notes, neverOnlineNote) != 1 {
		t.Errorf("JSON cpus %v, busiest %v, never online %v, notes %q", j.CPUs, j.BusiestCPU, j.CPUsNeverOnline, j.Notes)
	}
}

// An online CPU that ran nothing netprof counts (all-zero rows) is shown
// and averaged over when the manifest lists it online (or, in a trace
// without the list, is below cpu_count); not otherwise.
func TestIdleOnlineCPU(t *testing.T) {
	s := analysistest.Scenario{PossibleCPUs: 240, NeverOnlineRows: true, IdleCPUs: []int{1}}
	for name, c := range map[string]struct {
		legacy bool
		count  int
		want   []int
		never  int
	}{
		"listed online":          {false, 2, []int{0, 1}, 238},
		"old trace, cpu_count 2": {true, 2, []int{0, 1}, 238},
		"old trace, cpu_count 1": {true, 1, []int{0}, 239},
	} {
		t.Run(name, func(t *testing.T) {
			s.LegacyManifest = c.legacy
			r := buildScenario(t, s, func(m *trace.Manifest) { m.CPUCount = c.count })
			if got := cpuNumbers(r.CPUs); !slices.Equal(got, c.want) || r.CPUsNeverOnline != c.never {
				t.Errorf("CPUs %v, never online %d; want %v, %d", got, r.CPUsNeverOnline, c.want, c.never)
			}
			if want := 0.3 / float64(len(c.want)); math.Abs(meanShare(r.CPUs)-want) > 1e-9 {
				t.Errorf("mean share %.4f, want %.4f", meanShare(r.CPUs), want)
			}
		})
	}
}

// A CPU that came online after the start (not in cpus_online) is shown
// when its rows show it ran; a never-online CPU numbered below the online
// ones never takes an interval's "busiest" from them, even at 0%.
func TestLateOnlineAndLowNeverOnline(t *testing.T) {
	late := buildScenario(t, analysistest.Scenario{PossibleCPUs: 240}, func(m *trace.Manifest) { m.CPUsOnline = "0" })
	if got := cpuNumbers(late.CPUs); !slices.Equal(got, []int{0, 1}) || late.CPUsNeverOnline != 238 {
		t.Errorf("late CPU 1: CPUs %v, never online %d; want [0 1], 238", got, late.CPUsNeverOnline)
	}
	// CPU 0 never online (all-zero rows), CPUs 1-2 online and idle in
	// NET_RX: each interval's busiest (a 0% tie) is CPU 1, not CPU 0.
	s := analysistest.Scenario{CPUs: 3, Softirq: func(int, int) float64 { return 0 }}
	ifaces, cpus, flows, traffic := s.Tables()
	for i := range cpus {
		if cpus[i].CPU == 0 {
			cpus[i] = trace.CPURow{Time: cpus[i].Time, IntervalNs: cpus[i].IntervalNs}
		}
	}
	m := s.Manifest()
	m.CPUCount, m.CPUsOnline, m.CPUsPossible = 2, "1-2", "0-2"
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuNumbers(r.CPUs); !slices.Equal(got, []int{1, 2}) || r.BusiestCPU != 1 || r.CPUsNeverOnline != 1 {
		t.Fatalf("CPUs %v, busiest %d, never online %d; want [1 2], 1, 1", got, r.BusiestCPU, r.CPUsNeverOnline)
	}
	if r.CPUs[0].BusiestIntervals != r.CPUIntervals || r.CPUIntervals == 0 {
		t.Errorf("CPU 1 busiest in %d of %d intervals, want all", r.CPUs[0].BusiestIntervals, r.CPUIntervals)
	}
	if countNotes(r.Notes, "1 possible CPUs were never online") != 1 {
		t.Errorf("notes %q", r.Notes)
	}
}

// Every CPU online: no note, nothing left out.
func TestAllCPUsOnline(t *testing.T) {
	r := buildScenario(t, analysistest.Scenario{}, nil)
	if r.CPUsNeverOnline != 0 || strings.Contains(strings.Join(r.Notes, "\n"), "never online") {
		t.Errorf("never online %d, notes %q", r.CPUsNeverOnline, r.Notes)
	}
	if got := r.HostDesc(); got != "synthetic (kernel 6.18, 2 CPUs)" {
		t.Errorf("HostDesc() = %q", got)
	}
}
