package analysis

import (
	"sort"
	"strings"

	"github.com/netprof/netprof/trace"
)

// CPU window labels (Report.CPUWindow).
const (
	WindowActive   = "active window"
	WindowWholeRun = "whole run"
)

// buildCPUs sets CPUs, the CPU window and BusiestCPU.
func (r *Report) buildCPUs(cpus []trace.CPURow) {
	whole := r.App == nil || !r.App.HasActive()
	if whole {
		r.CPUWindow, r.CPUWindowStart, r.CPUWindowEnd = WindowWholeRun, r.RunStart, r.RunEnd
	} else {
		r.CPUWindow, r.CPUWindowStart, r.CPUWindowEnd = WindowActive, r.App.ActiveStart, r.App.ActiveEnd
	}
	if len(cpus) == 0 {
		r.reasons[figCPU] = "no cpus rows: probes off"
		return
	}
	keep := func(x trace.CPURow) bool {
		return whole || inWindow(x.Time, x.IntervalNs, r.CPUWindowStart, r.CPUWindowEnd)
	}
	r.CPUs = cpuShares(cpus, keep)
	r.BusiestCPU = busiest(r.CPUs)
	if len(r.CPUs) == 0 {
		r.reasons[figCPU] = "no cpus rows in the " + r.CPUWindow
	}
}

// shareAcc accumulates one CPU's softirq and interval time.
type shareAcc struct {
	CPUShare
	ns, interval uint64
}

// cpuShares returns the NET_RX softirq share of each CPU over the rows keep
// accepts (rows with interval_ns <= 0 are skipped), sorted by CPU.
func cpuShares(cpus []trace.CPURow, keep func(trace.CPURow) bool) []CPUShare {
	per := map[int]*shareAcc{}
	for _, x := range cpus {
		if x.IntervalNs <= 0 || !keep(x) {
			continue
		}
		a := per[int(x.CPU)]
		if a == nil {
			a = &shareAcc{CPUShare: CPUShare{CPU: int(x.CPU)}}
			per[int(x.CPU)] = a
		}
		a.ns += x.NetRxSoftirqNs
		a.interval += uint64(x.IntervalNs)
		a.Intervals++
		if s := float64(x.NetRxSoftirqNs) / float64(x.IntervalNs); s > a.MaxShare || a.Intervals == 1 {
			a.MaxShare, a.MaxAt = s, x.Time
		}
	}
	var out []CPUShare
	for _, a := range per {
		a.Share = float64(a.ns) / float64(a.interval)
		out = append(out, a.CPUShare)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPU < out[j].CPU })
	return out
}

// busiest returns the CPU with the largest Share (lowest CPU number on
// ties), or -1 for none. shares must be sorted by CPU.
func busiest(shares []CPUShare) int {
	best := -1
	bestShare := -1.0
	for _, s := range shares {
		if s.Share > bestShare {
			best, bestShare = s.CPU, s.Share
		}
	}
	return best
}

// weighted is one value with a weight, for weighted percentiles.
type weighted struct {
	v uint32
	w uint64
}

// weightedPercentile returns the smallest value whose cumulative weight
// (values ascending) reaches q × the total weight; 0 for no weight.
func weightedPercentile(xs []weighted, q float64) uint32 {
	s := append([]weighted(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i].v < s[j].v })
	var total uint64
	for _, x := range s {
		total += x.w
	}
	target := q * float64(total)
	var cum uint64
	for _, x := range s {
		cum += x.w
		if x.w > 0 && float64(cum) >= target {
			return x.v
		}
	}
	return 0
}

// buildRTT sets RTT from flows rows with rtt_samples > 0.
func (r *Report) buildRTT(flows []trace.FlowRow) {
	if len(flows) == 0 {
		r.reasons[figRTT] = "no flows rows: probes off"
		return
	}
	var p50, p99 []weighted
	var sum RTTSummary
	for _, x := range flows {
		if x.RTTSamples == 0 {
			continue
		}
		sum.Rows++
		sum.Samples += x.RTTSamples
		if x.RTTP50Us != nil {
			p50 = append(p50, weighted{*x.RTTP50Us, x.RTTSamples})
		}
		if x.RTTP99Us != nil {
			p99 = append(p99, weighted{*x.RTTP99Us, x.RTTSamples})
		}
		if x.RTTMinUs != nil && (sum.MinUs == 0 || *x.RTTMinUs < sum.MinUs) {
			sum.MinUs = *x.RTTMinUs
		}
		if x.RTTMaxUs != nil && *x.RTTMaxUs > sum.MaxUs {
			sum.MaxUs = *x.RTTMaxUs
		}
	}
	if sum.Rows == 0 || len(p50) == 0 {
		r.reasons[figRTT] = "no RTT samples in flows rows"
		return
	}
	sum.P50Us = weightedPercentile(p50, 0.50)
	sum.P99Us = weightedPercentile(p99, 0.99)
	r.RTT = &sum
}

// buildRetransmits sets SenderRetransmits and FlowRetransmits.
func (r *Report) buildRetransmits(flows []trace.FlowRow, traffic []trace.TrafficRow) {
	var snd uint64
	var sndSet, sndRows bool
	for _, x := range traffic {
		if x.Role != trace.RoleSender {
			continue
		}
		sndRows = true
		if x.TCPRetransmits != nil {
			snd += *x.TCPRetransmits
			sndSet = true
		}
	}
	switch {
	case sndSet:
		r.SenderRetransmits = &snd
	case sndRows:
		r.reasons[figSndRetx] = "tcp_retransmits null on all sender rows"
	default:
		r.reasons[figSndRetx] = "no sender rows in this trace: the sender ran elsewhere"
	}
	if p, off := r.retransmitProbeOff(); off {
		r.reasons[figFlowRetx] = "probe " + p.Name + " not attached: " + orDash(p.Reason)
		return
	}
	if len(flows) == 0 {
		r.reasons[figFlowRetx] = "no flows rows: probes off"
		return
	}
	var flow uint64
	for _, x := range flows {
		flow += x.Retransmits
	}
	r.FlowRetransmits = &flow
}

// retransmitProbeOff returns the manifest's tcp_retransmit_skb probe when it
// is listed as not attached.
func (r *Report) retransmitProbeOff() (trace.Probe, bool) {
	for _, p := range r.Manifest.Probes {
		if strings.Contains(p.Hook, "tcp_retransmit_skb") && !p.Attached {
			return p, true
		}
	}
	return trace.Probe{}, false
}
