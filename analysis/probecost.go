package analysis

import (
	"fmt"
	"strings"

	"github.com/netprof/netprof/trace"
)

// ProbeCost is what netprof's own BPF programs cost over CPUWindow: their
// run time as the kernel's BPF run-time statistics count it (the program
// rows of probes.parquet: run_time_ns, run_count). It covers the programs'
// bodies; the hook's own entry cost per event (the empty programs of
// BenchmarkProbeCost: tens of ns) is not in it.
type ProbeCost struct {
	Window string
	// RunNs is the programs' run time, Events how many times they ran.
	RunNs, Events uint64
	// WindowNs is the window's length (its intervals' interval_ns), CPUs
	// the machine's online CPUs (manifest cpu_count).
	WindowNs uint64
	CPUs     int
	// HostShare is RunNs / (WindowNs × CPUs): the share of the host's CPU
	// time the programs took.
	HostShare float64
	// BusiestNetRxShare is RunNs over the busiest CPU's NET_RX softirq time
	// in the window (it can exceed 1: the programs run on every CPU and
	// outside NET_RX); nil when that time is unknown or 0.
	BusiestNetRxShare *float64
	BusiestCPU        int
}

// NsPerEvent returns RunNs / Events (0 without events).
func (c *ProbeCost) NsPerEvent() float64 {
	if c.Events == 0 {
		return 0
	}
	return float64(c.RunNs) / float64(c.Events)
}

// figProbeCost is ProbeCost's key in Report.reasons.
const figProbeCost = "probe_cost"

// probeCostAcc sums the program rows of probes.parquet over the CPU window.
type probeCostAcc struct {
	rows          int
	runNs, events uint64
	intervals     map[int64]uint64 // interval end (Unix ns) -> interval_ns
}

func (a *probeCostAcc) row(b *builder, x *trace.ProbeRow) {
	if strings.HasPrefix(x.Hook, "map:") {
		return
	}
	a.rows++
	c := &b.cpu
	if !c.whole && !inWindow(x.Time, x.IntervalNs, c.start, c.end) {
		return
	}
	if a.intervals == nil {
		a.intervals = map[int64]uint64{}
	}
	a.intervals[x.Time.UnixNano()] = uint64(x.IntervalNs)
	a.runNs += x.RunTimeNs
	a.events += x.RunCount
}

// finish sets Report.ProbeCost, or the reason it is n/a.
func (a *probeCostAcc) finish(b *builder) {
	r := b.r
	switch {
	case a.rows == 0:
		r.reasons[figProbeCost] = r.probesOff("no program rows in the probes table", "np_")
		return
	case a.events == 0 && a.runNs == 0:
		r.reasons[figProbeCost] = "run_count and run_time_ns are 0: the kernel's BPF run-time statistics were off " +
			"(bench --bpf-stats=false), or no program ran in the window"
		return
	}
	pc := &ProbeCost{Window: r.CPUWindow, RunNs: a.runNs, Events: a.events, CPUs: r.Manifest.CPUCount, BusiestCPU: r.BusiestCPU}
	for _, ns := range a.intervals {
		pc.WindowNs += ns
	}
	if pc.CPUs > 0 && pc.WindowNs > 0 {
		pc.HostShare = float64(pc.RunNs) / (float64(pc.WindowNs) * float64(pc.CPUs))
	}
	if c := b.cpu.per[int32(r.BusiestCPU)]; c != nil && c.rxNs > 0 && r.SoftirqOff == "" {
		s := float64(pc.RunNs) / float64(c.rxNs)
		pc.BusiestNetRxShare = &s
	}
	r.ProbeCost = pc
}

// ProbeCostLine is the report's line on what the probes cost, or n/a with
// the reason.
func (r *Report) ProbeCostLine() string {
	c := r.ProbeCost
	if c == nil {
		return na(r.reason(figProbeCost, "probes off"))
	}
	perS := 0.0 // ns of run time per second
	if c.WindowNs > 0 {
		perS = float64(c.RunNs) / (float64(c.WindowNs) / 1e9)
	}
	run := fmtUs(perS / 1e3)
	if perS < 1e3 {
		run = fmt.Sprintf("%.0f ns", perS)
	}
	s := fmt.Sprintf("%.2f%% of the host's CPU time (BPF run time %s per second over %s: %s of %.0f ns; "+
		"hooks' entry cost, tens of ns a run, not counted)",
		100*c.HostShare, run, plural(c.CPUs, "CPU"), plural(c.Events, "run"), c.NsPerEvent())
	if c.BusiestNetRxShare != nil {
		s += fmt.Sprintf("; %.1f%% of CPU %d's NET_RX softirq time", 100**c.BusiestNetRxShare, c.BusiestCPU)
	}
	return s
}
