package analysistest

import (
	"slices"
	"time"

	"github.com/netprof/netprof/trace"
)

// skbSegs is how many segments one GSO/GRO skb carries.
const skbSegs = 40

// hdr returns the L2-L4 header bytes of one segment.
func (s Scenario) hdr() uint64 { return uint64(s.MTU-s.MSS) + 14 }

// flows returns stream k's sender-side and receiver-side flows rows.
func (s Scenario) flows(i int, end time.Time, ns int64, k int, per, segs uint64) []trace.FlowRow {
	p50 := s.RTTP50Us(i)
	minRTT, p99, maxRTT := s.RTTMinUs, 2*p50, 3*p50
	mss := uint32(s.MSS)
	// rate = ratio × cwnd × mss / srtt  →  cwnd = rate × srtt / (ratio × mss)
	rate := float64(per) * 8 / (float64(ns) / 1e9)
	cwnd := uint32(rate / 8 * float64(p50) / 1e6 / (s.WindowRatio * float64(s.MSS)))
	cwnd = max(cwnd, 1)
	skbs := (segs + skbSegs - 1) / skbSegs
	l2 := per + skbs*s.hdr()
	wire := per + segs*s.hdr()
	samples := max(segs/2, 1)
	retx := uint64(s.RetxFraction * float64(segs))
	acks := segs / 2
	var chrono [3]*uint64
	if s.Chrono != nil {
		for j, f := range s.Chrono {
			if j == 0 { // busy: the whole time with data to send
				f = s.Chrono[0] + s.Chrono[1] + s.Chrono[2]
			}
			v := uint64(f * float64(ns) / 1e3)
			chrono[j] = &v
		}
	}
	return []trace.FlowRow{{
		Time: end, IntervalNs: ns, Netns: SenderNetns, Ifindex: 2, Ifname: s.SenderIface, Family: 4, Proto: 6,
		SrcAddr: SenderAddr, SrcPort: streamPort(k), DstAddr: ReceiverAddr, DstPort: ReceiverPort,
		TxBytes: l2, TxPackets: segs, TxSkbs: skbs, TxWireBytes: wire, RxBytes: acks * 66, RxPackets: acks,
		RxSkbs: acks, RxWireBytes: acks * 66, Retransmits: retx, RTTSamples: samples,
		RTTMinUs: &minRTT, RTTP50Us: &p50, RTTP99Us: &p99, RTTMaxUs: &maxRTT, SrttUs: &p50, SndCwnd: &cwnd,
		MinRttUs: &minRTT, MSS: &mss,
		TCPBusyUs: chrono[0], TCPRwndLimitedUs: chrono[1], TCPSndbufLimitedUs: chrono[2],
	}, {
		Time: end, IntervalNs: ns, Netns: RecvNetns, Ifindex: 2, Ifname: "veth-b", Family: 4, Proto: 6,
		SrcAddr: ReceiverAddr, SrcPort: ReceiverPort, DstAddr: SenderAddr, DstPort: streamPort(k),
		RxBytes: l2, RxPackets: segs, RxSkbs: skbs, RxWireBytes: wire, TxBytes: acks * 66, TxPackets: acks,
		TxSkbs: acks, TxWireBytes: acks * 66,
	}}
}

// ifaces returns both interfaces' rows: SenderIface (veth-a) sends, veth-b receives.
func (s Scenario) ifaces(end time.Time, ns int64, app, segs uint64) []trace.IfaceRow {
	skbs := (segs + skbSegs - 1) / skbSegs
	l2 := app + skbs*s.hdr()
	wire := app + segs*s.hdr()
	acks := segs / 2
	ackB := acks * 66
	return []trace.IfaceRow{
		{Time: end, IntervalNs: ns, Netns: SenderNetns, Ifname: s.SenderIface, Ifindex: 2, Driver: s.SenderDriver,
			TxBytes: l2, TxPackets: skbs, RxBytes: ackB, RxPackets: acks,
			BpfTxBytes: &l2, BpfTxPackets: &segs, BpfTxSkbs: &skbs, BpfTxWireBytes: &wire,
			BpfRxBytes: &ackB, BpfRxPackets: &acks, BpfRxSkbs: &acks, BpfRxWireBytes: &ackB},
		{Time: end, IntervalNs: ns, Netns: RecvNetns, Ifname: "veth-b", Ifindex: 2, Driver: "veth",
			RxBytes: l2, RxPackets: skbs, TxBytes: ackB, TxPackets: acks,
			BpfRxBytes: &l2, BpfRxPackets: &segs, BpfRxSkbs: &skbs, BpfRxWireBytes: &wire,
			BpfTxBytes: &ackB, BpfTxPackets: &acks, BpfTxSkbs: &acks, BpfTxWireBytes: &ackB},
	}
}

// cpus returns every CPU's row; CPU 0 processes all received packets.
func (s Scenario) cpus(i int, end time.Time, ns int64, segs uint64) []trace.CPURow {
	var out []trace.CPURow
	for c := range s.CPUs {
		share := s.Softirq(i, c)
		row := trace.CPURow{Time: end, IntervalNs: ns, CPU: int32(c), NetRxSoftirqNs: ptr(uint64(share * float64(ns))),
			NetRxSoftirqCount: ptr[uint64](1000), NetTxSoftirqNs: ptr(uint64(0.01 * float64(ns))), NetTxSoftirqCount: ptr[uint64](10)}
		var pkts, bytes, polls, exh uint64
		if c == 0 {
			polls = max(segs/64, 1)
			pkts, bytes, exh = segs, segs*uint64(s.MSS), uint64(s.NapiExhausted*float64(polls))
		}
		row.RxPackets, row.RxBytes, row.NapiPolls, row.NapiPackets, row.NapiBudgetExhausted = &pkts, &bytes, &polls, &pkts, &exh
		if s.ProcStat != nil {
			soft, busy := s.ProcStat(i, c)
			sn, bn, tn := uint64(soft*float64(ns)), uint64(busy*float64(ns)), uint64(ns)
			row.ProcSoftirqNs, row.ProcBusyNs, row.ProcTotalNs = &sn, &bn, &tn
		}
		if s.NoSoftirqProbe {
			row.NetRxSoftirqNs, row.NetRxSoftirqCount, row.NetTxSoftirqNs, row.NetTxSoftirqCount = nil, nil, nil, nil
			row.NapiPolls, row.NapiPackets, row.NapiBudgetExhausted = nil, nil, nil
		}
		if slices.Contains(s.IdleCPUs, c) {
			row = trace.CPURow{Time: end, IntervalNs: ns, CPU: int32(c)}
		}
		out = append(out, row)
	}
	for c := s.CPUs; s.NeverOnlineRows && c < s.PossibleCPUs; c++ {
		out = append(out, trace.CPURow{Time: end, IntervalNs: ns, CPU: int32(c)})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
