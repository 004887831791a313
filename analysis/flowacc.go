package analysis

import "time"

// flowKey identifies a flow: one socket's 5-tuple in one namespace, the
// addresses as string ids of the flows source. The ifindex is not part of
// it: the tcp probe's rows (RTT, cwnd) carry no interface, the netdev
// probe's rows (bytes) do, and they describe the same socket.
type flowKey struct {
	netns         uint64
	src, dst      uint32
	sport, dport  uint16
	family, proto uint8
}

// flowState accumulates one flow. The fields every row updates come
// first, the addresses (read once, at the end) last.
type flowState struct {
	key flowKey
	// next is the flow whose row followed this flow's last row (-1: none
	// yet): rows of an interval usually come in the same order as in the
	// previous one, so it predicts the next row's flow without hashing.
	next                 int32
	ifindex              int32
	cwnd, mss, srtt      uint32
	tx, rx, txPkts, retx uint64
	steadyTx, steadyRx   uint64
	// acked and received are the socket iterator's payload counters
	// (tcp_bytes_acked, tcp_bytes_received), whole run and steady state;
	// tcpBytes: a row had them.
	acked, received, dataSegs   uint64
	steadyAcked, steadyReceived uint64
	tcpBytes                    bool
	// chrono sums the kernel's sending-time accounting over the steady
	// state (tcp_busy_us, tcp_rwnd_limited_us, tcp_sndbuf_limited_us);
	// hasChrono: a steady row had it.
	chrono           [3]uint64
	hasChrono        bool
	steadyNs, winNs  int64
	winSum, winBytes float64
	lastSteady       int64 // end (Unix ns) of the last steady interval counted
	rtt              rttDist
	src, dst         string
}

// flowAcc accumulates the flows table, in row order.
type flowAcc struct {
	// steadyLo and steadyHi bound the steady state (Unix ns) when
	// steadyOn; a row counts when its interval's midpoint is inside.
	steadyOn           bool
	steadyLo, steadyHi int64
	index              map[flowKey]int32 // into flows
	flows              []flowState       // in order of first row
	last               int32             // flow of the last row (-1: none)
	retx               series            // all flows' retransmits per interval (count in Bytes)
	total              uint64
	rows               int
	// iterRTT: the run had the socket iterator and not tcp_probe, so each
	// row's tcp_last_rtt_us is its RTT sample (rttDist.add).
	iterRTT bool
}

func (a *flowAcc) init(b *builder) {
	a.index, a.flows, a.last = map[flowKey]int32{}, nil, -1
	if w := b.r.steady(); w != nil && w.SteadyIntervals > 0 {
		a.steadyOn, a.steadyLo, a.steadyHi = true, w.SteadyStart.UnixNano(), w.SteadyEnd.UnixNano()
	}
	_, probeDown := b.r.programDown("np_tcp_probe")
	a.iterRTT = probeDown && b.r.programAttached("np_tcp_iter")
}

// add returns the batch function for flowBatches.
func (a *flowAcc) add(b *builder) func([]*flowBatch) error {
	return func(batches []*flowBatch) error {
		for _, fb := range batches {
			a.batch(b, fb)
		}
		return nil
	}
}

// batch adds every row of fb. Retransmits are added to the series once
// per run of rows of one interval.
func (a *flowAcc) batch(b *builder, fb *flowBatch) {
	a.rows += fb.n
	extendBounds(&b.rows, fb)
	var run retxRun
	for i := range fb.n {
		if !a.plausible(b, fb, i) {
			continue
		}
		if fb.end[i] != run.end || run.n == 0 {
			run.flush(&a.retx)
			run = retxRun{end: fb.end[i]}
		}
		run.n++
		run.count += fb.retx[i]
		run.ivNs = max(run.ivNs, fb.ivNs[i])
		a.row(fb, i)
	}
	run.flush(&a.retx)
}

// plausible checks row i's tx and rx bytes as anomalies.plausible does,
// without building times for the common, plausible case.
func (a *flowAcc) plausible(b *builder, fb *flowBatch, i int) bool {
	iv := fb.ivNs[i]
	if iv > 0 {
		secs := float64(iv) / 1e9
		if float64(fb.tx[i])*8/secs <= b.anom.limitBps && float64(fb.rx[i])*8/secs <= b.anom.limitBps {
			return true
		}
	}
	end := time.Unix(0, fb.end[i]).UTC()
	return b.anom.plausible("flows.tx_bytes", end, iv, fb.tx[i]) &&
		b.anom.plausible("flows.rx_bytes", end, iv, fb.rx[i])
}

