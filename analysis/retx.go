package analysis

import (
	"math"
	"slices"
	"time"
)

// flowRetxCounter names what flows.retransmits counted in this run: the
// tcp_retransmit_skb tracepoint when its program ran, else the socket
// iterator's total_retrans deltas.
func (r *Report) flowRetxCounter() string {
	if _, off := retransmitProbeOff(r.Manifest); !off && !r.programAttached("np_tcp_retrans") && r.programAttached("np_tcp_iter") {
		return "socket iterator, total_retrans"
	}
	return "BPF tcp_retransmit_skb"
}

// RetxSummary derives rates and a trend from the sender's retransmits.
type RetxSummary struct {
	// Source names the counter used: traffic.tcp_retransmits (TCP_INFO on
	// the sender) when recorded, else flows.retransmits of the sending
	// flows (BPF); "" when neither was. Segments is its whole-run total.
	Source   string
	Segments uint64
	// SentBytes is what the sender sent (SentSource names the counter:
	// sender app_bytes, else sending flows' tx_bytes); PerGB is Segments
	// per 10^9 bytes sent (0 when nothing was sent).
	SentBytes  uint64
	SentSource string
	PerGB      float64
	// SegmentsSent counts segments sent (sending flows' tx_packets, else
	// the sending interface's bpf_tx_packets, else the sending flows'
	// tcp_data_segs_out; 0 unknown); Fraction is Segments / SegmentsSent.
	SegmentsSent   uint64
	SegmentsSource string
	Fraction       float64
	// Split divides the run in halves (midpoint of the run);
	// FirstHalf/SecondHalf are the retransmits in each, and
	// FirstPerGB/SecondPerGB per 10^9 bytes sent in each (NaN unknown).
	Split                   time.Time
	FirstHalf, SecondHalf   uint64
	FirstPerGB, SecondPerGB float64
}

// retransmits fills Report.SenderRetransmits and Report.Retx.
func (b *builder) retransmits() {
	r, t := b.r, &b.traffic
	switch {
	case t.sndRetxSet:
		v := t.sndRetxTotal
		r.SenderRetransmits = &v
	case t.sndRows > 0:
		r.reasons[figSndRetx] = "tcp_retransmits null on all sender rows"
	default:
		r.reasons[figSndRetx] = "no sender rows in this trace: the sender ran elsewhere"
	}
	x := &r.Retx
	x.FirstPerGB, x.SecondPerGB = math.NaN(), math.NaN()
	send := sendingFlows(r.Flows)
	var retxPts []Point
	switch {
	case r.SenderRetransmits != nil:
		x.Source, x.Segments, retxPts = "traffic.tcp_retransmits (TCP_INFO, sender)", *r.SenderRetransmits, t.sndRetx.points()
	case r.FlowRetransmits != nil && len(send) > 0:
		x.Source, retxPts = "flows.retransmits ("+b.r.flowRetxCounter()+", sending flows)", b.flows.retx.points()
		for _, f := range send {
			x.Segments += f.Retransmits
		}
	default:
		return
	}
	for _, p := range retxPts {
		r.RetxTimeline = append(r.RetxTimeline, CountPoint{End: p.End, Count: p.Bytes})
	}
	sentPts := b.sent(x, send)
	b.segmentsSent(x, send)
	b.retxTrend(x, retxPts, sentPts)
}

// sent sets SentBytes and PerGB and returns per-interval sent bytes.
func (b *builder) sent(x *RetxSummary, send []FlowSummary) []Point {
	var pts []Point
	switch {
	case b.traffic.sndRows > 0:
		x.SentBytes, x.SentSource = b.traffic.sentBytes, "traffic.app_bytes (sender payload)"
		pts = b.r.Tx.Rates[0].Points
	case len(send) > 0:
		for _, f := range send {
			x.SentBytes += f.TxBytes
		}
		x.SentSource = "flows.tx_bytes (sending flows, L2 bytes)"
		if rt := b.r.Tx.Rate(CounterNetlink); rt != nil {
			pts = rt.Points
		}
	}
	if x.SentBytes > 0 {
		x.PerGB = float64(x.Segments) / (float64(x.SentBytes) / 1e9)
	}
	return pts
}

// segmentsSent sets SegmentsSent and Fraction.
func (b *builder) segmentsSent(x *RetxSummary, send []FlowSummary) {
	for _, f := range send {
		x.SegmentsSent += f.TxPackets
	}
	x.SegmentsSource = "flows.tx_packets (sending flows)"
	if x.SegmentsSent == 0 && b.tx.bpfPacketsSet {
		x.SegmentsSent, x.SegmentsSource = b.tx.bpfPackets, "ifaces.bpf_tx_packets of "+b.tx.key.name
	}
	if x.SegmentsSent == 0 {
		for _, f := range send {
			x.SegmentsSent += f.DataSegsOut
		}
		x.SegmentsSource = "flows.tcp_data_segs_out (sending flows, socket iterator: data segments, retransmits included)"
	}
	if x.SegmentsSent == 0 {
		x.SegmentsSource = ""
		return
	}
	x.Fraction = float64(x.Segments) / float64(x.SegmentsSent)
}

// retxTrend splits retransmits and sent bytes at the run's midpoint.
func (b *builder) retxTrend(x *RetxSummary, retx, sent []Point) {
	r := b.r
	if r.RunStart.IsZero() || r.RunEnd.IsZero() {
		return
	}
	x.Split = r.RunStart.Add(r.RunEnd.Sub(r.RunStart) / 2)
	var bytes [2]uint64
	half := func(p Point) int {
		if p.End.Add(-time.Duration(p.IntervalNs) / 2).Before(x.Split) {
			return 0
		}
		return 1
	}
	for _, p := range retx {
		if half(p) == 0 {
			x.FirstHalf += p.Bytes
		} else {
			x.SecondHalf += p.Bytes
		}
	}
	for _, p := range sent {
		bytes[half(p)] += p.Bytes
	}
	perGB := func(n, b uint64) float64 {
		if b == 0 {
			return math.NaN()
		}
		return float64(n) / (float64(b) / 1e9)
	}
	x.FirstPerGB, x.SecondPerGB = perGB(x.FirstHalf, bytes[0]), perGB(x.SecondHalf, bytes[1])
}

// sendingFlows returns the TCP flows that sent data: the generator's when
// any flow matches a traffic stream, else all.
func sendingFlows(flows []FlowSummary) []FlowSummary {
	var all, gen []FlowSummary
	for _, f := range flows {
		if f.Sending && f.Proto == 6 {
			all = append(all, f)
			if f.Generator {
				gen = append(gen, f)
			}
		}
	}
	if len(gen) > 0 {
		return gen
	}
	return all
}

// medianOf returns the median of f over the flows with f > 0 (0 for none).
func medianOf(flows []FlowSummary, f func(FlowSummary) float64) float64 {
	var xs []float64
	for _, x := range flows {
		if v := f(x); v > 0 {
			xs = append(xs, v)
		}
	}
	slices.Sort(xs)
	return median(xs)
}
