package analysis

// JSON returns the report in its machine-readable form (decimal units
// whatever r.Units says).
func (r *Report) JSON() JSONReport {
	out := JSONReport{
		RunDir: r.Dir, Status: r.Manifest.Status, RunStart: r.RunStart, RunEnd: r.RunEnd,
		RatedGbps: optF(r.RatedBps/1e9, true), RatedSource: r.RatedSource,
		Throughput: JSONThroughput{Rx: jsonDirection(&r.Rx), Tx: jsonDirection(&r.Tx)},
		CPUWindow:  r.CPUWindow, CPUs: []JSONCPU{}, CPUsNeverOnline: r.CPUsNeverOnline, Peers: []JSONPeer{}, Flows: []JSONFlow{},
		ControlFlows: r.ControlFlows, ControlFlowBytes: r.ControlBytes,
		BDP: jsonBDP(r.BDP), Retransmits: jsonRetx(r), Verdicts: []JSONVerdict{},
		FiredVerdicts: append([]string{}, r.FiredVerdicts()...), Notes: append([]string{}, r.Notes...),
	}
	if r.Primary != nil {
		out.PrimaryCounter = r.PrimaryDir + " " + r.Primary.Counter
	}
	for _, c := range r.CPUs {
		out.CPUs = append(out.CPUs, r.jsonCPU(c))
	}
	if r.BusiestCPU >= 0 && len(r.CPUs) > 0 {
		b := r.BusiestCPU
		out.BusiestCPU = &b
		if r.SoftirqOff == "" {
			out.BusiestMedian = optF(100*r.BusiestMedianShare, false)
		}
		out.CPUFiguresNA = r.cpuFiguresNA()
	}
	if h := r.HostCPU; h != nil {
		out.HostCPU = &JSONHostCPU{BusyPct: 100 * h.Busy, SoftirqPct: 100 * h.Softirq, CPUs: h.CPUs, TotalNs: h.TotalNs}
	}
	out.RTT = jsonRTT(r.RTT)
	out.FlowTable, out.SocketTable = jsonFlowTable(r.FlowTable), jsonSocketTable(r.SocketTable)
	out.ProbeCost, out.ProbeCostNA = jsonProbeCost(r)
	if r.Drops == nil {
		out.DropsNA = r.reason(figDrops, "drops probe did not run")
	} else {
		out.Drops = []JSONDrop{}
		for _, d := range r.Drops {
			out.Drops = append(out.Drops, JSONDrop{Reason: d.Reason, Class: d.Class, Meaning: d.Why, Packets: d.Packets, Bytes: d.Bytes, CPUs: d.CPUs})
		}
		lost, benign := r.DropTotals()
		out.DropsLost, out.DropsBenign = &lost, &benign
	}
	if r.NICLoss == nil {
		out.NICLossNA = r.reason(figNICLoss, "no interface counters")
	} else {
		out.NICLoss = []JSONNICLoss{}
		for _, l := range r.NICLoss {
			out.NICLoss = append(out.NICLoss, JSONNICLoss{Ifname: l.Ifname, Counter: l.Counter, Source: l.Source, Queue: l.Queue, Count: l.Value})
		}
	}
	out.ReceiveSteering = []JSONSteering{}
	for _, s := range r.Steering {
		out.ReceiveSteering = append(out.ReceiveSteering, JSONSteering{Stream: s.Stream, Local: s.Local, Remote: s.Remote,
			CPU: s.CPU, NapiID: optU32(s.NapiID), Bytes: s.Bytes, CPUChanges: s.Moved, Peer: s.Peer})
	}
	bytesOff, retxOff := r.FlowBytesOff() != "", r.FlowRetxOff() != ""
	for _, p := range r.Peers {
		out.Peers = append(out.Peers, JSONPeer{Peer: p.Peer, Flows: p.Flows, TxBytes: optU64(p.TxBytes, bytesOff),
			RxBytes: optU64(p.RxBytes, bytesOff), RTT: jsonRTT(p.RTT)})
	}
	for _, f := range r.Flows {
		out.Flows = append(out.Flows, jsonFlow(f, &r.BDP, bytesOff, retxOff))
	}
	for _, v := range r.Verdicts {
		out.Verdicts = append(out.Verdicts, JSONVerdict{Rule: v.Rule, Status: string(v.Status), Summary: v.Summary,
			Evidence: append([]string{}, v.Evidence...), Thresholds: append([]string{}, v.Thresholds...)})
	}
	return out
}

