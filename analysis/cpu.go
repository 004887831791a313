package analysis

import (
	"math"
	"sort"
	"time"

	"github.com/netprof/netprof/trace"
)

// CPU window labels (Report.CPUWindow).
const (
	WindowSteady   = "steady state"
	WindowWholeRun = "whole run"
)

// cpuWin accumulates one CPU over the CPU window.
type cpuWin struct {
	rxNs, txNs, ivNs, rxPkts, polls, exh uint64
	maxShare                             float64
	maxAt                                time.Time
	intervals, busiest                   int
	// proc sums the /proc/stat columns of the rows that have them;
	// softnet the softnet_* columns.
	proc    procWin
	softnet SoftnetStat
}

// busiestAt is the largest NET_RX share of one interval and whose it is;
// online is false for a row that does not show its CPU was online (see
// cpuOnline): any row that does wins over it.
type busiestAt struct {
	cpu    int32
	share  float64
	online bool
}

// beats reports whether b is the interval's busiest rather than c: a row
// showing its CPU online first, then the larger share, then the lower CPU.
func (b busiestAt) beats(c busiestAt) bool {
	if b.online != c.online {
		return b.online
	}
	return b.share > c.share || (b.share == c.share && b.cpu < c.cpu)
}

// cpuAcc accumulates the cpus table.
type cpuAcc struct {
	whole      bool
	start, end time.Time
	per        map[int32]*cpuWin
	byInterval map[int64]busiestAt
	heat       heatAcc
	// procHeat bins /proc/stat softirq over total time: the heat map
	// when the softirq probe did not run.
	procHeat heatAcc
	online   cpuOnline
	rows     int
	// rxSeen: a row had net_rx_softirq_ns (not null); pktSeen rx_packets
	// (the netdev probe); napiSeen napi_polls (the napi probe).
	rxSeen, pktSeen, napiSeen bool
}

// init sets the window: Primary's steady state, else the whole run.
func (a *cpuAcc) init(b *builder) {
	r := b.r
	a.per, a.byInterval = map[int32]*cpuWin{}, map[int64]busiestAt{}
	if w := r.steady(); w != nil {
		r.CPUWindow, a.start, a.end = WindowSteady, w.SteadyStart, w.SteadyEnd
	} else {
		r.CPUWindow, a.start, a.end, a.whole = WindowWholeRun, r.RunStart, r.RunEnd, true
	}
	r.CPUWindowStart, r.CPUWindowEnd = a.start, a.end
	a.online.init(r.Manifest)
	a.heat.init(r.RunStart, r.RunEnd, r.Manifest.IntervalNs)
	a.procHeat.init(r.RunStart, r.RunEnd, r.Manifest.IntervalNs)
}

// add returns the batch function for trace.CPURow.
func (a *cpuAcc) add(b *builder) func([]trace.CPURow) error {
	return func(rows []trace.CPURow) error {
		for i := range rows {
			a.row(b, &rows[i])
		}
		return nil
	}
}

func (a *cpuAcc) row(b *builder, x *trace.CPURow) {
	a.rows++
	b.rows.add(x.Time, x.IntervalNs)
	online := a.online.row(x)
	if x.ProcSoftirqNs != nil && x.ProcTotalNs != nil && *x.ProcTotalNs > 0 {
		a.procHeat.addOf(x.CPU, x.Time, x.IntervalNs, *x.ProcSoftirqNs, *x.ProcTotalNs)
	}
	rx := val(x.NetRxSoftirqNs) // null: the softirq probe did not run (Report.SoftirqOff)
	a.pktSeen = a.pktSeen || x.RxPackets != nil
	a.napiSeen = a.napiSeen || x.NapiPolls != nil
	if x.NetRxSoftirqNs != nil {
		if !b.anom.plausibleNs("cpus.net_rx_softirq_ns", x.Time, x.IntervalNs, rx) {
			return
		}
		a.rxSeen = true
		a.heat.add(x.CPU, x.Time, x.IntervalNs, rx)
	}
	share := float64(rx) / float64(x.IntervalNs)
	if !a.whole && !inWindow(x.Time, x.IntervalNs, a.start, a.end) {
		return
	}
	c := a.per[x.CPU]
	if c == nil {
		c = &cpuWin{}
		a.per[x.CPU] = c
	}
	c.rxNs += rx
	c.txNs += min(val(x.NetTxSoftirqNs), uint64(x.IntervalNs))
	c.ivNs += uint64(x.IntervalNs)
	c.rxPkts += val(x.RxPackets)
	c.polls += val(x.NapiPolls)
	c.exh += val(x.NapiBudgetExhausted)
	c.proc.add(x)
	c.softnet.add(x)
	c.intervals++
	if share > c.maxShare || c.intervals == 1 {
		c.maxShare, c.maxAt = share, x.Time
	}
	k := x.Time.UnixNano()
	cand := busiestAt{x.CPU, share, online}
	if cur, ok := a.byInterval[k]; !ok || cand.beats(cur) {
		a.byInterval[k] = cand
	}
}

