// Package tcpstats is the TCP probe: per-socket RTT distribution, srtt,
// cwnd and retransmitted segments, from tcp:tcp_probe and
// tcp:tcp_retransmit_skb attached as tp_btf (Linux >= 5.5 with BTF). The
// retransmit tracepoint gained an err argument in recent kernels; Spec
// loads the program that fits the running kernel (failed attempts are
// counted only where the tracepoint reports them).
//
// The socket table is one entry per socket shared by all CPUs (its size
// does not grow with the possible-CPU count); Reader deletes entries of
// sockets idle for a few reads, and the kernel counts sockets it could not
// insert because the table was full.
//
// RTT samples are tp->rack.rtt_us (the raw RTT of the most recently
// acknowledged segment) taken when an arriving segment acknowledges new
// data; they are binned in the kernel into a log-linear histogram (8 µs
// buckets below 1024 µs, 12.5% wide above).
package tcpstats

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/bpfmap"
)

// Options tunes the probe.
type Options struct {
	// SocketEntries sizes the per-socket table (default 4096).
	SocketEntries uint32
}

// Program names of the retransmit hook's two forms (bpf/tcp.bpf.c).
const (
	progRetransErr = bpf.TcpProgNpTcpRetrans // three arguments: sk, skb, err
	progRetransOK  = bpf.TcpProgNpTcpRtxOk   // two arguments: sk, skb
)

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
	retrans := loader.Program{Name: progRetransErr, Hook: "tcp:tcp_retransmit_skb"}
	if !retransHasErr() {
		retrans.Object = progRetransOK
	}
	return loader.Spec{
		Probe:      "tcp",
		Collection: cs,
		Programs: []loader.Program{
			{Name: bpf.TcpProgNpTcpProbe, Hook: "tcp:tcp_probe"},
			retrans,
		},
	}, nil
}

// retransHasErr reports whether the running kernel's tcp_retransmit_skb
// tracepoint passes err (three arguments). When the kernel's BTF cannot
// say, it answers true: np_tcp_retrans then fails to load with the
// verifier's reason, which the manifest records.
func retransHasErr() bool {
	n, err := loader.TracepointArgs("tcp_retransmit_skb")
	return err != nil || n >= 3
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
	RetransSegs uint64 // segments retransmitted since the entry was made (growth of tp->total_retrans)
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
type Reader struct {
	socks, self *ebpf.Map
	failures    bool
	gc          *bpfmap.Table[bpf.TcpNpFlowKey, fingerprint, struct{}]
	deleted     uint64
}

// Stats are the reader's and the kernel's counters about the table itself
// (running totals).
type Stats struct {
	Refused uint64 // events of sockets the full table could not take
	Deleted uint64 // idle entries deleted by Read
}

// IdleReads is how many consecutive reads a socket's entry must stay
// unchanged before Read deletes it.
const IdleReads = 3

// NewReader returns a reader over a loaded tcp probe.
func NewReader(l *loader.Loaded) (*Reader, error) {
	r := &Reader{socks: l.Maps[bpf.TcpMapNpTcpSocks], self: l.Maps[bpf.TcpMapNpTcpSelf],
		gc: bpfmap.NewTable[bpf.TcpNpFlowKey, fingerprint, struct{}](IdleReads)}
	if r.socks == nil || r.self == nil {
		return nil, fmt.Errorf("tcp reader: maps missing from probe %q", l.Probe)
	}
	for _, st := range l.Status {
		if st.Name == progRetransErr && st.Attached {
			r.failures = retransHasErr()
		}
	}
	return r, nil
}

// FailuresKnown reports whether failed retransmit attempts are counted
// (the kernel's tracepoint passes err); otherwise RetransFail is always 0
// and means "not measured".
func (r *Reader) FailuresKnown() bool { return r.failures }

// fingerprint changes whenever a socket's entry does.
type fingerprint struct {
	stamp, samples, fail uint64
	retrans              uint32
}

// Read returns every socket's running totals, then deletes the entries of
// sockets that did not change for IdleReads reads (their totals are the
// same as in the previous reads, so the next Diff finds nothing new in
// them; a socket that comes back gets a new entry counting from zero,
// which Diff takes as new).
func (r *Reader) Read() (map[Key]Sock, error) {
	out := map[Key]Sock{}
	var k bpf.TcpNpFlowKey
	var v bpf.TcpNpTcpVal
	it := r.socks.Iterate()
	for it.Next(&k, &v) {
		out[decodeKey(&k)] = merge([]bpf.TcpNpTcpVal{v})
		r.gc.Seen(&k, fingerprint{stamp: v.LastStampUs, samples: v.RttSamples, fail: v.RetransFail, retrans: v.TotalRetrans})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read tcp sockets: %w", err)
	}
	gone, err := r.gc.Collect(r.socks)
	r.deleted += uint64(gone)
	if err != nil {
		return out, fmt.Errorf("delete idle tcp sockets: %w", err)
	}
	return out, nil
}

// Stats returns the table's counters (see Stats).
func (r *Reader) Stats() Stats {
	st := Stats{Deleted: r.deleted}
	var vals []bpf.TcpNpTcpStats
	if err := r.self.Lookup(uint32(0), &vals); err == nil {
		for _, v := range vals {
			st.Refused += v.SocksRefused
		}
	}
	return st
}

func merge(vals []bpf.TcpNpTcpVal) Sock {
	var s Sock
	for _, v := range vals {
		s.Samples += v.RttSamples
		s.SumUs += v.RttSumUs
		s.RetransSegs = max(s.RetransSegs, uint64(v.TotalRetrans-min(v.TotalRetransBase, v.TotalRetrans)))
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
