package analysis

import (
	"fmt"
	"math"
)

// writeCPUs writes the per-CPU softirq table.
func (r *Report) writeCPUs(p *printer) {
	p.line("")
	p.line("per-CPU softirq (cpus table), window: %s (%s to %s)", orDash(r.CPUWindow),
		fmtTime(r.CPUWindowStart), fmtTime(r.CPUWindowEnd))
	if len(r.CPUs) == 0 {
		p.line("  %s", na(r.reason(figCPU, "no cpus rows: probes off")))
		return
	}
	rows := [][]string{{"  cpu", "NET_RX %", "all softirq % (/proc/stat)", "busy % (/proc/stat)", "NET_TX %",
		"max interval NET_RX %", "rx packets", "ns/packet", "NAPI budget exhausted %", "busiest in"}}
	for _, c := range r.CPUs {
		rows = append(rows, append([]string{fmt.Sprintf("  %d", c.CPU)}, r.CPUCells(c)...))
	}
	p.table(rows)
	p.line("  %% = softirq ns / interval ns; ns/packet = net_rx_softirq_ns / rx_packets; exhausted = napi_budget_exhausted / napi_polls")
	p.line("  NET_RX %% is exact for one softirq vector (BPF irq:softirq_entry/exit); all softirq %% and busy %% are /proc/stat " +
		"(what mpstat shows: tick-sampled, reported in 10 ms units (USER_HZ); softirq of every vector: TIMER, HRTIMER, TASKLET, NET_TX, NET_RX, RCU, ...; " +
		"busy = all but idle, iowait, steal), so all softirq - NET_RX is softirq work outside NET_RX (e.g. TCP pacing/TSQ transmit)")
	if r.HostCPU == nil {
		p.line("  all softirq %% and busy %%: %s", na(r.reason(figProcStat, noProcColumns)))
	}
	for _, l := range r.CPUColumnsNA() {
		p.line("  %s", l)
	}
	for _, c := range r.CPUs {
		if c.CPU == r.BusiestCPU && r.HotSource == HotAllSoftirq {
			p.line("  busiest CPU: %d (softirq of every vector %s of the %s, /proc/stat; NET_RX alone not measured)",
				c.CPU, pct(r.HotShare(c)), r.CPUWindow)
		}
		if c.CPU == r.BusiestCPU && r.SoftirqOff == "" {
			p.line("  busiest CPU: %d (NET_RX softirq %.1f%% of the %s%s); per interval the busiest CPU's share has median %s, CPU %d busiest in %d of %d intervals",
				c.CPU, c.Share*100, r.CPUWindow, allSoftirq(c), pct(r.BusiestMedianShare), c.CPU, c.BusiestIntervals, r.CPUIntervals)
		}
		if c.CPU == r.BusiestCPU && c.Softnet != nil {
			p.line("  CPU %d softnet (/proc/net/softnet_stat, %s): %s", c.CPU, r.CPUWindow, softnetText(c.Softnet))
		}
	}
	if h := r.HostCPU; h != nil {
		p.line("  host, all %d CPUs (/proc/stat, %s): busy %s, softirq of every vector %s", h.CPUs, r.CPUWindow, pct(h.Busy), pct(h.Softirq))
	}
	if s := r.SteeringLine(); s != "" {
		p.line("  receive steering (traffic.incoming_cpu: SO_INCOMING_CPU of each receiving stream, last measured interval): %s", s)
	}
	if s := r.PeerSteeringLine(); s != "" {
		p.line("  peer receive steering (traffic.incoming_cpu of the peer's receiving streams, from its interval reports: "+
			"SO_INCOMING_CPU on the peer, last measured interval): %s", s)
	}
}

// writeRTT writes the run's RTT summary.
func (r *Report) writeRTT(p *printer) {
	p.line("")
	p.line("TCP RTT, all flows (flows.rtt_*: samples at tcp_probe, whole run, µs; the trace keeps each flow-interval's min/p50/p99/max, " +
		"not the samples: p50 = samples-weighted median of the per-interval p50s, p99 = samples-weighted 99th percentile of the " +
		"per-interval p99s (not the p99 of all samples); min and max are exact)")
	if r.RTT == nil {
		p.line("  %s", na(r.reason(figRTT, "no RTT samples")))
		return
	}
	t := r.RTT
	if t.FromIterator {
		p.line("  without tcp_probe: each flow-interval's one sample is the socket iterator's tcp_last_rtt_us (the socket's " +
			"latest RTT sample when it was read), so p50/p99 are of those samples")
	}
	kmin := ""
	if t.KernelMinUs > 0 {
		kmin = fmt.Sprintf(" (kernel min_rtt_us %d µs)", t.KernelMinUs)
	}
	p.table([][]string{
		{"  p50 (of per-interval p50s)", fmt.Sprintf("%d µs", t.P50Us)},
		{"  p99 (of per-interval p99s)", fmt.Sprintf("%d µs", t.P99Us)},
		{"  min", fmt.Sprintf("%d µs%s", t.MinUs, kmin)},
		{"  max", fmt.Sprintf("%d µs", t.MaxUs)},
		{"  samples", fmt.Sprintf("%d (in %d flow-intervals)", t.Samples, t.Rows)},
	})
	at := "at tcp_probe"
	if t.FromIterator {
		at = "when the iterator read the socket"
	}
	p.line("  the samples are tp->rack.rtt_us %s (the newest acked segment's RTT, what BBR and min_rtt use); srtt in the "+
		"flows table (tp->srtt_us) is smoothed and, under bulk load, follows older segments that waited in the send path, so it runs higher", at)
}

