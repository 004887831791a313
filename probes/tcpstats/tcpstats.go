// Package tcpstats is the TCP probe: per-socket RTT distribution, srtt,
// cwnd and retransmitted segments, from tcp:tcp_probe and
// tcp:tcp_retransmit_skb attached as tp_btf (Linux >= 5.5 with BTF; the
// retransmit program reads the tracepoint's err argument, present on 6.18).
//
// RTT samples are tp->rack.rtt_us (the raw RTT of the most recently
// acknowledged segment) taken when an arriving segment acknowledges new
// data; they are binned in the kernel into a log-linear histogram (8 µs
// buckets below 1024 µs, 12.5% wide above).
package tcpstats

import (
	"fmt"
	"net/netip"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
)

// Options tunes the probe.
type Options struct {
	// SocketEntries sizes the per-socket LRU table (default 4096).
	SocketEntries uint32
}

// DefaultSocketEntries is the socket table size when Options.SocketEntries is 0.
const DefaultSocketEntries = 4096

// Spec returns the loader spec of the probe.
func Spec(opt Options) (loader.Spec, error) {
	cs, err := bpf.LoadTcp()
	if err != nil {
		return loader.Spec{}, fmt.Errorf("tcp spec: %w", err)
	}
	n := opt.SocketEntries
	if n == 0 {
		n = DefaultSocketEntries
	}
	cs.Maps[bpf.TcpMapNpTcpSocks].MaxEntries = n
	return loader.Spec{
		Probe:      "tcp",
		Collection: cs,
		Programs: []loader.Program{
			{Name: bpf.TcpProgNpTcpProbe, Hook: "tcp:tcp_probe"},
			{Name: bpf.TcpProgNpTcpRetrans, Hook: "tcp:tcp_retransmit_skb"},
		},
	}, nil
}

// Key identifies a TCP socket host-wide, from its local end.
type Key struct {
	Netns  uint64 // network namespace inode
	Family uint8  // 4 or 6 (IPv4-mapped IPv6 sockets are 4)
	Local  netip.AddrPort
	Remote netip.AddrPort
}

// Sock holds one socket's running totals merged over CPUs.
type Sock struct {
	Samples     uint64 // RTT samples
	SumUs       uint64 // sum of RTT samples, µs
	RetransSegs uint64 // segments retransmitted (tp->total_retrans, largest seen)
	RetransFail uint64 // retransmit attempts that failed
	MinUs       uint32 // smallest RTT sample so far, µs
	MaxUs       uint32 // largest RTT sample so far, µs
	// Last values, from the CPU that updated the socket most recently.
	SrttUs      uint32 // smoothed RTT (tp->srtt_us >> 3), µs
	SndCwnd     uint32 // congestion window, segments
	MinRttUs    uint32 // tp->rtt_min, the kernel's windowed minimum, µs
	Mss         uint32 // tp->mss_cache, bytes
	LastStampUs uint64 // tp->tcp_mstamp at the last update, µs: orders per-CPU copies
	Hist        [Buckets]uint64
}

// Reader reads the probe's socket table.
type Reader struct{ l *loader.Loaded }

// NewReader returns a reader over a loaded tcp probe.
func NewReader(l *loader.Loaded) (*Reader, error) {
	if l.Maps[bpf.TcpMapNpTcpSocks] == nil {
		return nil, fmt.Errorf("tcp reader: map missing from probe %q", l.Probe)
	}
	return &Reader{l: l}, nil
}

// Read returns every socket's running totals.
func (r *Reader) Read() (map[Key]Sock, error) {
	out := map[Key]Sock{}
	var k bpf.TcpNpFlowKey
	var vals []bpf.TcpNpTcpVal
	it := r.l.Maps[bpf.TcpMapNpTcpSocks].Iterate()
	for it.Next(&k, &vals) {
		out[decodeKey(&k)] = merge(vals)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read tcp sockets: %w", err)
	}
	return out, nil
}

func merge(vals []bpf.TcpNpTcpVal) Sock {
	var s Sock
	for _, v := range vals {
		s.Samples += v.RttSamples
		s.SumUs += v.RttSumUs
		s.RetransSegs = max(s.RetransSegs, uint64(v.TotalRetrans))
		s.RetransFail += v.RetransFail
		if v.RttMinUs != 0 && (s.MinUs == 0 || v.RttMinUs < s.MinUs) {
			s.MinUs = v.RttMinUs
		}
		s.MaxUs = max(s.MaxUs, v.RttMaxUs)
		if v.LastStampUs >= s.LastStampUs && (v.SrttUs != 0 || v.SndCwnd != 0) {
			s.LastStampUs = v.LastStampUs
			s.SrttUs, s.SndCwnd, s.MinRttUs, s.Mss = v.SrttUs, v.SndCwnd, v.MinRttUs, v.Mss
		}
		for i, h := range v.RttHist {
			s.Hist[i] += uint64(h)
		}
	}
	return s
}

func decodeKey(k *bpf.TcpNpFlowKey) Key {
	addr := func(b [16]uint8) netip.Addr {
		if k.Family == 4 {
			return netip.AddrFrom4([4]byte(b[:4]))
		}
		return netip.AddrFrom16(b)
	}
	return Key{
		Netns:  k.Netns,
		Family: k.Family,
		Local:  netip.AddrPortFrom(addr(k.Laddr), k.Lport),
		Remote: netip.AddrPortFrom(addr(k.Raddr), k.Rport),
	}
}
