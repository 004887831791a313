package analysis

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netprof/netprof/trace"
)

// FlowSummary is one flow (one socket's view in one namespace) over the run.
type FlowSummary struct {
	// Netns and Ifindex (the last non-zero one seen) locate the flow:
	// rows of one socket on any interface of the namespace are merged.
	// Family is 4 or 6, Proto the IP protocol (6 TCP). Src is the local end, Dst the remote end, as
	// ip:port; Peer is Dst's address.
	Netns   uint64
	Ifindex int32
	Family  uint8
	Proto   uint8
	Src     string
	Dst     string
	Peer    string
	// Generator is true when the flow's endpoints match a traffic stream.
	Generator bool
	// Sending is true when the flow sent more than it received (the data
	// sender's side; retransmits and cwnd mean something there), or, with
	// no interface bytes (netdev probe off), when it has RTT samples.
	Sending bool
	// TxBytes, RxBytes (L2 bytes), TxPackets (segments) and Retransmits
	// (segments, tcp_retransmit_skb) are whole-run sums.
	TxBytes, RxBytes, TxPackets, Retransmits uint64
	// AckedBytes and ReceivedBytes are the socket's payload bytes its peer
	// acknowledged and it received in order (flows.tcp_bytes_acked,
	// tcp_bytes_received: the socket iterator), whole run; TCPBytes says
	// the flow had those columns.
	AckedBytes, ReceivedBytes uint64
	TCPBytes                  bool
	// DataSegsOut counts the data segments the socket sent, retransmits
	// included (flows.tcp_data_segs_out, socket iterator), whole run.
	DataSegsOut uint64
	// SteadyBps is the flow's rate in its data direction (tx when Sending,
	// else rx) over its rows in the steady state, bit/s; 0 without rows
	// there. PayloadRate: the flow has no interface bytes (netdev probe
	// off) and SteadyBps is payload (tcp_bytes_acked when Sending, else
	// tcp_bytes_received), without L2/IP/TCP headers.
	SteadyBps   float64
	PayloadRate bool
	// WindowBps is the window-limited rate snd_cwnd × mss × 8 / srtt,
	// time-weighted over the flow's steady-state rows, bit/s; 0 when those
	// columns are null. WindowBytes is snd_cwnd × mss, time-weighted.
	WindowBps, WindowBytes float64
	// SteadySrttUs is the flow's steady-state srtt (µs) that goes with
	// WindowBytes and WindowBps: WindowBytes × 8 / WindowBps, i.e. the
	// window-weighted harmonic mean of srtt over the steady-state rows, so
	// that WindowBytes × 8 / SteadySrttUs = WindowBps; 0 when WindowBps is.
	SteadySrttUs float64
	// Cwnd (segments), MSS (bytes) and SrttUs (µs) are the last non-null
	// values (the flow's last sample, not steady-state figures).
	Cwnd, MSS, SrttUs uint32
	// RTT is the flow's RTT; nil without samples.
	RTT *RTTSummary
	// Chrono is the kernel's own account of the flow's sending time over
	// the steady state (socket iterator: tcp_busy_us, tcp_rwnd_limited_us,
	// tcp_sndbuf_limited_us); nil without those columns there.
	Chrono *Chrono
}

// Chrono is TCP's chrono accounting (tcp_info busy_time, rwnd_limited,
// sndbuf_limited).
type Chrono struct {
	// BusyUs: the time the socket had data to send (tcpi_busy_time, the
	// kernel's chrono_stat of TCP_CHRONO_BUSY); RwndLimitedUs: the part of
	// it the receiver's advertised window stopped it; SndbufLimitedUs: the
	// part its own send buffer (SO_SNDBUF / tcp_wmem) did. All µs. Measured
	// on 6.12 and 6.18 (TCP_INFO and the socket iterator alike): busy
	// 2.15 s over 2.16 s of sending, 2.10 s of it rwnd-limited.
	BusyUs, RwndLimitedUs, SndbufLimitedUs uint64
}

// SendingUs is the time the socket had data to send: the busy time, or
// the limited parts when they exceed it (jiffy rounding between reads).
func (c Chrono) SendingUs() uint64 { return max(c.BusyUs, c.RwndLimitedUs+c.SndbufLimitedUs) }

// RwndShare and SndbufShare are the shares of SendingUs limited by the
// receiver's window and by the send buffer (0 when SendingUs is 0).
func (c Chrono) RwndShare() float64 { return share(c.RwndLimitedUs, c.SendingUs()) }

// SndbufShare: see RwndShare.
func (c Chrono) SndbufShare() float64 { return share(c.SndbufLimitedUs, c.SendingUs()) }