// rttCells formats min/p50/p99 of s in µs.
func rttCells(s *RTTSummary) []string {
	if s == nil {
		return []string{"-", "-", "-"}
	}
	return []string{fmt.Sprint(s.FloorUs()), fmt.Sprint(s.P50Us), fmt.Sprint(s.P99Us)}
}

// writePeers writes RTT per peer.
func (r *Report) writePeers(p *printer) {
	if len(r.Peers) == 0 {
		return
	}
	p.line("")
	p.line("peers (flows.dst_addr, whole run; RTT in µs)")
	rows := [][]string{{"  peer", "flows", "min RTT", "p50 RTT", "p99 RTT", "tx bytes", "rx bytes"}}
	bytesOff := r.FlowBytesOff() != ""
	for i, x := range r.Peers {
		if i == TextFlows {
			p.line("  (%d more %s in --json)", len(r.Peers)-TextFlows, oneMany(len(r.Peers)-TextFlows, "peer", "peers"))
			break
		}
		rows = append(rows, append(append([]string{"  " + x.Peer, fmt.Sprint(x.Flows)}, rttCells(x.RTT)...),
			countCell(x.TxBytes, bytesOff), countCell(x.RxBytes, bytesOff)))
	}
	p.table(rows)
	if bytesOff {
		p.line("  tx bytes, rx bytes: %s", na(r.FlowBytesOff()))
	}
}

// writeFlows writes the largest flows.
func (r *Report) writeFlows(p *printer) {
	if len(r.Flows) == 0 {
		return
	}
	u := r.Units
	p.line("")
	p.line("flows (largest %d of %d by bytes; rates over the steady state in %s; RTT in µs)", min(TextFlows, len(r.Flows)),
		len(r.Flows), u.RateUnit())
	rows := [][]string{{"  flow (local -> remote)", "side", "gen", "tx bytes", "rx bytes", "steady rate",
		"window (steady avg)", "srtt (steady)", "window x 8 / srtt", "ratio", "last cwnd", "mss", "last srtt",
		"min RTT", "p50 RTT", "p99 RTT", "retx"}}
	bytesOff, retxOff, capped, payload := r.FlowBytesOff() != "", r.FlowRetxOff(), false, false
	for i, f := range r.Flows {
		if i == TextFlows {
			break
		}
		side, gen, ratio := "receiving", "", "-"
		if f.Sending {
			side = "sending"
		}
		if f.Generator {
			gen = "yes"
		}
		// the window the verdicts use: snd_cwnd x mss, or the --window
		// socket buffer when smaller (BDP.windowOf)
		win, winBps := r.BDP.windowOf(f)
		winCell := dashIf0(win, u.FormatBytes(win))
		if r.BDP.capped(f) {
			winCell, capped = fmtSize(int64(win))+" (--window)", true
		}
		if x := r.BDP.windowRatio(f); x > 0 {
			ratio = fmt.Sprintf("%.2f", x)
		}
		steady := u.FormatRate(f.SteadyBps)
		switch {
		case f.PayloadRate:
			steady += " (payload)"
			payload = true
		case bytesOff:
			steady = "n/a"
		}
		row := []string{"  " + f.Src + " -> " + f.Dst, side, gen, countCell(f.TxBytes, bytesOff), countCell(f.RxBytes, bytesOff),
			steady, winCell,
			dashIf0(f.SteadySrttUs, fmt.Sprintf("%.0f", f.SteadySrttUs)), dashIf0(winBps, u.FormatRate(winBps)), ratio,
			dashIf0(float64(f.Cwnd), fmt.Sprint(f.Cwnd)), dashIf0(float64(f.MSS), fmt.Sprint(f.MSS)),
			dashIf0(float64(f.SrttUs), fmt.Sprint(f.SrttUs))}
		rows = append(rows, append(append(row, rttCells(f.RTT)...), countCell(f.Retransmits, retxOff != "")))
	}
	p.table(rows)
	switch {
	case bytesOff && payload:
		p.line("  tx bytes, rx bytes: %s; steady rate (payload) = flows.tcp_bytes_acked (sending) or tcp_bytes_received "+
			"(receiving) over the steady state, the socket iterator's payload counters: no L2/IP/TCP headers", na(r.FlowBytesOff()))
	case bytesOff:
		p.line("  tx bytes, rx bytes, steady rate: %s", na(r.FlowBytesOff()))
	}
	if why := r.reasons[figFlowTCP]; why != "" {
		p.line("  window, srtt, cwnd, mss: %s", na(why))
	}
	if retxOff != "" {
		p.line("  retx: %s", na(retxOff))
	}
	if capped {
		p.line("  window (--window) = the socket buffer the run set, %s, which is smaller than the flow's snd_cwnd x mss "+
			"and holds what it keeps in flight; window x 8 / srtt and ratio use it", fmtSize(int64(r.BDP.SocketWindow)))
	}
	p.line("  window (steady avg) = snd_cwnd x mss averaged over the steady state; srtt (steady) = the srtt that goes with it " +
		"(window-weighted harmonic mean); window x 8 / srtt = the window-limited rate, time-averaged; ratio = steady rate / it; " +
		"last cwnd (segments) and last srtt (µs) are the flow's last sample, not steady-state figures")
}

