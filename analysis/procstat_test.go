package analysis

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
)

// procStat gives every CPU the same /proc/stat busy share and CPU c the
// softirq share soft[c], except interval 0 (outside the steady state),
// which is almost idle with 90% softirq: it must not count.
func procStat(busy float64, soft ...float64) func(i, c int) (float64, float64) {
	return func(i, c int) (float64, float64) {
		if i == 0 {
			return 0.9, 0.1
		}
		return soft[c], busy
	}
}

// The per-CPU table puts the /proc/stat shares (steady state, every
// vector) beside the BPF NET_RX share, and the host line adds every CPU.
func TestProcStatColumns(t *testing.T) {
	r := scen(t, analysistest.Scenario{Softirq: hot(0.08), ProcStat: procStat(0.97, 0.35, 0.20)}, Options{})
	if len(r.CPUs) != 2 || r.CPUs[0].Proc == nil || r.CPUs[1].Proc == nil {
		t.Fatalf("CPUs = %+v, want 2 with /proc/stat shares", r.CPUs)
	}
	c0 := r.CPUs[0]
	if !approxEq(c0.Share, 0.08) || !approxEq(c0.Proc.Softirq, 0.35) || !approxEq(c0.Proc.Busy, 0.97) || c0.Proc.Intervals != 8 {
		t.Errorf("CPU 0: NET_RX %v, /proc/stat %+v; want 0.08, softirq 0.35, busy 0.97 over 8 intervals", c0.Share, *c0.Proc)
	}
	h := r.HostCPU
	if h == nil || h.CPUs != 2 || !approxEq(h.Busy, 0.97) || !approxEq(h.Softirq, 0.275) {
		t.Fatalf("HostCPU = %+v, want 2 CPUs, busy 0.97, softirq 0.275", h)
	}
	out := text(t, r)
	for _, re := range []string{
		`cpu\s+NET_RX %\s+all softirq % \(/proc/stat\)\s+busy % \(/proc/stat\)\s+NET_TX %`,
		`\n\s+0\s+8\.0\s+35\.0\s+97\.0\s+1\.0\s`,
		`\n\s+1\s+10\.0\s+20\.0\s+97\.0\s+1\.0\s`,
		`NET_RX % is exact for one softirq vector \(BPF irq:softirq_entry/exit\); all softirq % and busy % are /proc/stat`,
		`HRTIMER, TASKLET, NET_TX`, `softirq work outside NET_RX \(e\.g\. TCP pacing/TSQ transmit\)`,
		`busiest CPU: 1 \(NET_RX softirq 10\.0% of the steady state; all softirq vectors 20\.0% \(/proc/stat\)\)`,
		`host, all 2 CPUs \(/proc/stat, steady state\): busy 97\.0%, softirq of every vector 27\.5%`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("report lacks %q:\n%s", re, out)
		}
	}
	m := jsonMap(t, r)
	cpu0 := m["cpus"].([]any)[0].(map[string]any)
	if !approxEq(cpu0["proc_stat_all_softirq_pct"].(float64), 35) || !approxEq(cpu0["proc_stat_busy_pct"].(float64), 97) {
		t.Errorf("cpus[0] = %v", cpu0)
	}
	host := m["host_cpu"].(map[string]any)
	if !approxEq(host["proc_stat_busy_pct"].(float64), 97) || !approxEq(host["proc_stat_all_softirq_pct"].(float64), 27.5) || host["cpus"].(float64) != 2 {
		t.Errorf("host_cpu = %v", host)
	}
}

