package analysis

import (
	"fmt"
	"math"
	"strings"
)

// ruleSoftirq: a CPU spends >= SoftirqShare of the steady state in NET_RX
// softirq (or the per-interval busiest CPU does, or NAPI exhausts its
// budget in >= NapiExhausted of polls) while the link is below
// WireFraction of rated.
func ruleSoftirq(f *facts) Verdict {
	r, th := f.r, f.th
	v := Verdict{Rule: RuleSoftirq, Thresholds: []string{
		"NET_RX softirq share of a CPU >= " + pct(th.SoftirqShare) + " over the " + orDash(r.CPUWindow),
		"or napi_budget_exhausted / napi_polls >= " + pct(th.NapiExhausted) + " on a CPU (>= 100 polls); without the napi " +
			"probe, softnet_time_squeeze / proc_net_rx_softirqs (NET_RX runs that stopped with packets left) >= " +
			pct(th.NapiExhausted) + " (>= 100 runs)",
		"and the link below " + pct(th.WireFraction) + " of rated (when a rated speed is known)",
	}}
	if !f.hasCPU {
		v.Status, v.Summary = Skipped, r.reason(figCPU, "no cpus rows: probes off")
		return v
	}
	proc := r.HotSource == HotAllSoftirq
	if r.SoftirqOff != "" && !proc && !napiSeen(r.CPUs) {
		v.Status, v.Summary = Skipped, "no NET_RX softirq time, /proc/stat softirq time or NAPI polls ("+r.SoftirqOff+")"
		return v
	}
	if proc {
		v.Thresholds[0] += "; without the softirq probe: softirq of every vector (/proc/stat), an upper bound of NET_RX"
	}
	var hot, napi []string
	for _, c := range r.CPUs {
		if r.HotShare(c) >= th.SoftirqShare {
			hot = append(hot, fmt.Sprintf("CPU %d", c.CPU))
		}
		if c.NapiPolls >= 100 && c.ExhaustedRatio >= th.NapiExhausted {
			napi = append(napi, fmt.Sprintf("CPU %d (%s of %d polls)", c.CPU, pct(c.ExhaustedRatio), c.NapiPolls))
		} else if q, ok := squeezed(c); c.NapiPolls == 0 && ok && c.Softnet.NetRxRuns >= 100 && q >= th.NapiExhausted {
			napi = append(napi, fmt.Sprintf("CPU %d (%s of %d NET_RX runs squeezed, softnet_stat)", c.CPU, pct(q), c.Softnet.NetRxRuns))
		}
	}
	switch {
	case proc:
		if c := busiestStat(r); c != nil {
			v.Evidence = append(v.Evidence, fmt.Sprintf("busiest CPU %d: softirq of every vector %s of the %s (cpus.proc_softirq_ns / "+
				"proc_total_ns, tick-sampled); NET_RX alone n/a (%s)", c.CPU, pct(c.Proc.Softirq), r.CPUWindow, r.SoftirqOff))
		}
		if n, mean := meanHot(r); n > 1 {
			v.Evidence = append(v.Evidence, fmt.Sprintf("mean over the %d CPUs: softirq of every vector %s (a machine-wide average hides one busy core)",
				n, pct(mean)))
		}
	case r.SoftirqOff != "":
		v.Evidence = append(v.Evidence, "NET_RX softirq time n/a ("+r.SoftirqOff+"): judged on NAPI budget exhaustion only")
	default:
		v.Evidence = append(v.Evidence, cpuEvidence(r)...)
	}
	if len(napi) > 0 {
		v.Evidence = append(v.Evidence, fmt.Sprintf("NAPI budget exhausted on %v", napi))
	}
	for _, c := range r.CPUs {
		if c.CPU == r.BusiestCPU && c.Softnet != nil {
			v.Evidence = append(v.Evidence, fmt.Sprintf("CPU %d softnet_stat over the %s: %s", c.CPU, r.CPUWindow, softnetText(c.Softnet)))
		}
	}
	if s := r.SteeringLine(); s != "" {
		v.Evidence = append(v.Evidence, "receive steering (SO_INCOMING_CPU): "+s)
	}
	if c := busiestStat(r); c != nil {
		if fd := r.hotFeedsText(c.CPU); fd != "" {
			v.Evidence = append(v.Evidence, fmt.Sprintf("CPU %d is %s (queue map at the start: manifest interfaces[].queues)", c.CPU, fd))
		}
	}
	below, _ := f.belowRated()
	v.Evidence = append(v.Evidence, f.linkEvidence())
	v.Evidence = append(v.Evidence, dropsEvidence(r)...)
	switch {
	case !f.sat && len(napi) == 0 && proc:
		v.Status, v.Summary = NotFired, fmt.Sprintf("no CPU saturated by softirq (busiest %s)", busiestShare(r))
	case !f.sat && len(napi) == 0 && r.SoftirqOff != "":
		v.Status, v.Summary = NotFired, "no CPU kept exhausting its NAPI budget (NET_RX softirq time n/a)"
	case !f.sat && len(napi) == 0:
		v.Status, v.Summary = NotFired, fmt.Sprintf("no CPU saturated by NET_RX softirq (busiest %s)", busiestShare(r))
	case !below:
		v.Status, v.Summary = NotFired, "a CPU is saturated, but the link is at its rated speed: wire-bound"
	default:
		who := busiestShare(r)
		if len(hot) == 0 && len(napi) > 0 {
			who = fmt.Sprint("NAPI exhausting its budget on ", napi)
		}
		what := "NET_RX softirq"
		if proc {
			what = "softirq"
		}
		v.Status, v.Summary = Fired, "one core's "+what+" is the ceiling ("+who+
			"): spread receive work over more cores (more streams for RSS, RPS/RFS, IRQ affinity)"
	}
	return v
}