// finish sets Report.CPUs, BusiestCPU, the per-interval busiest figures
// and the heat map, over the CPUs online during the run (cpuOnline).
func (a *cpuAcc) finish(b *builder) {
	r := b.r
	if a.rows == 0 {
		r.reasons[figCPU] = r.probesOff("no cpus rows", "np_si_", "np_nd_")
		r.reasons[figProcStat] = r.probesOff("no cpus rows (the /proc/stat columns are in them)", "np_si_", "np_nd_")
		return
	}
	shares := make([]float64, 0, len(a.byInterval))
	for _, v := range a.byInterval {
		shares = append(shares, v.share)
		if c := a.per[v.cpu]; c != nil {
			c.busiest++
		}
	}
	r.CPUIntervals, r.BusiestMedianShare = len(shares), median(shares)
	for cpu, c := range a.per {
		if a.online.shown(cpu) {
			r.CPUs = append(r.CPUs, c.stat(int(cpu)))
		}
	}
	r.CPUsNeverOnline = a.online.neverOnline()
	if n := a.online.note(); n != "" {
		r.note(n)
	}
	sort.Slice(r.CPUs, func(i, j int) bool { return r.CPUs[i].CPU < r.CPUs[j].CPU })
	if why, down := r.programDown("np_si_entry"); down {
		r.SoftirqOff = "np_si_entry not attached: " + why
	} else if !a.rxSeen {
		r.SoftirqOff = "cpus.net_rx_softirq_ns null in every row (the softirq probe did not run)"
	}
	r.RxPacketsOff = r.columnOff("np_nd_rx", a.pktSeen, "cpus.rx_packets null in every row (the netdev probe did not run)")
	r.NapiOff = r.columnOff("np_nd_napi", a.napiSeen, "cpus.napi_polls null in every row (the napi probe did not run)")
	r.HotSource = HotNetRx
	if r.SoftirqOff != "" {
		r.HotSource = ""
		if mostSoftirq(r.CPUs) != nil {
			r.HotSource = HotAllSoftirq
		}
	}
	r.BusiestCPU = busiest(r)
	if len(r.CPUs) == 0 {
		r.reasons[figCPU] = "no cpus rows in the " + r.CPUWindow
	}
	r.Heat = a.heat.result(a.online.shown)
	if r.Heat != nil {
		r.Heat.Source = HotNetRx
	}
	if r.SoftirqOff != "" {
		if r.Heat = a.procHeat.result(a.online.shown); r.Heat != nil {
			r.Heat.Source = HotAllSoftirq
		}
	}
	a.finishProc(r)
}

// columnOff says why a probe's cpus columns hold no measurement: the
// manifest's reason when program prog is listed and not attached, else
// null when no row had the column (seen false); "" when measured.
func (r *Report) columnOff(prog string, seen bool, null string) string {
	if why, down := r.programDown(prog); down {
		return prog + " not attached: " + why
	}
	if !seen {
		return null
	}
	return ""
}

// stat converts the accumulator to a CPUStat.
func (c *cpuWin) stat(cpu int) CPUStat {
	s := CPUStat{CPU: cpu, MaxShare: c.maxShare, MaxAt: c.maxAt, RxPackets: c.rxPkts,
		NapiPolls: c.polls, NapiExhausted: c.exh, Intervals: c.intervals, BusiestIntervals: c.busiest}
	if c.ivNs > 0 {
		s.Share, s.TxShare = float64(c.rxNs)/float64(c.ivNs), float64(c.txNs)/float64(c.ivNs)
	}
	if c.rxPkts > 0 {
		s.PacketCostNs = float64(c.rxNs) / float64(c.rxPkts)
	}
	if c.polls > 0 {
		s.ExhaustedRatio = float64(c.exh) / float64(c.polls)
	}
	s.Proc, s.ProcMissing = c.proc.shares()
	if c.softnet.Intervals > 0 {
		sn := c.softnet
		s.Softnet = &sn
	}
	return s
}

// busiest returns the CPU with the largest HotShare (lowest CPU number on
// ties), or -1 for none. r.CPUs must be sorted by CPU.
func busiest(r *Report) int {
	best, bestShare := -1, -1.0
	for _, s := range r.CPUs {
		if h := r.HotShare(s); h > bestShare {
			best, bestShare = s.CPU, h
		}
	}
	return best
}