func share(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// WindowRatio returns SteadyBps / WindowBps, or 0 when either is unknown.
func (f FlowSummary) WindowRatio() float64 {
	if f.WindowBps <= 0 || f.SteadyBps <= 0 {
		return 0
	}
	return f.SteadyBps / f.WindowBps
}

// PeerSummary is one remote address (flows.dst_addr) over all its flows.
type PeerSummary struct {
	Peer             string
	Flows            int
	TxBytes, RxBytes uint64
	RTT              *RTTSummary
}

// finish sets Report.Flows, Peers, RTT, RTTHist and FlowRetransmits.
func (a *flowAcc) finish(b *builder) {
	r := b.r
	if a.rows == 0 {
		r.reasons[figRTT] = r.probesOff("no flows rows", "np_tcp_", "np_nd_rx", "np_nd_tx")
		r.reasons[figFlowRetx] = r.probesOff("no flows rows", "np_tcp_retrans")
	}
	var all rttDist
	peers := map[string]*peerState{}
	for i := range a.flows {
		f := &a.flows[i]
		s := f.summary(b.traffic.endpoints)
		all.merge(&f.rtt)
		if !isPeer(s.Peer) || !isPeer(f.src) { // a multicast packet sent or received (local end ff02::…)
			r.ControlFlows++
			r.ControlBytes += s.TxBytes + s.RxBytes
			continue
		}
		r.Flows = append(r.Flows, s)
		peers[s.Peer] = peers[s.Peer].add(s, &f.rtt)
	}
	if r.ControlFlows > 0 {
		r.note(fmt.Sprintf("%d control %s with a multicast or unspecified end (IPv6 MLD, neighbour discovery, "+
			"duplicate address detection; %s, whole run) not listed among the flows",
			r.ControlFlows, map[bool]string{true: "flow", false: "flows"}[r.ControlFlows == 1], r.Units.FormatBytes(float64(r.ControlBytes))))
	}
	sort.Slice(r.Flows, func(i, j int) bool { return flowLess(r.Flows[i], r.Flows[j]) })
	r.Peers = peerSummaries(peers)
	if r.RTT = all.summary(); r.RTT == nil && a.rows > 0 {
		r.reasons[figRTT] = "no RTT samples in flows rows"
	}
	r.RTTHist = all.histogram()
	if a.rows > 0 {
		if why, down := r.programsDown("flows tx/rx bytes not counted", "np_nd_rx", "np_nd_tx"); down {
			r.reasons[figFlowBytes] = why
		}
		if why, down := r.programsDown("flows snd_cwnd, mss, srtt not sampled", "np_tcp_probe", "np_tcp_iter"); down {
			r.reasons[figFlowTCP] = why
		}
		if p, off := retransmitProbeOff(r.Manifest); off {
			r.reasons[figFlowRetx] = "probe " + p.Name + " not attached: " + orDash(p.Reason)
		} else {
			t := a.total
			r.FlowRetransmits = &t
		}
	}
}

// Figure keys of flows columns a probe left at 0 (Report.reasons).
const (
	figFlowBytes = "flow_bytes" // tx/rx bytes: netdev (np_nd_rx, np_nd_tx) did not run
	figFlowTCP   = "flow_tcp"   // snd_cwnd, mss, srtt: neither np_tcp_probe nor np_tcp_iter ran
)

// FlowBytesOff says why flows' and peers' tx/rx bytes and steady rates
// are unknown (the netdev programs did not run: the columns hold 0); ""
// when they were counted.
func (r *Report) FlowBytesOff() string { return r.reasons[figFlowBytes] }

// FlowRetxOff says why per-flow retransmits are unknown (np_tcp_retrans
// did not run); "" when counted or when there are no flows.
func (r *Report) FlowRetxOff() string {
	if r.FlowRetransmits != nil || len(r.Flows) == 0 {
		return ""
	}
	return r.reason(figFlowRetx, "probes off")
}

// flowLess orders flows by bytes, then by endpoints.
func flowLess(a, b FlowSummary) bool {
	if a.TxBytes+a.RxBytes != b.TxBytes+b.RxBytes {
		return a.TxBytes+a.RxBytes > b.TxBytes+b.RxBytes
	}
	if a.Src != b.Src {
		return a.Src < b.Src
	}
	return a.Dst < b.Dst
}

// summary converts the accumulator to a FlowSummary.
func (f *flowState) summary(endpoints map[string]bool) FlowSummary {
	k := f.key
	s := FlowSummary{Netns: k.netns, Ifindex: f.ifindex, Family: k.family, Proto: k.proto,
		Src: addrPort(f.src, k.sport), Dst: addrPort(f.dst, k.dport), Peer: f.dst,
		Sending: f.tx > f.rx, TxBytes: f.tx, RxBytes: f.rx, TxPackets: f.txPkts, Retransmits: f.retx,
		Cwnd: f.cwnd, MSS: f.mss, SrttUs: f.srtt, RTT: f.rtt.summary(),
		AckedBytes: f.acked, ReceivedBytes: f.received, TCPBytes: f.tcpBytes, DataSegsOut: f.dataSegs}
	s.Generator = endpoints[s.Src+">"+s.Dst]
	noIface := f.tx == 0 && f.rx == 0
	switch {
	case noIface && f.tcpBytes:
		// No interface bytes (netdev probe not selected): the socket's own
		// payload counters say which way the data went.
		s.Sending, s.PayloadRate = f.acked > f.received, true
	case noIface && s.RTT != nil && s.RTT.Samples > 0:
		// RTT samples are taken on ACKs of new data, so only the sending
		// end has them.
		s.Sending = true
	}
	if f.steadyNs > 0 {
		bytes := f.steadyRx
		switch {
		case s.PayloadRate && s.Sending:
			bytes = f.steadyAcked
		case s.PayloadRate:
			bytes = f.steadyReceived
		case s.Sending:
			bytes = f.steadyTx
		}
		s.SteadyBps = float64(bytes) * 8 / time.Duration(f.steadyNs).Seconds()
	}
	if f.hasChrono {
		s.Chrono = &Chrono{BusyUs: f.chrono[0], RwndLimitedUs: f.chrono[1], SndbufLimitedUs: f.chrono[2]}
	}
	if f.winNs > 0 {
		s.WindowBps = f.winSum / float64(f.winNs)
		s.WindowBytes = f.winBytes / float64(f.winNs)
		if s.WindowBps > 0 {
			s.SteadySrttUs = s.WindowBytes * 8 / s.WindowBps * 1e6
		}
	}
	return s
}

// addrPort formats ip:port canonically ([v6]:port), or "addr:port" when
// the address does not parse.
func addrPort(addr string, port uint16) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr + ":" + strconv.Itoa(int(port))
	}
	return netip.AddrPortFrom(a, port).String()
}