// cpuEvidence describes the busiest CPU over the window and per interval.
func cpuEvidence(r *Report) []string {
	var out []string
	for _, c := range r.CPUs {
		if c.CPU == r.BusiestCPU {
			out = append(out, fmt.Sprintf("busiest CPU %d: NET_RX softirq %s of the %s (cpus.net_rx_softirq_ns / interval_ns), max interval %s%s",
				c.CPU, pct(c.Share), r.CPUWindow, pct(c.MaxShare), allSoftirq(c)))
			out = append(out, fmt.Sprintf("busiest CPU per interval: median share %s; CPU %d busiest in %d of %d intervals",
				pct(r.BusiestMedianShare), c.CPU, c.BusiestIntervals, r.CPUIntervals))
		}
	}
	if m := mostSoftirq(r.CPUs); m != nil && m.CPU != r.BusiestCPU {
		out = append(out, fmt.Sprintf("most softirq of every vector: CPU %d at %s (/proc/stat; NET_RX %s)", m.CPU, pct(m.Proc.Softirq), pct(m.Share)))
	}
	if len(r.CPUs) > 1 {
		out = append(out, fmt.Sprintf("mean over the %d CPUs: NET_RX softirq %s (a machine-wide average hides one busy core)",
			len(r.CPUs), pct(meanShare(r.CPUs))))
	}
	return out
}

// meanHot is the mean HotShare over the CPUs that have it, and their number.
func meanHot(r *Report) (int, float64) {
	n, sum := 0, 0.0
	for _, c := range r.CPUs {
		if r.HotSource != HotAllSoftirq || c.Proc != nil {
			n++
			sum += r.HotShare(c)
		}
	}
	if n == 0 {
		return 0, 0
	}
	return n, sum / float64(n)
}

// meanShare is the mean NET_RX share over the CPUs.
func meanShare(cs []CPUStat) float64 {
	sum := 0.0
	for _, c := range cs {
		sum += c.Share
	}
	return sum / float64(len(cs))
}

// busiestCore formats the busiest CPU's NET_RX share with its share of
// every softirq vector when known; n/a with the reason when NET_RX softirq
// time was not recorded (Report.SoftirqOff: its columns then hold 0).
func busiestCore(r *Report) string {
	s := busiestShare(r)
	if c := busiestStat(r); c != nil && r.SoftirqOff == "" {
		s += " NET_RX" + allSoftirq(*c)
	}
	if c := busiestStat(r); c != nil {
		if f := r.hotFeedsText(c.CPU); f != "" {
			s += "; " + f
		}
	}
	return s
}

// busiestShare formats the busiest CPU's share (n/a when NET_RX softirq
// time was not recorded).
func busiestShare(r *Report) string {
	c := busiestStat(r)
	switch {
	case c != nil && r.HotSource == HotAllSoftirq:
		return fmt.Sprintf("CPU %d at %s softirq of every vector (/proc/stat; NET_RX alone not measured: %s)",
			c.CPU, pct(r.HotShare(*c)), r.SoftirqOff)
	case r.SoftirqOff != "":
		return na("NET_RX softirq time not recorded: " + r.SoftirqOff)
	case c != nil:
		return fmt.Sprintf("CPU %d at %s", c.CPU, pct(c.Share))
	}
	return "n/a"
}

