package traffic

// TCPDelta is a sending stream's TCP_INFO over one interval: the
// cumulative counters as deltas, the rest as at the interval's end.
type TCPDelta struct {
	Retransmits                            uint64
	RttUs, Cwnd                            uint32
	BusyUs, RwndLimitedUs, SndbufLimitedUs uint64
	DeliveryRateBps                        uint64
	SndWnd                                 uint32
}

// DeltaTCP returns cur's change since prev (nil: since the start).
func DeltaTCP(cur, prev *TCPInfo) TCPDelta {
	var p TCPInfo
	if prev != nil {
		p = *prev
	}
	sub := func(a, b uint64) uint64 { return a - min(a, b) }
	return TCPDelta{
		Retransmits: sub(cur.TotalRetrans, p.TotalRetrans), RttUs: cur.RttUs, Cwnd: cur.SndCwnd,
		BusyUs: sub(cur.BusyUs, p.BusyUs), RwndLimitedUs: sub(cur.RwndLimitedUs, p.RwndLimitedUs),
		SndbufLimitedUs: sub(cur.SndbufLimitedUs, p.SndbufLimitedUs),
		DeliveryRateBps: cur.DeliveryRateBps, SndWnd: cur.SndWnd,
	}
}
