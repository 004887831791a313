package bench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/control"
)

// live writes one line per interval: this host's payload rates (decimal
// Gbit/s), the sender's retransmits (TCP_INFO), the busiest CPU (NET_RX
// softirq share from the BPF probe, else all softirqs from /proc/stat),
// the peer's latest report, and the phase when it is not "measure".
//
// The recorder's final interval is the short rest after the last full one
// (the drain after the sender stopped): it is printed only when payload
// moved in it, with its end to the millisecond, never as "10.0-10.0 s
// sent 0.000 Gbit/s". A peer report is shown once, on the first line after
// it arrived.
type live struct {
	w        io.Writer
	period   time.Duration
	peer     func() (control.Interval, bool)
	peerSeen int // reports shown: the next one shown has Index >= peerSeen
}

// newLive returns a live line writer; a nil w writes nothing.
func newLive(w io.Writer, period time.Duration, d driver) *live {
	l := &live{w: w, period: period}
	if pd, ok := d.(*peerDriver); ok {
		l.peer = pd.latest
	}
	return l
}

// line writes the line of the interval the timeline recorded last.
func (l *live) line(tl *timeline, iv *trace.Interval) {
	li := tl.last()
	if l.w == nil || li == nil || li.ns <= 0 {
		return
	}
	from := li.end.Add(-time.Duration(li.ns)).Sub(tl.t0).Seconds()
	span := fmt.Sprintf("%5.1f-%.1f s", from, li.end.Sub(tl.t0).Seconds())
	if short := time.Duration(li.ns) < l.period/2; short {
		if li.sent == 0 && li.received == 0 {
			return
		}
		span = fmt.Sprintf("%5.1f-%.3f s", from, li.end.Sub(tl.t0).Seconds())
	}
	parts := []string{span}
	if li.sent > 0 || li.received == 0 {
		parts = append(parts, "sent "+gbps(li.sent, li.ns))
	}
	if li.received > 0 {
		parts = append(parts, "received "+gbps(li.received, li.ns))
	}
	if retx, ok := retransmits(iv); ok {
		parts = append(parts, fmt.Sprintf("retx %d", retx))
	}
	parts = append(parts, busiest(iv, li))
	if l.peer != nil {
		if p, ok := l.peer(); ok && p.Index >= l.peerSeen {
			l.peerSeen = p.Index + 1
			parts = append(parts, peerLine(p))
		}
	}
	if li.phase != trace.PhaseMeasure {
		parts = append(parts, "["+li.phase+"]")
	}
	fmt.Fprintln(l.w, strings.Join(parts, "  "))
}

func gbps(bytes uint64, ns int64) string {
	return fmt.Sprintf("%.3f Gbit/s", float64(bytes)*8/float64(ns))
}

// retransmits sums the interval's sender rows' TCP_INFO retransmits.
func retransmits(iv *trace.Interval) (uint64, bool) {
	var n uint64
	ok := false
	for _, r := range iv.Traffic {
		if r.Role == trace.RoleSender && r.TCPRetransmits != nil {
			n += *r.TCPRetransmits
			ok = true
		}
	}
	return n, ok
}

// busiest names the CPU with the largest softirq share of the interval.
func busiest(iv *trace.Interval, li *localInterval) string {
	best, share := -1, 0.0
	for _, c := range iv.CPUs {
		if c.IntervalNs > 0 && c.NetRxSoftirqNs != nil {
			if s := float64(*c.NetRxSoftirqNs) / float64(c.IntervalNs); best < 0 || s > share {
				best, share = int(c.CPU), s
			}
		}
	}
	if best >= 0 {
		return fmt.Sprintf("busiest CPU %d NET_RX %.0f%%", best, 100*share)
	}
	if li.cpuOK && li.cpu.BusiestSoftIRQCPU >= 0 {
		return fmt.Sprintf("busiest CPU %d softirq %.0f%%", li.cpu.BusiestSoftIRQCPU, li.cpu.BusiestSoftIRQPct)
	}
	return "busiest CPU n/a"
}

// peerLine summarises the peer's latest report.
func peerLine(p control.Interval) string {
	var recv, sent uint64
	for _, n := range p.ReceivedBytes {
		recv += n
	}
	for _, n := range p.SentBytes {
		sent += n
	}
	s := "peer:"
	if p.IntervalNs > 0 {
		if len(p.ReceivedBytes) > 0 {
			s += " received " + gbps(recv, p.IntervalNs)
		}
		if len(p.SentBytes) > 0 {
			s += " sent " + gbps(sent, p.IntervalNs)
		}
	}
	if c := p.CPU; c.CPUs > 0 {
		s += fmt.Sprintf(", CPU %.0f%% busy, busiest CPU %d softirq %.0f%%", 100-c.IdlePct-c.IOWaitPct-c.StealPct,
			c.BusiestSoftIRQCPU, c.BusiestSoftIRQPct)
	}
	return s
}