// busiestStat returns the busiest CPU's figures, or nil.
func busiestStat(r *Report) *CPUStat {
	for i := range r.CPUs {
		if r.CPUs[i].CPU == r.BusiestCPU {
			return &r.CPUs[i]
		}
	}
	return nil
}

// ruleWire: steady state >= WireFraction of the rated link speed. A steady
// state above the rated speed by more than RatedExcess cannot be judged (the
// rated speed is wrong): the rule is Skipped and the other rules judge as if
// no rated speed were known (facts.belowRated).
func ruleWire(f *facts) Verdict {
	v := Verdict{Rule: RuleWire, Thresholds: []string{"steady state >= " + pct(f.th.WireFraction) + " of the rated link speed",
		"a steady state above " + pct(1+f.th.RatedExcess) + " of it means the rated speed is wrong (too low): skipped"}}
	switch {
	case f.r.RatedBps <= 0:
		v.Status, v.Summary = Skipped, "no rated speed (manifest rated_speed_mbps null): give --link-speed, e.g. 10Gbit"
		return v
	case f.steady == nil:
		v.Status, v.Summary = Skipped, "no steady state (no interval moved bytes)"
		return v
	}
	if f.ratedTooLow() {
		v.Evidence = []string{f.ratedWarning()}
		v.Status, v.Summary = Skipped, fmt.Sprintf("the rated %s (%s) is below the measured %s (%s of it): "+
			"the rated speed is too low, so whether the wire is the ceiling cannot be judged (check --link-speed)",
			fmtRate(f.r.Units, f.r.RatedBps), f.r.RatedSource, fmtRate(f.r.Units, f.link), pct(f.link/f.r.RatedBps))
		return v
	}
	v.Evidence = append([]string{f.linkEvidence()}, dropsEvidence(f.r)...)
	if below, _ := f.belowRated(); below {
		v.Status, v.Summary = NotFired, fmt.Sprintf("link at %s of rated", pct(f.link/f.r.RatedBps))
		return v
	}
	v.Status, v.Summary = Fired, "the wire is the ceiling: the link runs at its rated speed"
	return v
}

// ruleRateLimited: flat steady state below rated, high sender
// retransmits, no saturated core. Confirmed by --compare.
func ruleRateLimited(f *facts) Verdict {
	r, th, x := f.r, f.th, f.r.Retx
	v := Verdict{Rule: RuleRateLimited, Thresholds: []string{
		"steady-state interval rates flat: coefficient of variation <= " + pct(th.FlatCV) +
			" (of the interface counter when there is one: a limiter shapes the wire, while goodput per interval jitters with loss recovery)",
		"sender retransmits >= " + pct(th.RetxHigh) + " of segments sent",
		"no CPU at >= " + pct(th.SoftirqShare) + " NET_RX softirq; link below " + pct(th.WireFraction) + " of rated",
	}}
	switch {
	case f.steady == nil || f.steady.SteadyIntervals < 3:
		v.Status, v.Summary = Skipped, "fewer than 3 steady-state intervals: flatness not measurable"
		return v
	case x.Source == "" || x.SegmentsSent == 0:
		v.Status, v.Summary = Skipped, "no sender retransmits with segments sent (sender not in this trace, or probes off)"
		return v
	}
	fr, fw := flatnessCounter(r, f.steady)
	flat, high := fw.SteadyCV <= th.FlatCV, x.Fraction >= th.RetxHigh
	below, _ := f.belowRated()
	v.Evidence = []string{
		fmt.Sprintf("steady state (%s) varies by %s (CV over %d intervals)", fr.Label, pct(fw.SteadyCV), fw.SteadyIntervals),
		fmt.Sprintf("retransmits %d segments = %.3f%% of %d segments sent (%s / %s)", x.Segments, 100*x.Fraction,
			x.SegmentsSent, x.Source, x.SegmentsSource),
		f.linkEvidence(),
	}
	if f.hasCPU {
		v.Evidence = append(v.Evidence, "busiest softirq core: "+busiestCore(r))
	} else {
		v.Evidence = append(v.Evidence, "no cpus rows: a saturated core cannot be ruled out")
	}
	switch {
	case !flat:
		v.Status, v.Summary = NotFired, "throughput not flat"
	case !high:
		v.Status, v.Summary = NotFired, "retransmits not high"
	case !below || f.sat:
		v.Status, v.Summary = NotFired, "the link or a softirq core is saturated"
	default:
		v.Status, v.Summary = Fired, "suspected: flat throughput with high retransmits and no saturated core looks like a "+
			"rate limiter (policer) on the path; confirm with `netprof analyze --compare` of runs with more streams"
	}
	return v
}

