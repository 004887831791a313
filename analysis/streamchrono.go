package analysis

import (
	"time"

	"github.com/netprof/netprof/trace"
)

// StreamChrono is the generator's sending streams' chrono accounting over
// the steady state (traffic table: TCP_INFO of each stream's own socket,
// on either end: a peer reports its streams' over the control protocol).
// The window rule judges on it when no sending flow of this host has
// chrono (the flows table's socket iterator): a peer sending to this host.
type StreamChrono struct {
	Chrono
	// Streams is how many sending streams had the columns there.
	Streams int
}

// chronoRow is one sender traffic row's chrono columns.
type chronoRow struct {
	end    time.Time
	ns     int64
	stream string // local_addr>remote_addr
	c      Chrono
}

// chrono keeps a sender row's chrono columns.
func (a *trafficAcc) chrono(x *trace.TrafficRow) {
	if x.TCPBusyUs == nil || x.TCPRwndLimitedUs == nil || x.TCPSndbufLimitedUs == nil {
		return
	}
	a.chronoRows = append(a.chronoRows, chronoRow{end: x.Time, ns: x.IntervalNs, stream: x.LocalAddr + ">" + x.RemoteAddr,
		c: Chrono{BusyUs: *x.TCPBusyUs, RwndLimitedUs: *x.TCPRwndLimitedUs, SndbufLimitedUs: *x.TCPSndbufLimitedUs}})
}

// finishStreamChrono sets Report.StreamChrono over the steady state.
func (b *builder) finishStreamChrono() {
	w := b.r.steady()
	if w == nil {
		return
	}
	out := &StreamChrono{}
	streams := map[string]bool{}
	for _, x := range b.traffic.chronoRows {
		if !inWindow(x.end, x.ns, w.SteadyStart, w.SteadyEnd) {
			continue
		}
		out.BusyUs += x.c.BusyUs
		out.RwndLimitedUs += x.c.RwndLimitedUs
		out.SndbufLimitedUs += x.c.SndbufLimitedUs
		streams[x.stream] = true
	}
	if out.Streams = len(streams); out.Streams > 0 {
		b.r.StreamChrono = out
	}
}