// heatAcc bins NET_RX softirq time per CPU over the run.
type heatAcc struct {
	start  time.Time
	binDur time.Duration
	bins   int
	cells  map[int32][]heatCell
}

type heatCell struct{ ns, iv uint64 }

// init sizes the bins: one per interval, at most HeatBins.
func (h *heatAcc) init(start, end time.Time, intervalNs int64) {
	h.cells = map[int32][]heatCell{}
	length := end.Sub(start)
	if start.IsZero() || end.IsZero() || length <= 0 {
		return
	}
	h.start, h.binDur = start, time.Duration(max(intervalNs, 1))
	if length/h.binDur > HeatBins || intervalNs <= 0 {
		h.binDur = (length + HeatBins - 1) / HeatBins
	}
	h.bins = int((length + h.binDur - 1) / h.binDur)
}

func (h *heatAcc) add(cpu int32, end time.Time, intervalNs int64, ns uint64) {
	h.addOf(cpu, end, intervalNs, ns, uint64(intervalNs))
}

// addOf adds ns of the CPU's of ns (its time in the interval: the
// interval, or /proc/stat's total of every mode).
func (h *heatAcc) addOf(cpu int32, end time.Time, intervalNs int64, ns, of uint64) {
	if h.bins == 0 {
		return
	}
	mid := end.Add(-time.Duration(intervalNs) / 2)
	i := int(mid.Sub(h.start) / h.binDur)
	if i < 0 || i >= h.bins {
		return
	}
	c := h.cells[cpu]
	if c == nil {
		c = make([]heatCell, h.bins)
		h.cells[cpu] = c
	}
	c[i].ns += ns
	c[i].iv += of
}

// result returns the heat map of the CPUs shown, or nil when empty.
func (h *heatAcc) result(shown func(int32) bool) *CPUHeat {
	out := &CPUHeat{}
	for cpu := range h.cells {
		if shown(cpu) {
			out.CPUs = append(out.CPUs, int(cpu))
		}
	}
	if len(out.CPUs) == 0 {
		return nil
	}
	for i := range h.bins {
		out.BinEnds = append(out.BinEnds, h.start.Add(time.Duration(i+1)*h.binDur))
	}
	sort.Ints(out.CPUs)
	for _, cpu := range out.CPUs {
		row := make([]float64, h.bins)
		for i, c := range h.cells[int32(cpu)] {
			row[i] = math.NaN()
			if c.iv > 0 {
				row[i] = float64(c.ns) / float64(c.iv)
			}
		}
		out.Share = append(out.Share, row)
	}
	return out
}

// SoftnetStat sums a CPU's softnet_* columns (the kernel's per-CPU
// softnet_data, /proc/net/softnet_stat) over the rows that have them.
type SoftnetStat struct {
	// Processed counts skbs through the receive path on the CPU; Dropped
	// packets its full backlog refused; TimeSqueeze the times
	// net_rx_action stopped with work left (budget or time ran out);
	// ReceivedRPS RPS IPIs; FlowLimitDrops flow-limit drops.
	Processed, Dropped, TimeSqueeze, ReceivedRPS, FlowLimitDrops uint64
	Intervals                                                    int
	// NetRxRuns sums proc_net_rx_softirqs (NET_RX softirq runs,
	// /proc/softirqs) over the rows that have it and the softnet columns;
	// RunsIntervals counts those rows. SqueezeRatio returns their quotient.
	NetRxRuns, squeezeOfRuns uint64
	RunsIntervals            int
}

// SqueezeRatio is the share of NET_RX softirq runs that stopped with
// packets left (time squeezes / runs, over the rows with both), and
// false without runs.
func (s SoftnetStat) SqueezeRatio() (float64, bool) {
	if s.NetRxRuns == 0 {
		return 0, false
	}
	return min(float64(s.squeezeOfRuns)/float64(s.NetRxRuns), 1), true
}

func (s *SoftnetStat) add(x *trace.CPURow) {
	if x.SoftnetProcessed == nil || x.SoftnetDropped == nil || x.SoftnetTimeSqueeze == nil ||
		x.SoftnetReceivedRPS == nil || x.SoftnetFlowLimitDrops == nil {
		return
	}
	s.Processed += *x.SoftnetProcessed
	s.Dropped += *x.SoftnetDropped
	s.TimeSqueeze += *x.SoftnetTimeSqueeze
	s.ReceivedRPS += *x.SoftnetReceivedRPS
	s.FlowLimitDrops += *x.SoftnetFlowLimitDrops
	s.Intervals++
	if x.ProcNetRxSoftirqs != nil {
		s.NetRxRuns += *x.ProcNetRxSoftirqs
		s.squeezeOfRuns += *x.SoftnetTimeSqueeze
		s.RunsIntervals++
	}
}