// ruleWindow: at least WindowFlows of the sending flows run at >=
// WindowRatio of window / srtt, the window being snd_cwnd × mss or the
// socket buffer the run set (BDP.SocketWindow) when smaller (and the run
// is not wire-bound). A flow on its snd_cwnd × mss window does not count
// above WindowRatioMax of it (the window does not bind), nor when the
// host's CPUs are HostBusy busy (a CPU-bound sender's cwnd follows what
// it sends); a flow held by the socket buffer counts either way.
func ruleWindow(f *facts, wire bool) Verdict {
	th, d, r := f.th, &f.r.BDP, f.r
	v := Verdict{Rule: RuleWindow, Thresholds: []string{
		"a sending flow's steady rate >= " + pct(th.WindowRatio) + " of window / srtt, window = snd_cwnd x mss " +
			"(or the socket buffer set with --window, when smaller)",
		"and <= " + pct(th.WindowRatioMax) + " of it when the window is snd_cwnd x mss (above, that window evidently " +
			"does not bind; not applied to the --window socket buffer, of which the kernel keeps up to ~2x in flight)",
		"host CPUs < " + pct(th.HostBusy) + " busy (/proc/stat, " + orDash(r.CPUWindow) + "), unless the flow is held by " +
			"the --window socket buffer: a CPU-bound sender's snd_cwnd follows what it sends",
		"for >= " + pct(th.WindowFlows) + " of sending flows; not wire-bound",
		"or, from the kernel's chrono accounting (socket iterator; else the generator's streams' TCP_INFO, either end), " +
			"the receiver's window (tcp_rwnd_limited_us) or the send buffer (tcp_sndbuf_limited_us) held the sending flows >= " +
			pct(th.ChronoLimited) + " of their sending time",
	}}
	if len(f.send) == 0 {
		if sc := r.StreamChrono; sc != nil {
			return windowFromStreams(f, v, wire, sc)
		}
		v.Status, v.Summary = Skipped, noSendingFlow(r)
		return v
	}
	var n, below, above, cpu int
	ratios := make([]float64, 0, len(f.send))
	for _, fl := range f.send {
		x, capped := d.windowRatio(fl), d.capped(fl)
		ratios = append(ratios, x)
		switch {
		case x < th.WindowRatio:
			below++
		case !capped && x > th.WindowRatioMax:
			above++
		case !capped && f.cpuBound:
			cpu++
		default:
			n++
		}
	}
	v.Evidence = []string{
		fmt.Sprintf("%d of %d sending flows window-limited: >= %s of their window-limited rate, <= %s on a snd_cwnd x mss window "+
			"(median ratio %.2f; %d below, %d above %s, %d not counted on a CPU-bound host)",
			n, len(f.send), pct(th.WindowRatio), pct(th.WindowRatioMax), median(ratios), below, above, pct(th.WindowRatioMax), cpu),
		windowFlowEvidence(r),
	}
	if f.cpuBound {
		v.Evidence = append(v.Evidence, hostCPUEvidence(r))
	}
	ch, nch := sendingChrono(f.send)
	what := fmt.Sprintf("%d of %d sending flows", nch, len(f.send))
	if nch == 0 && r.StreamChrono != nil {
		ch, nch, what = r.StreamChrono.Chrono, r.StreamChrono.Streams, streamChronoWhat(r.StreamChrono)
	}
	if nch > 0 {
		v.Evidence = append(v.Evidence, chronoEvidence(ch, what))
	}
	v.Evidence = append(v.Evidence, bdpEvidence(r)...)
	if st, sum, ok := chronoVerdict(th, ch, nch, wire); ok {
		if st == Fired && d.SocketWindowGranted {
			sum += "; the kernel capped --window's socket buffer at " + fmtSize(int64(d.SocketWindow)) +
				": raise net.core.rmem_max and wmem_max first"
		}
		v.Status, v.Summary = st, sum
		return v
	}
	switch {
	case float64(n) >= th.WindowFlows*float64(len(f.send)):
		raise := "the window (tcp_wmem/tcp_rmem)"
		if d.SocketWindow > 0 {
			raise = "--window (the socket buffer each stream is held to)"
		}
		if d.SocketWindowGranted {
			raise = "net.core.rmem_max and wmem_max (the kernel capped --window's socket buffer at " + fmtSize(int64(d.SocketWindow)) + ")"
		}
		v.Status, v.Summary = Fired, "each stream is capped at window / RTT: raise "+raise+" or run more streams"
	case cpu > 0 && cpu >= above && cpu >= below:
		v.Status, v.Summary = NotFired, fmt.Sprintf("the host's CPUs were %s busy (/proc/stat): the CPU is the limit and "+
			"snd_cwnd merely follows what the sender sends (no --window socket buffer holds the flows)", pct(r.HostCPU.Busy))
	case above > 0 && above >= below:
		v.Status, v.Summary = NotFired, fmt.Sprintf("most sending flows move more than %s of snd_cwnd x mss / srtt: "+
			"that window does not bind", pct(th.WindowRatioMax))
	default:
		v.Status, v.Summary = NotFired, "most sending flows are below their window"
	}
	return v
}