// writeBDP writes the bandwidth-delay product and streams needed.
func (r *Report) writeBDP(p *printer) {
	p.line("")
	p.line("bandwidth-delay product (steady state x min RTT of the sending flows) and what was in flight")
	if r.BDP.MinRTTUs == 0 || r.BDP.RateBps == 0 {
		p.line("  %s", na("needs a steady state and RTT samples"))
		return
	}
	for _, e := range bdpEvidence(r) {
		p.line("  %s", e)
	}
}

// writeRetransmits writes sender, BPF and receiver retransmits with rates
// and the trend.
func (r *Report) writeRetransmits(p *printer) {
	p.line("")
	p.line("retransmits (whole run, TCP segments, counted on the sender)")
	x := r.Retx
	rows := [][]string{
		{"  sender (traffic.tcp_retransmits, TCP_INFO)", optCount(r.SenderRetransmits, r.reason(figSndRetx, "not recorded"))},
		{"  all flows (flows.retransmits, " + r.flowRetxCounter() + ")", optCount(r.FlowRetransmits, r.reason(figFlowRetx, "probes off"))},
		{"  receiver", na("counted on the sender")},
	}
	if x.Source != "" {
		perGB := na("nothing sent")
		if x.SentBytes > 0 {
			perGB = fmt.Sprintf("%.1f per GB (10^9 B of %s)", x.PerGB, x.SentSource)
		}
		frac := na("segments sent unknown")
		if x.SegmentsSent > 0 {
			frac = fmt.Sprintf("%.3f%% of %d segments (%s)", 100*x.Fraction, x.SegmentsSent, x.SegmentsSource)
		}
		rows = append(rows, []string{"  rate (" + x.Source + ")", perGB}, []string{"  share of segments sent", frac},
			[]string{"  trend (run halves split at " + fmtTime(x.Split) + ")", trendLine(x)})
	}
	p.table(rows)
}

// trendLine formats the first- vs second-half retransmits.
func trendLine(x RetxSummary) string {
	if x.Split.IsZero() {
		return na("run bounds unknown")
	}
	s := fmt.Sprintf("first half %d (%s), second half %d (%s)", x.FirstHalf, perGBStr(x.FirstPerGB),
		x.SecondHalf, perGBStr(x.SecondPerGB))
	if x.FirstPerGB > 0 && !math.IsNaN(x.SecondPerGB) {
		s += fmt.Sprintf(": x%.2f per GB", x.SecondPerGB/x.FirstPerGB)
	}
	return s
}

func perGBStr(v float64) string {
	if math.IsNaN(v) {
		return "per GB n/a"
	}
	return fmt.Sprintf("%.1f per GB", v)
}

// optCount formats an optional counter.
func optCount(v *uint64, why string) string {
	if v == nil {
		return na(why)
	}
	return fmt.Sprintf("%d", *v)
}

// writeVerdictSummary writes the fired verdicts in one line.
func (r *Report) writeVerdictSummary(p *printer) {
	p.line("")
	fired := r.FiredVerdicts()
	if len(fired) == 0 {
		p.line("verdict: none")
		return
	}
	p.line("verdict: %s (details under \"verdicts\")", p.bold(fmt.Sprint(fired)))
}