func (r *Report) jsonCPU(c CPUStat) JSONCPU {
	softirqOff, pktsOff, napiOff := r.SoftirqOff != "", r.RxPacketsOff != "", r.NapiOff != ""
	out := JSONCPU{CPU: c.CPU, NetRxSharePct: optF(100*c.Share, softirqOff), NetTxSharePct: optF(100*c.TxShare, softirqOff),
		MaxIntervalPct: optF(100*c.MaxShare, softirqOff), RxPackets: optU64(c.RxPackets, pktsOff),
		PacketCostNs: optF(c.PacketCostNs, c.RxPackets == 0 || softirqOff || pktsOff || c.PacketCostNs == 0),
		NapiPolls:    optU64(c.NapiPolls, napiOff), NapiExhausted: optU64(c.NapiExhausted, napiOff),
		NapiExhaustedPct: optF(100*c.ExhaustedRatio, c.NapiPolls == 0 || napiOff), IntervalsInWindow: c.Intervals}
	if softirqOff {
		out.NetRxSharePct, out.NetTxSharePct, out.MaxIntervalPct = nil, nil, nil
	} else {
		n := c.BusiestIntervals
		out.BusiestIntervals = &n
	}
	if p := c.Proc; p != nil {
		out.ProcSoftirqPct, out.ProcBusyPct = optF(100*p.Softirq, false), optF(100*p.Busy, false)
	}
	if sn := c.Softnet; sn != nil {
		out.SoftnetProcessed, out.SoftnetDropped, out.SoftnetTimeSqueeze = ptrU64(sn.Processed), ptrU64(sn.Dropped), ptrU64(sn.TimeSqueeze)
		out.SoftnetReceivedRPS, out.SoftnetFlowLimit = ptrU64(sn.ReceivedRPS), ptrU64(sn.FlowLimitDrops)
	}
	return out
}