// windowFromStreams judges the window rule on the generator's streams'
// chrono alone: no sending flow of this host (a peer sent to it).
func windowFromStreams(f *facts, v Verdict, wire bool, sc *StreamChrono) Verdict {
	v.Evidence = append([]string{"no sending flow on this host (" + noSendingFlow(f.r) + "): judged on the generator's " +
		"sending streams' TCP_INFO"}, chronoEvidence(sc.Chrono, streamChronoWhat(sc)))
	v.Evidence = append(v.Evidence, bdpEvidence(f.r)...)
	if st, sum, ok := chronoVerdict(f.th, sc.Chrono, sc.Streams, wire); ok {
		v.Status, v.Summary = st, sum
		return v
	}
	v.Status, v.Summary = NotFired, fmt.Sprintf("neither the receiver's window nor the send buffer held the streams "+
		"(%s and %s of their sending time, kernel chrono)", pct(sc.RwndShare()), pct(sc.SndbufShare()))
	return v
}

func streamChronoWhat(sc *StreamChrono) string {
	return fmt.Sprintf("%d generator sending streams (traffic: TCP_INFO of each stream's socket, on either end)", sc.Streams)
}

// chronoEvidence describes the chrono accounting of what (flows or
// streams) over the steady state.
func chronoEvidence(ch Chrono, what string) string {
	return fmt.Sprintf("kernel chrono, %s, steady state: of %.3f s with data to send (tcp_busy_us), "+
		"%s limited by the receiver's window (tcp_rwnd_limited_us), %s by the send buffer (tcp_sndbuf_limited_us), "+
		"%s by neither (cwnd, pacing or the application)", what, float64(ch.SendingUs())/1e6,
		pct(ch.RwndShare()), pct(ch.SndbufShare()), pct(max(0, 1-ch.RwndShare()-ch.SndbufShare())))
}

// chronoVerdict is the window rule's outcome from chrono (or from the
// link at its rated speed); ok false when chrono does not decide it.
func chronoVerdict(th Thresholds, ch Chrono, n int, wire bool) (VerdictStatus, string, bool) {
	switch {
	case wire:
		return NotFired, "the link is at its rated speed", true
	case n > 0 && ch.RwndShare() >= th.ChronoLimited && ch.RwndShare() >= ch.SndbufShare():
		return Fired, fmt.Sprintf("the receiver's window held the streams %s of their sending time (kernel chrono): "+
			"raise the receiver's buffer (tcp_rmem, or --window on the receiving end), make it read faster, or run more streams",
			pct(ch.RwndShare())), true
	case n > 0 && ch.SndbufShare() >= th.ChronoLimited:
		return Fired, fmt.Sprintf("the streams' own send buffer held them %s of their sending time (kernel chrono): "+
			"raise tcp_wmem or --window (the send buffer), or run more streams", pct(ch.SndbufShare())), true
	}
	return "", "", false
}