// peerState accumulates one peer.
type peerState struct {
	PeerSummary
	rtt rttDist
}

// add adds a flow to p (allocating p when nil) and returns it.
func (p *peerState) add(s FlowSummary, d *rttDist) *peerState {
	if p == nil {
		p = &peerState{PeerSummary: PeerSummary{Peer: s.Peer}}
	}
	p.Flows++
	p.TxBytes += s.TxBytes
	p.RxBytes += s.RxBytes
	p.rtt.merge(d)
	return p
}

// peerSummaries returns the peers by bytes, then address.
func peerSummaries(m map[string]*peerState) []PeerSummary {
	out := make([]PeerSummary, 0, len(m))
	for _, p := range m {
		s := p.PeerSummary
		s.RTT = p.rtt.summary()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		bi, bj := out[i].TxBytes+out[i].RxBytes, out[j].TxBytes+out[j].RxBytes
		if bi != bj {
			return bi > bj
		}
		return out[i].Peer < out[j].Peer
	})
	return out
}

// retransmitProbeOff returns the manifest's tcp_retransmit_skb probe when
// it is listed as not attached and the socket iterator (np_tcp_iter,
// which counts retransmits from total_retrans too) is not attached either.
func retransmitProbeOff(m trace.Manifest) (trace.Probe, bool) {
	var off *trace.Probe
	for i, p := range m.Probes {
		if p.Name == "np_tcp_iter" && p.Attached {
			return trace.Probe{}, false
		}
		if (strings.Contains(p.Hook, "tcp_retransmit_skb") || p.Name == "np_tcp_retrans") && !p.Attached && off == nil {
			off = &m.Probes[i]
		}
	}
	if off == nil {
		return trace.Probe{}, false
	}
	return *off, true
}

// isPeer reports whether an address is a host's: multicast (e.g. IPv6
// MLD reports and router solicitations to ff02::/16) and the unspecified
// address (duplicate address detection) are not. A flow with either end
// multicast or unspecified is a control flow, not in Flows.
func isPeer(addr string) bool {
	a, err := netip.ParseAddr(addr)
	return err != nil || !(a.IsMulticast() || a.IsUnspecified())
}

// bpfProgram returns the netdev program that fills the ifaces bpf columns
// src names: np_nd_tx for ifaces.bpf_tx_*, else np_nd_rx.
func bpfProgram(src string) string {
	if strings.Contains(src, "bpf_tx") {
		return "np_nd_tx"
	}
	return "np_nd_rx"
}