// Without the proc_* columns the cells say n/a with the reason, never 0,
// and JSON has null; a CPU without them leaves the host figure to the
// others.
func TestProcStatMissing(t *testing.T) {
	r := scen(t, analysistest.Scenario{}, Options{})
	if r.HostCPU != nil || r.CPUs[0].Proc != nil || r.CPUs[0].ProcMissing != noProcColumns {
		t.Errorf("without proc_* columns: HostCPU %+v, CPU 0 %+v", r.HostCPU, r.CPUs[0])
	}
	out := text(t, r)
	for _, re := range []string{`\n\s+0\s+30\.0\s+n/a \(not recorded\)\s+n/a \(not recorded\)\s+1\.0\s`,
		`all softirq % and busy %: n/a \(no /proc/stat columns \(cpus\.proc_\*\) in the trace`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("report lacks %q:\n%s", re, out)
		}
	}
	if !hasNote(r, "all-softirq and busy % (/proc/stat) n/a") {
		t.Errorf("no note on the missing columns: %q", r.Notes)
	}
	m := jsonMap(t, r)
	if cpu0 := m["cpus"].([]any)[0].(map[string]any); cpu0["proc_stat_all_softirq_pct"] != nil || cpu0["proc_stat_busy_pct"] != nil {
		t.Errorf("cpus[0] = %v, want null /proc/stat shares", cpu0)
	}
	if m["host_cpu"] != nil {
		t.Errorf("host_cpu = %v, want null", m["host_cpu"])
	}

	// CPU 1's rows lack the columns (e.g. it was offline at a read).
	s := analysistest.Scenario{ProcStat: procStat(0.5, 0.4, 0.2)}
	ifaces, cpus, flows, traffic := s.Tables()
	for i := range cpus {
		if cpus[i].CPU == 1 {
			cpus[i].ProcSoftirqNs, cpus[i].ProcBusyNs, cpus[i].ProcTotalNs = nil, nil, nil
		}
	}
	r, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.CPUs[1].Proc != nil || r.HostCPU == nil || r.HostCPU.CPUs != 1 || !approxEq(r.HostCPU.Softirq, 0.4) {
		t.Errorf("CPU 1 without columns: CPU 1 %+v, host %+v; want n/a and the host from CPU 0 alone", r.CPUs[1], r.HostCPU)
	}
	if p, why := (procWin{rows: 2}).shares(); p != nil || why != noProcTicks {
		t.Errorf("rows with proc_total_ns 0: %+v, %q", p, why)
	}
}

// A host whose CPUs are >= 90% busy makes the sender/application-limited
// verdict say the sender is CPU-bound, with the all-vector softirq share
// beside NET_RX; below the threshold the verdict keeps its usual summary.
func TestVerdictHostCPUBound(t *testing.T) {
	s := analysistest.Scenario{WindowRatio: 0.1, RatedMbps: 100_000, Softirq: hot(0.08), ProcStat: procStat(0.97, 0.35, 0.2)}
	r := scen(t, s, Options{})
	wantVerdict(t, r, RuleSender, Fired,
		"the host's CPUs were 97.0% busy (/proc/stat, steady state): the sender is CPU-bound on this host",
		"busiest softirq core: CPU 1 at 10.0% NET_RX; all softirq vectors 20.0% (/proc/stat)",
		"host CPUs 97.0% busy over the steady state (/proc/stat, all 2 CPUs", "softirq of every vector 27.5%",
		"host CPUs >= 90.0% busy")
	wantVerdict(t, r, RuleSoftirq, NotFired, "max interval 10.0%; all softirq vectors 20.0% (/proc/stat)",
		"most softirq of every vector: CPU 0 at 35.0% (/proc/stat; NET_RX 8.0%)")

	r = scen(t, s, Options{Thresholds: Thresholds{HostBusy: 0.98}})
	wantVerdict(t, r, RuleSender, Fired, "the application (or its CPU", "host CPUs 97.0% busy", "host CPUs >= 98.0% busy")
	if v := r.Verdict(RuleSender); strings.Contains(v.Summary, "CPU-bound") {
		t.Errorf("97%% busy below a 98%% threshold: %q", v.Summary)
	}
	s.ProcStat = nil
	wantVerdict(t, scen(t, s, Options{}), RuleSender, Fired, "the application (or its CPU", "host CPU busy (/proc/stat): n/a (no /proc/stat columns")

	// Nothing fires: inconclusive says the busy CPUs may be the ceiling.
	r = scen(t, analysistest.Scenario{WindowRatio: 0.6, ProcStat: procStat(0.95, 0.3, 0.3)}, Options{})
	wantVerdict(t, r, RuleInconclusive, Fired, "host CPUs 95.0% busy", "the host's CPUs may be the ceiling")
	r = scen(t, analysistest.Scenario{WindowRatio: 0.6, ProcStat: procStat(0.5, 0.3, 0.3)}, Options{})
	if v := r.Verdict(RuleInconclusive); strings.Contains(strings.Join(v.Evidence, "\n"), "may be the ceiling") ||
		!strings.HasPrefix(v.Summary, "not host-bound") {
		t.Errorf("inconclusive at 50%% busy: %s %q, want not host-bound", v.Summary, v.Evidence)
	}
}

func jsonMap(t *testing.T, r *Report) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