// noSendingFlow says why the window and sender rules have no sending flow
// to judge, naming the probes that did not run: netdev (the flows' bytes)
// or tcp (snd_cwnd, mss, srtt), or no flows rows at all.
func noSendingFlow(r *Report) string {
	s := "no sending flow with snd_cwnd, mss, srtt and steady-state bytes"
	var why []string
	for _, w := range []string{r.FlowBytesOff(), r.reasons[figFlowTCP]} {
		if w != "" {
			why = append(why, w)
		}
	}
	if len(why) == 0 && len(r.Flows) == 0 {
		why = append(why, r.reason(figRTT, "no flows rows"))
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s
}

// windowFlowEvidence describes the median flow's window, srtt and the rate
// they allow: one flow's steady-state figures, which multiply out.
// The window is labelled with the one that applied: the --window socket
// buffer (in binary units, as the user gave it) or snd_cwnd x mss.
func windowFlowEvidence(r *Report) string {
	d, u := &r.BDP, r.Units
	if d.PerStreamFlow == "" {
		return "per-stream window: n/a (no sending flow with a steady-state window and srtt)"
	}
	win, what := u.FormatBytes(d.PerStreamWindow), "snd_cwnd x mss, steady-state average"
	src := "--window"
	if d.SocketWindowGranted {
		src = "--window as the kernel gave it"
	}
	switch {
	case d.SocketWindow > 0 && d.PerStreamWindow >= d.SocketWindow:
		win, what = fmtSize(int64(d.SocketWindow)), "the socket buffer ("+src+"), smaller than its snd_cwnd x mss"
	case d.SocketWindow > 0:
		what += ", below the socket buffer " + fmtSize(int64(d.SocketWindow)) + " (" + src + ")"
	}
	return fmt.Sprintf("median flow by window-limited rate, %s: window %s (%s) x 8 / srtt %s "+
		"(steady state) = %s per stream", d.PerStreamFlow, win, what, fmtUs(d.SrttUs), fmtRate(u, d.PerStreamBps))
}

// bdpEvidence describes the BDP and the streams needed.
func bdpEvidence(r *Report) []string {
	d, u := r.BDP, r.Units
	if d.MinRTTUs == 0 {
		return []string{"BDP: no RTT samples"}
	}
	out := []string{fmt.Sprintf("BDP = steady state %s x min RTT %s = %s: what the path holds without queueing",
		fmtRate(u, d.RateBps), fmtUs(float64(d.MinRTTUs)), u.FormatBytes(d.Bytes))}
	if d.InFlightBytes > 0 {
		flows := "1 sending flow"
		if d.InFlightFlows != 1 {
			flows = fmt.Sprintf("%d sending flows", d.InFlightFlows)
		}
		line := fmt.Sprintf("in flight: %s kept %s (steady-state windows, summed)", flows, u.FormatBytes(d.InFlightBytes))
		if d.Bytes > 0 && d.InFlightBytes > 2*d.Bytes {
			x := d.InFlightBytes / d.Bytes
			prec := 0
			if x < 10 {
				prec = 1
			}
			line += fmt.Sprintf(", %.*fx the BDP: the rest was queued (qdisc, backlog, receive buffers) or awaiting ACKs", prec, x)
			if d.SrttUs > 0 {
				line += fmt.Sprintf(", hence srtt %s (median flow) over min RTT %s", fmtUs(d.SrttUs), fmtUs(float64(d.MinRTTUs)))
			}
		}
		out = append(out, line)
	}
	if d.Streams > 0 {
		out = append(out, fmt.Sprintf("target %s (%s) needs %s in flight: %s at %s each",
			fmtRate(u, d.TargetBps), d.TargetSource, u.FormatBytes(d.TargetBytes), streamsText(d.Streams), fmtRate(u, d.PerStreamBps)))
	} else {
		out = append(out, "streams needed: n/a ("+d.Missing+")")
	}
	return out
}

// ruleStorage: HTTP 503 in blob rows, with the rate drop they explain.
func ruleStorage(f *facts) Verdict {
	v := Verdict{Rule: RuleStorage, Thresholds: []string{"any HTTP 503 (ServerBusy) in traffic.http_503"}}
	b := f.r.Blob
	if b == nil {
		v.Status, v.Summary = Skipped, "no blob rows (traffic.http_503 absent: not a blob run)"
		return v
	}
	u := f.r.Units
	v.Evidence = []string{fmt.Sprintf("%d of %d requests answered 503, in %d of %d intervals (%d other HTTP errors)",
		b.HTTP503, b.Requests, b.Intervals503, b.Intervals, b.HTTPErrs)}
	if b.RateWith503Bps > 0 && b.RateWithout503Bps > 0 {
		v.Evidence = append(v.Evidence, fmt.Sprintf("median rate with 503s %s vs %s without (%+.1f%%)",
			fmtRate(u, b.RateWith503Bps), fmtRate(u, b.RateWithout503Bps), 100*(b.RateWith503Bps/b.RateWithout503Bps-1)))
	}
	if b.HTTP503 == 0 {
		v.Status, v.Summary = NotFired, "no 503s"
		return v
	}
	v.Status, v.Summary = Fired, "the object store throttled (503 ServerBusy): fewer parallel requests or larger blocks"
	return v
}

// squeezed returns c's softnet time squeezes per NET_RX run, false
// without the columns.
func squeezed(c CPUStat) (float64, bool) {
	if c.Softnet == nil {
		return 0, false
	}
	return c.Softnet.SqueezeRatio()
}

// iterMinRTTRows is how many flow-intervals of the socket iterator a peer
// needs for the hairpin rule when the run had no tcp_probe: each carries
// the kernel's min_rtt_us, the minimum over every ACK, not one sample.
const iterMinRTTRows = 3

// EnoughRTT reports whether s has enough RTT samples for the hairpin rule
// to judge its min RTT: MinRTTSamples, or without tcp_probe the kernel's
// min_rtt_us in iterMinRTTRows flow-intervals.
func (th Thresholds) EnoughRTT(s *RTTSummary) bool {
	return s != nil && (s.Samples >= th.MinRTTSamples || (s.FromIterator && s.KernelMinUs > 0 && s.Rows >= iterMinRTTRows))
}

// ruleHairpin: a peer's MIN RTT is above HairpinFactor × the on-link
// expectation.
func ruleHairpin(f *facts) Verdict {
	th := f.th
	expect := float64(th.HairpinExpectRTT.Microseconds()) // --expect-rtt, else the run's (Thresholds.withManifest)
	limit := th.HairpinFactor * expect
	v := Verdict{Rule: RuleHairpin, Thresholds: []string{fmt.Sprintf(
		"a peer's min RTT > %.3g x %s expected of an on-link peer = %s (>= %d samples, or without tcp_probe the kernel's "+
			"min_rtt_us, its minimum over every ACK, in >= %d flow-intervals; judged on min RTT, not loaded RTT)",
		th.HairpinFactor, fmtUs(expect), fmtUs(limit), th.MinRTTSamples, iterMinRTTRows)}}
	judged, worst := 0, 0.0
	var far []string
	for _, p := range f.r.Peers {
		if !th.EnoughRTT(p.RTT) {
			continue
		}
		judged++
		floor := float64(p.RTT.FloorUs())
		worst = math.Max(worst, floor)
		if floor > limit && len(far) < 5 {
			far = append(far, fmt.Sprintf("peer %s: min RTT %s (p50 %s) over %d flow(s)", p.Peer, fmtUs(floor),
				fmtUs(float64(p.RTT.P50Us)), p.Flows))
		}
	}
	if judged == 0 {
		v.Status, v.Summary = Skipped, "no peer with enough RTT samples ("+f.r.reason(figRTT, "no RTT samples")+")"
		return v
	}
	if len(far) == 0 {
		who := fmt.Sprintf("all %d peers' min RTT", judged)
		if judged == 1 {
			who = "the peer's min RTT"
		}
		v.Status, v.Summary = NotFired, fmt.Sprintf("%s <= %s (highest %s)", who, fmtUs(limit), fmtUs(worst))
		return v
	}
	v.Evidence = append(far, "if these peers are not on-link (another region, a delay line), set --expect-rtt")
	v.Status, v.Summary = Fired, "RTT far above what an on-link peer needs: traffic may hairpin through a gateway or load-balancer edge"
	return v
}

// ruleSender: sending flows use at most AppLimitedRatio of their window,
// with no saturated core, link, retransmits or rate limiter to blame.
func ruleSender(f *facts, wire, limiter, windowLimited bool) Verdict {
	th, r := f.th, f.r
	v := Verdict{Rule: RuleSender, Thresholds: []string{
		"median sending flow at <= " + pct(th.AppLimitedRatio) + " of window / srtt (window as in window/BDP-limited)",
		"no CPU at >= " + pct(th.SoftirqShare) + " NET_RX softirq, not wire-bound, retransmits < " + pct(th.RetxHigh),
		"host CPUs >= " + pct(th.HostBusy) + " busy (/proc/stat, all CPUs, " + orDash(r.CPUWindow) + "): the sender is CPU-bound",
		"not window-limited (that rule did not fire)",
	}}
	if len(f.send) == 0 {
		v.Status, v.Summary = Skipped, noSendingFlow(r)
		return v
	}
	ratios := make([]float64, 0, len(f.send))
	var actual, window float64
	for _, fl := range f.send {
		_, bps := r.BDP.windowOf(fl)
		ratios = append(ratios, r.BDP.windowRatio(fl))
		actual, window = actual+fl.SteadyBps, window+bps
	}
	med := median(ratios)
	u := r.Units
	v.Evidence = []string{fmt.Sprintf("sending flows used a median %s of their window: windows allow %s in total, flows moved %s (steady state)",
		pct(med), fmtRate(u, window), fmtRate(u, actual))}
	if f.hasCPU {
		v.Evidence = append(v.Evidence, "busiest softirq core: "+busiestCore(r), hostCPUEvidence(r))
	}
	high := r.Retx.SegmentsSent > 0 && r.Retx.Fraction >= th.RetxHigh
	ch, nch := sendingChrono(f.send)
	if nch == 0 && r.StreamChrono != nil {
		ch, nch = r.StreamChrono.Chrono, r.StreamChrono.Streams
	}
	if nch > 0 {
		v.Evidence = append(v.Evidence, fmt.Sprintf("kernel chrono (steady state): %s of the sending time limited by the receiver's "+
			"window, %s by the send buffer", pct(ch.RwndShare()), pct(ch.SndbufShare())))
	}
	switch {
	case med > th.AppLimitedRatio:
		v.Status, v.Summary = NotFired, "sending flows fill their window"
	case f.sat || wire || limiter || high || windowLimited:
		v.Status, v.Summary = NotFired, "another limit applies (saturated core, wire, retransmits, window)"
	case f.cpuBound:
		v.Status, v.Summary = Fired, fmt.Sprintf("the host's CPUs were %s busy (/proc/stat, %s): the sender is CPU-bound on this host "+
			"and did not fill its window (application, TCP stack and softirq work share those CPUs)", pct(r.HostCPU.Busy), r.CPUWindow)
	case nch > 0:
		v.Status, v.Summary = Fired, fmt.Sprintf("the sender did not fill its window and neither the receiver's window nor "+
			"the send buffer held it (only %s of its sending time, kernel chrono): the application or its CPU set the pace",
			pct(ch.RwndShare()+ch.SndbufShare()))
	default:
		v.Status, v.Summary = Fired, "the sender did not fill its window: the application (or its CPU, or the receiver's window) set the pace"
	}
	return v
}

// napiSeen reports whether any CPU has NAPI polls (the napi probe ran).
func napiSeen(cs []CPUStat) bool {
	for _, c := range cs {
		if c.NapiPolls > 0 {
			return true
		}
	}
	return false
}

// flatnessCounter returns the counter the rate-limited rule judges
// flatness on: the primary direction's interface (netlink) counter when it
// has at least 3 steady-state intervals — a shaper or policer makes the
// wire rate flat, while application bytes per interval jump as receivers
// wait for retransmissions and then read in bursts — else the primary
// counter with its windows w.
func flatnessCounter(r *Report, w *Windows) (*Rate, *Windows) {
	if nl := r.primaryDirection().Rate(CounterNetlink); nl != nil && nl.W != nil && nl.W.HasActive() && nl.W.SteadyIntervals >= 3 {
		return nl, nl.W
	}
	return r.Primary, w
}

// sendingChrono adds up the chrono accounting of the sending flows that
// have it; n is how many do.
func sendingChrono(send []FlowSummary) (c Chrono, n int) {
	for _, fl := range send {
		if fl.Chrono == nil {
			continue
		}
		n++
		c.BusyUs += fl.Chrono.BusyUs
		c.RwndLimitedUs += fl.Chrono.RwndLimitedUs
		c.SndbufLimitedUs += fl.Chrono.SndbufLimitedUs
	}
	return c, n
}

// dropsEvidence says where packets were lost when the drops probe saw a
// loss (skb:kfree_skb by reason, benign TCP discards alone are no evidence: a softirq-bound receiver drops in the backlog
// or socket, a full link in the qdisc), and which loss counters of the
// counted interfaces moved (a NIC out of receive buffers: rx_missed,
// rx_out_of_buffer); none when nothing was lost or nothing measured it.
func dropsEvidence(r *Report) []string {
	var ev []string
	if lost, _ := r.DropTotals(); lost > 0 {
		ev = append(ev, "packets dropped: "+r.DropsLine())
	}
	return append(ev, nicLossEvidence(r)...)
}