// writeVerdicts writes every rule with its status, evidence and thresholds.
func (r *Report) writeVerdicts(p *printer) {
	p.line("")
	p.line("verdicts (rules in docs/report.md; evidence and thresholds beside each)")
	for _, v := range r.Verdicts {
		name := v.Rule
		if v.Fired() {
			name = p.bold(name)
		}
		p.line("  %s: %s - %s", name, v.Status, v.Summary)
		if v.Status == Skipped {
			continue
		}
		for _, e := range v.Evidence {
			p.line("      evidence: %s", e)
		}
		for _, t := range v.Thresholds {
			p.line("      threshold: %s", t)
		}
	}
}

// countCell formats a counter, or "n/a" when its program did not run
// (the reason is printed once below the table).
func countCell(v uint64, off bool) string {
	if off {
		return "n/a"
	}
	return fmt.Sprint(v)
}

// dashIf0 returns "-" when v is 0 (not measured), else s.
func dashIf0(v float64, s string) string {
	if v == 0 {
		return "-"
	}
	return s
}

// packetCostCell is a CPU's NET_RX ns per packet, or n/a with why ("n/a"
// alone when off: the softirq or netdev probe did not run).
func packetCostCell(c CPUStat, off bool) string {
	switch {
	case off:
		return "n/a"
	case c.RxPackets == 0:
		return na("no packets")
	case c.PacketCostNs == 0:
		return na("no NET_RX time: received outside softirq")
	}
	return fmt.Sprintf("%.0f", c.PacketCostNs)
}

// ExhaustedCell formats a CPU's NAPI budget exhaustion (percent of polls),
// or n/a: "n/a" when the napi probe did not run (Report.NapiOff, which
// CPUColumnsNA says once), else "n/a (no polls)".
func (r *Report) ExhaustedCell(c CPUStat) string {
	switch {
	case r.NapiOff != "":
		return "n/a"
	case c.NapiPolls == 0:
		return na("no polls")
	}
	return fmt.Sprintf("%.1f", 100*c.ExhaustedRatio)
}

// CPUCells are a CPU's cells of the per-CPU table after its number:
// NET_RX %, all softirq % and busy % (/proc/stat), NET_TX %, max interval
// NET_RX %, rx packets, ns/packet, NAPI budget exhausted %, busiest in.
// A figure whose probe did not run is "n/a"; CPUColumnsNA says why.
func (r *Report) CPUCells(c CPUStat) []string {
	rx, tx, maxRx := fmt.Sprintf("%.1f", c.Share*100), fmt.Sprintf("%.1f", c.TxShare*100), fmt.Sprintf("%.1f", c.MaxShare*100)
	busiestIn := fmt.Sprintf("%d/%d", c.BusiestIntervals, r.CPUIntervals)
	if r.SoftirqOff != "" {
		rx, tx, maxRx, busiestIn = "n/a", "n/a", "n/a", "n/a"
	}
	pkts := fmt.Sprint(c.RxPackets)
	if r.RxPacketsOff != "" {
		pkts = "n/a"
	}
	return []string{rx, c.ProcCell(false), c.ProcCell(true), tx, maxRx, pkts, packetCostCell(c, r.SoftirqOff != "" || r.RxPacketsOff != ""),
		r.ExhaustedCell(c), busiestIn}
}

// CPUColumnsNA says, one line per cause, which per-CPU columns are n/a
// because their probe did not run, and why (Report.SoftirqOff,
// RxPacketsOff, NapiOff).
func (r *Report) CPUColumnsNA() []string {
	var out []string
	if r.SoftirqOff != "" {
		out = append(out, "NET_RX %, NET_TX %, max interval NET_RX %, ns/packet, busiest in (largest NET_RX share per interval): "+na(r.SoftirqOff))
	}
	if r.RxPacketsOff != "" {
		what := "rx packets, ns/packet"
		if r.SoftirqOff != "" {
			what = "rx packets"
		}
		out = append(out, what+": "+na(r.RxPacketsOff))
	}
	if r.NapiOff != "" {
		out = append(out, "NAPI budget exhausted %: "+na(r.NapiOff))
	}
	return out
}

// softnetText describes a CPU's softnet counters in words.
func softnetText(sn *SoftnetStat) string {
	runs := ""
	if q, ok := sn.SqueezeRatio(); ok {
		runs = fmt.Sprintf(" in %d NET_RX runs (/proc/softirqs): %s of runs", sn.NetRxRuns, pct(q))
	}
	return fmt.Sprintf("%d skbs processed, %d time squeezes (net_rx_action stopped with work left: budget or time)%s, "+
		"%d backlog drops, %d flow-limit drops, %d RPS IPIs received", sn.Processed, sn.TimeSqueeze, runs, sn.Dropped,
		sn.FlowLimitDrops, sn.ReceivedRPS)
}