// cpuFiguresNA maps the JSON keys of the per-CPU figures whose probe did
// not run to the reason (Report.SoftirqOff, RxPacketsOff, NapiOff); nil
// when every one was measured.
func (r *Report) cpuFiguresNA() map[string]string {
	out := map[string]string{}
	for _, g := range []struct {
		why  string
		keys []string
	}{
		{r.SoftirqOff, []string{"net_rx_softirq_pct", "net_tx_softirq_pct", "net_rx_softirq_max_interval_pct", "net_rx_ns_per_packet",
			"busiest_intervals", "busiest_cpu_per_interval_median_pct"}},
		{r.RxPacketsOff, []string{"rx_packets", "net_rx_ns_per_packet"}},
		{r.NapiOff, []string{"napi_polls", "napi_budget_exhausted", "napi_budget_exhausted_pct"}},
	} {
		for _, k := range g.keys {
			if _, set := out[k]; g.why != "" && !set {
				out[k] = g.why
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func jsonDirection(d *Direction) JSONDirection {
	out := JSONDirection{Interface: d.Iface, MTU: d.IfaceMTU}
	for _, rt := range d.Rates {
		w := jsonWindows(rt)
		switch rt.Counter {
		case CounterApp:
			out.Application = w
		case CounterNetlink:
			out.InterfaceNetlink = w
		case CounterBPF:
			out.InterfaceBPF = w
		case CounterWire:
			out.WireEstimate = w
		}
	}
	if g := d.Gap; g != nil {
		out.Gap = &JSONGap{AppBytes: g.AppBytes, WireBytes: g.WireBytes, Pct: g.Pct, MTU: g.MTU, MSS: g.MSS,
			ExpectedPct: optF(g.ExpectedPct, true)}
		if g.ExpectedPct != 0 {
			h, l2, fr := g.HeaderBytes, g.L2Bytes, g.FramingBytes
			out.Gap.HeaderBytes, out.Gap.HeaderSource, out.Gap.L2Bytes, out.Gap.FramingBytes = &h, g.HeaderSource, &l2, &fr
		}
	}
	return out
}

func jsonWindows(rt Rate) *JSONWindows {
	w := rt.W
	if w == nil {
		return nil
	}
	return &JSONWindows{
		Source:   rt.Source,
		PeakGbps: w.PeakBps / 1e9, PeakAt: optTime(w.PeakAt),
		SteadyGbps: w.SteadyBps / 1e9, SteadyApprox: w.SteadyApprox,
		SteadyStart: optTime(w.SteadyStart), SteadyEnd: optTime(w.SteadyEnd),
		SteadyIntervals: w.SteadyIntervals, SteadyCVPct: cvPct(w),
		WholeRunGbps: w.WholeRunBps / 1e9, P50Gbps: w.P50Bps / 1e9, P95Gbps: w.P95Bps / 1e9,
		ActiveStart: optTime(w.ActiveStart), ActiveEnd: optTime(w.ActiveEnd),
		ActiveSeconds: w.ActiveLength().Seconds(), ActiveIntervals: w.ActiveIntervals,
		TotalBytes: w.TotalBytes, Intervals: w.Intervals,
	}
}

// cvPct is the steady state's coefficient of variation in percent, or nil
// with fewer than 2 steady-state intervals (the text says "n/a with one
// interval").
func cvPct(w *Windows) *float64 {
	if w.SteadyIntervals < 2 {
		return nil
	}
	return optF(100*w.SteadyCV, false)
}

func jsonRTT(t *RTTSummary) *JSONRTT {
	if t == nil {
		return nil
	}
	return &JSONRTT{P50Us: t.P50Us, P99Us: t.P99Us, MinUs: t.MinUs, MaxUs: t.MaxUs, KernelMinUs: optU32(t.KernelMinUs), Samples: t.Samples}
}

// jsonFlow converts f; bytesOff and retxOff null the byte and
// retransmit figures of programs that did not run (their columns hold 0).
// The window figures are BDP.windowOf's: snd_cwnd x mss, or the --window
// socket buffer when smaller, as the verdicts use.
func jsonFlow(f FlowSummary, d *BDP, bytesOff, retxOff bool) JSONFlow {
	win, winBps := d.windowOf(f)
	out := JSONFlow{Src: f.Src, Dst: f.Dst, Netns: f.Netns, Proto: f.Proto, Generator: f.Generator, Sending: f.Sending,
		TxBytes: optU64(f.TxBytes, bytesOff), RxBytes: optU64(f.RxBytes, bytesOff), Retransmits: optU64(f.Retransmits, retxOff),
		SteadyGbps: optF(f.SteadyBps/1e9, false),
		WindowGbps: optF(winBps/1e9, true), WindowBytes: optF(win, true), SteadySrttUs: optF(f.SteadySrttUs, true),
		CwndSegments: optU32(f.Cwnd), MSSBytes: optU32(f.MSS), SrttUs: optU32(f.SrttUs), RTT: jsonRTT(f.RTT),
		WindowRatioPct: optF(100*d.windowRatio(f), true)}
	if bytesOff && !f.PayloadRate {
		out.SteadyGbps = nil
	}
	if f.PayloadRate {
		out.SteadyCounter = "payload: flows.tcp_bytes_acked (sending) / tcp_bytes_received (receiving)"
	} else if out.SteadyGbps != nil {
		out.SteadyCounter = "L2: flows.tx_bytes (sending) / rx_bytes (receiving)"
	}
	if f.TCPBytes {
		out.AckedBytes, out.ReceivedBytes = ptrU64(f.AckedBytes), ptrU64(f.ReceivedBytes)
	}
	return out
}

func jsonBDP(d BDP) JSONBDP {
	out := JSONBDP{RateGbps: d.RateBps / 1e9, MinRTTUs: d.MinRTTUs, Bytes: d.Bytes,
		TargetGbps: optF(d.TargetBps/1e9, true), TargetBytes: optF(d.TargetBytes, true),
		PerStreamFlow: d.PerStreamFlow, PerStreamGbps: optF(d.PerStreamBps/1e9, true), PerStreamWindow: optF(d.PerStreamWindow, true),
		PerStreamSrttUs: optF(d.SrttUs, true), Missing: d.Missing,
		InFlightBytes: optF(d.InFlightBytes, true), InFlightFlows: d.InFlightFlows}
	if d.Streams > 0 {
		s := d.Streams
		out.Streams = &s
	}
	return out
}

func jsonRetx(r *Report) JSONRetransmits {
	x := r.Retx
	noHalves := x.Source == "" || x.Split.IsZero() // no counter, or no run start/end to split at
	out := JSONRetransmits{SenderTCPInfo: r.SenderRetransmits, Flows: r.FlowRetransmits, Source: x.Source,
		FirstHalf: optU64(x.FirstHalf, noHalves), SecondHalf: optU64(x.SecondHalf, noHalves),
		FirstPerGB: optF(x.FirstPerGB, false), SecondPerGB: optF(x.SecondPerGB, false)}
	if r.FlowRetransmits != nil {
		out.FlowsSource = "flows.retransmits (" + r.flowRetxCounter() + ")"
	} else {
		out.FlowsNA = r.reason(figFlowRetx, "no flows rows")
	}
	if x.Source == "" {
		out.FirstPerGB, out.SecondPerGB = nil, nil
	}
	if x.SentBytes > 0 {
		out.PerGB = optF(x.PerGB, false)
	}
	if x.SegmentsSent > 0 {
		s := x.SegmentsSent
		out.SegmentsSent, out.SharePct = &s, optF(100*x.Fraction, false)
	}
	return out
}
