package analysis

import (
	"fmt"

	"github.com/netprof/netprof/trace"
)

// Why /proc/stat shares are missing.
const (
	noProcColumns = "no /proc/stat columns (cpus.proc_*) in the trace: recorded by netprof watch/blob or a netprof before them"
	noProcTicks   = "/proc/stat did not advance (proc_total_ns 0)"
)

// procWin sums one CPU's /proc/stat columns over the CPU window.
type procWin struct {
	soft, busy, total uint64
	rows              int
}

// add adds x's proc_* columns when it has them (all three or none).
func (p *procWin) add(x *trace.CPURow) {
	if x.ProcSoftirqNs == nil || x.ProcBusyNs == nil || x.ProcTotalNs == nil {
		return
	}
	p.soft += *x.ProcSoftirqNs
	p.busy += *x.ProcBusyNs
	p.total += *x.ProcTotalNs
	p.rows++
}

// plus returns the sum of p and q.
func (p procWin) plus(q procWin) procWin {
	return procWin{soft: p.soft + q.soft, busy: p.busy + q.busy, total: p.total + q.total, rows: p.rows + q.rows}
}

// shares returns the sums as shares of proc_total_ns, or nil and why not.
func (p procWin) shares() (*ProcShares, string) {
	switch {
	case p.rows == 0:
		return nil, noProcColumns
	case p.total == 0:
		return nil, noProcTicks
	}
	t := float64(p.total)
	return &ProcShares{Softirq: float64(p.soft) / t, Busy: float64(p.busy) / t, TotalNs: p.total, Intervals: p.rows}, ""
}

// finishProc sets HostCPU from the per-CPU sums (stats must have been
// built from per) and notes why it is missing.
func (a *cpuAcc) finishProc(r *Report) {
	var host procWin
	cpus := 0
	for cpu, c := range a.per {
		if c.proc.rows > 0 && a.online.shown(cpu) {
			host, cpus = host.plus(c.proc), cpus+1
		}
	}
	s, why := host.shares()
	if s == nil {
		r.reasons[figProcStat] = why
		if why == noProcColumns {
			r.note("all-softirq and busy % (/proc/stat) n/a: " + why)
		}
		return
	}
	r.HostCPU = &HostCPU{ProcShares: *s, CPUs: cpus}
}

// ProcCell formats c's /proc/stat share (busy, else every softirq
// vector) in percent for a per-CPU table, or n/a with why.
func (c CPUStat) ProcCell(busy bool) string {
	if c.Proc == nil {
		if c.ProcMissing == noProcTicks {
			return na("no ticks")
		}
		return na("not recorded")
	}
	if busy {
		return fmt.Sprintf("%.1f", 100*c.Proc.Busy)
	}
	return fmt.Sprintf("%.1f", 100*c.Proc.Softirq)
}

// hostCPUEvidence describes the host's /proc/stat CPU use, for verdicts.
func hostCPUEvidence(r *Report) string {
	h := r.HostCPU
	if h == nil {
		return "host CPU busy (/proc/stat): " + na(r.reason(figProcStat, noProcColumns))
	}
	return fmt.Sprintf("host CPUs %s busy over the %s (/proc/stat, all %d CPUs: sum(proc_busy_ns) / sum(proc_total_ns), steal not busy); softirq of every vector %s",
		pct(h.Busy), r.CPUWindow, h.CPUs, pct(h.Softirq))
}

// allSoftirq formats CPU c's all-vector softirq share to follow its NET_RX
// share, e.g. "; all softirq vectors 27.2% (/proc/stat)"; empty when
// unknown.
func allSoftirq(c CPUStat) string {
	if c.Proc == nil {
		return ""
	}
	return fmt.Sprintf("; all softirq vectors %s (/proc/stat)", pct(c.Proc.Softirq))
}

// mostSoftirq returns the CPU with the largest all-vector softirq share,
// or nil when no CPU has /proc/stat shares.
func mostSoftirq(cs []CPUStat) *CPUStat {
	var best *CPUStat
	for i := range cs {
		if c := &cs[i]; c.Proc != nil && (best == nil || c.Proc.Softirq > best.Proc.Softirq) {
			best = c
		}
	}
	return best
}