// row adds plausible row i to its flow.
func (a *flowAcc) row(fb *flowBatch, i int) {
	f := a.flow(fb, i)
	if fb.ifindex[i] != 0 {
		f.ifindex = fb.ifindex[i]
	}
	f.tx += fb.tx[i]
	f.rx += fb.rx[i]
	f.txPkts += fb.txPkts[i]
	f.retx += fb.retx[i]
	a.total += fb.retx[i]
	f.rtt.add(fb, i, a.iterRTT)
	f.last(fb, i)
	if fb.has64(optAcked, i) && fb.has64(optReceived, i) {
		f.acked += fb.opt64[optAcked][i]
		f.received += fb.opt64[optReceived][i]
		f.tcpBytes = true
	}
	if fb.has64(optDataSegsOut, i) {
		f.dataSegs += fb.opt64[optDataSegsOut][i]
	}
	if a.steadyOn {
		if mid := fb.end[i] - fb.ivNs[i]/2; mid >= a.steadyLo && mid <= a.steadyHi {
			f.steadyRow(fb, i)
		}
	}
}

// flow returns row i's flow, creating it on its first row. The flow
// that followed the previous row's flow last time is tried first.
func (a *flowAcc) flow(fb *flowBatch, i int) *flowState {
	k := flowKey{netns: fb.netns[i], src: fb.src[i], dst: fb.dst[i], sport: uint16(fb.sport[i]),
		dport: uint16(fb.dport[i]), family: uint8(fb.family[i]), proto: uint8(fb.proto[i])}
	if a.last >= 0 {
		if p := a.flows[a.last].next; p >= 0 && a.flows[p].key == k {
			a.last = p
			return &a.flows[p]
		}
	}
	j, ok := a.index[k]
	if !ok {
		j = int32(len(a.flows))
		a.index[k] = j
		a.flows = append(a.flows, flowState{key: k, src: fb.str(k.src), dst: fb.str(k.dst), next: -1})
	}
	if a.last >= 0 {
		a.flows[a.last].next = j
	}
	a.last = j
	return &a.flows[j]
}

// last keeps the last non-null cwnd, mss and srtt.
func (f *flowState) last(fb *flowBatch, i int) {
	if fb.has(optCwnd, i) {
		f.cwnd = fb.opt[optCwnd][i]
	}
	if fb.has(optMSS, i) {
		f.mss = fb.opt[optMSS][i]
	}
	if fb.has(optSrtt, i) {
		f.srtt = fb.opt[optSrtt][i]
	}
}

// steadyRow adds a steady-state row's bytes and window-limited rate.
func (f *flowState) steadyRow(fb *flowBatch, i int) {
	f.steadyTx += fb.tx[i]
	f.steadyRx += fb.rx[i]
	if fb.has64(optAcked, i) && fb.has64(optReceived, i) {
		f.steadyAcked += fb.opt64[optAcked][i]
		f.steadyReceived += fb.opt64[optReceived][i]
	}
	if fb.has64(optBusy, i) && fb.has64(optRwnd, i) && fb.has64(optSndbuf, i) {
		f.hasChrono = true
		for k, c := range []int{optBusy, optRwnd, optSndbuf} {
			f.chrono[k] += fb.opt64[c][i]
		}
	}
	iv := fb.ivNs[i]
	if end := fb.end[i]; end != f.lastSteady {
		// one socket's rows of one interval (netdev bytes, tcp RTT) count its time once
		f.steadyNs += iv
		f.lastSteady = end
	}
	srtt := fb.opt[optSrtt][i]
	if !fb.has(optCwnd, i) || !fb.has(optMSS, i) || !fb.has(optSrtt, i) || srtt == 0 {
		return
	}
	win := float64(fb.opt[optCwnd][i]) * float64(fb.opt[optMSS][i])
	f.winSum += win * 8 / (float64(srtt) / 1e6) * float64(iv)
	f.winBytes += win * float64(iv)
	f.winNs += iv
}

// retxRun sums the retransmits of consecutive rows of one interval.
type retxRun struct {
	end, ivNs int64
	count     uint64
	n         int
}

// flush adds the run to s (nothing for an empty run).
func (r retxRun) flush(s *series) {
	if r.n > 0 {
		s.add(time.Unix(0, r.end).UTC(), r.ivNs, r.count)
	}
}

// extendBounds extends bd by every row of fb (as bounds.add per row).
func extendBounds(bd *bounds, fb *flowBatch) {
	if fb.n == 0 {
		return
	}
	lo, hi := fb.end[0]-max(fb.ivNs[0], 0), fb.end[0]
	for i := 1; i < fb.n; i++ {
		lo, hi = min(lo, fb.end[i]-max(fb.ivNs[i], 0)), max(hi, fb.end[i])
	}
	bd.add(time.Unix(0, hi).UTC(), hi-lo)
}
