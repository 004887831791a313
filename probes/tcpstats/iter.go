package tcpstats

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/bpfmap"
)

// The socket iterator (bpf/tcpiter.bpf.c) reads every TCP socket of a
// namespace once per interval: the kernel's own counters, no program per
// packet. It gives what TCP_INFO gives (bytes, segments, total_retrans,
// srtt, windowed min RTT, the latest RTT sample, cwnd, windows, delivery
// rate, busy / receive-window-limited / send-buffer-limited time) but no
// per-ACK RTT distribution: that needs the per-segment tcp:tcp_probe hook
// (Spec).

// Program names: the iterator, and the hook that keeps the final record
// of sockets that close between two reads.
const (
	IterProgram  = bpf.TcpiterProgNpTcpIter
	CloseProgram = bpf.TcpiterProgNpTcpClose
)

// IterOptions tunes the socket iterator probe.
type IterOptions struct {
	// ClosedEntries sizes the table of sockets closed between two reads
	// (default 4096, ~256 bytes of kernel memory each).
	ClosedEntries uint32
}

// IterSpec returns the loader spec of the socket iterator (Linux >= 5.9)
// and its close hook.
func IterSpec(opt IterOptions) (loader.Spec, error) {
	cs, err := bpf.LoadTcpiter()
	if err != nil {
		return loader.Spec{}, fmt.Errorf("tcp iterator spec: %w", err)
	}
	if opt.ClosedEntries == 0 {
		opt.ClosedEntries = 4096
	}
	cs.Maps[bpf.TcpiterMapNpTcpClosed].MaxEntries = opt.ClosedEntries
	return loader.Spec{
		Probe:      "tcpsock",
		Collection: cs,
		Programs: []loader.Program{
			{Name: IterProgram, Hook: "iter:tcp", Iter: true},
			{Name: CloseProgram, Hook: "sock:inet_sock_set_state"},
		},
	}, nil
}

// Netns is a network namespace whose sockets the iterator reads. The
// iterator walks the sockets of the namespace of the thread that opens
// it: Do runs fn on a thread inside the namespace (nil: the calling
// thread's own namespace).
type Netns struct {
	Inode uint64
	Do    func(fn func() error) error
}

// SockInfo is one socket as the iterator read it: running totals since
// the socket was created and the latest values.
type SockInfo struct {
	Key
	State uint8 // TCP_ESTABLISHED (1), ...
	// Running totals.
	BytesAcked, BytesReceived, BytesSent, BytesRetrans uint64
	SegsIn, SegsOut, DataSegsIn, DataSegsOut           uint32
	TotalRetrans                                       uint32 // segments
	// Chrono accounting, jiffies (see Jiffy): BusyJiffies is all the time
	// the socket had data to send (TCP_INFO's tcpi_busy_time), including
	// the parts the peer's receive window or the send buffer limited.
	BusyJiffies, RwndLimitedJiffies, SndbufLimitedJiffies uint64
	// Latest values.
	SrttUs, MinRttUs, LastRttUs uint32
	SndCwnd, MSS                uint32 // segments, bytes
	SndWnd, RcvWnd              uint32 // bytes
	// The latest delivery rate sample: RateDelivered segments in
	// RateIntervalUs (TCP_INFO's tcpi_delivery_rate is their quotient ×
	// MSS); RateAppLimited when the application, not the network, set it.
	RateDelivered, RateIntervalUs uint32
	RateAppLimited                bool
	// The clocks when the socket was read.
	NowNs, NowJiffies uint64
}

// DeliveryRateBps returns the latest delivery rate sample in bit/s
// (decimal), and false without a sample: 8 × tcpi_delivery_rate, which the
// kernel computes in integers as rate_delivered × mss × 10⁶ /
// rate_interval_us bytes/s, rounded down (the same arithmetic here, so the
// two agree to the bit).
func (s *SockInfo) DeliveryRateBps() (uint64, bool) {
	if s.RateIntervalUs == 0 {
		return 0, false
	}
	return uint64(s.RateDelivered) * uint64(s.MSS) * 1_000_000 / uint64(s.RateIntervalUs) * 8, true
}

// IterReader runs the socket iterator.
type IterReader struct {
	it     *link.Iter
	closed *ebpf.Map      // nil: the close hook is not attached
	lost   *ebpf.Variable // np_tcp_closed_lost
	buf    []bpf.TcpiterNpTcpRec
	batch  bpfmap.Batch[bpf.NetdevNpFlowKey, bpf.TcpiterNpTcpRec]
	keys   []bpf.NetdevNpFlowKey
}

// NewIterReader returns a reader over a loaded iterator probe, or an error
// when its iterator is not attached.
func NewIterReader(l *loader.Loaded) (*IterReader, error) {
	it := l.Iter(IterProgram)
	if it == nil {
		return nil, fmt.Errorf("tcp iterator: %s not attached in probe %q", IterProgram, l.Probe)
	}
	r := &IterReader{it: it}
	for _, st := range l.Status {
		if st.Name == CloseProgram && st.Attached {
			r.closed, r.lost = l.Maps[bpf.TcpiterMapNpTcpClosed], l.Variables[bpf.TcpiterVarNpTcpClosedLost]
		}
	}
	return r, nil
}

// ClosedKnown reports whether sockets closing between reads are seen
// (the close hook is attached).
func (r *IterReader) ClosedKnown() bool { return r.closed != nil }

// ClosedLost returns how many closed sockets the kernel's table had no
// room for since the probe was loaded (their last interval is missing).
func (r *IterReader) ClosedLost() (uint64, error) {
	if r.lost == nil {
		return 0, nil
	}
	var n uint64
	if err := r.lost.Get(&n); err != nil {
		return 0, fmt.Errorf("read np_tcp_closed_lost: %w", err)
	}
	return n, nil
}

// Read returns every full TCP socket (not listening, not TIME_WAIT) of the
// namespaces, read by one run of the iterator in each, and the final
// records of the namespaces' sockets that closed since the previous Read
// (drained first: a socket that closes after the drain is either still
// among the open ones or in the next Read's closed ones, never both).
func (r *IterReader) Read(nss []Netns) (open, closed []SockInfo, err error) {
	if closed, err = r.drainClosed(nss); err != nil {
		return nil, nil, err
	}
	for _, ns := range nss {
		read := func() error { return r.readOne(ns.Inode, &open) }
		if ns.Do != nil {
			err = ns.Do(read)
		} else {
			err = read()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("tcp iterator in netns %d: %w", ns.Inode, err)
		}
	}
	return open, closed, nil
}

// drainClosed reads and deletes every record of the close table, and
// returns those of the namespaces nss (all when one of them has inode 0:
// the caller's own, not known by number).
func (r *IterReader) drainClosed(nss []Netns) ([]SockInfo, error) {
	if r.closed == nil {
		return nil, nil
	}
	want := map[uint64]bool{}
	for _, ns := range nss {
		want[ns.Inode] = true
	}
	var out []SockInfo
	r.keys = r.keys[:0]
	err := r.batch.ReadAll(r.closed, func(k *bpf.NetdevNpFlowKey, v *bpf.TcpiterNpTcpRec) {
		r.keys = append(r.keys, *k)
		if want[v.Key.Netns] || want[0] {
			out = append(out, sockInfo(v))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read closed tcp sockets: %w", err)
	}
	if len(r.keys) > 0 {
		if _, err := bpfmap.DeleteKeys(r.closed, r.keys); err != nil {
			return nil, fmt.Errorf("delete closed tcp sockets: %w", err)
		}
	}
	return out, nil
}

const recSize = int(unsafe.Sizeof(bpf.TcpiterNpTcpRec{}))

func (r *IterReader) readOne(netns uint64, out *[]SockInfo) error {
	rc, err := r.it.Open()
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer rc.Close()
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]bpf.TcpiterNpTcpRec, max(64, len(r.buf)))...)
		}
		b := unsafe.Slice((*byte)(unsafe.Pointer(&r.buf[0])), len(r.buf)*recSize)
		m, err := io.ReadFull(rc, b[n*recSize:])
		n += m / recSize
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if m%recSize != 0 {
				return fmt.Errorf("read: %d bytes left over, records are %d", m%recSize, recSize)
			}
			break
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	for i := range r.buf[:n] {
		v := &r.buf[i]
		if v.Key.Netns != netns && netns != 0 {
			return fmt.Errorf("iterator read namespace %d's sockets, want %d", v.Key.Netns, netns)
		}
		*out = append(*out, sockInfo(v))
	}
	return nil
}

func sockInfo(v *bpf.TcpiterNpTcpRec) SockInfo {
	k := v.Key
	addr := func(b [16]uint8) netip.Addr {
		if k.Family == 4 {
			return netip.AddrFrom4([4]byte(b[:4]))
		}
		return netip.AddrFrom16(b)
	}
	return SockInfo{
		Key: Key{Netns: k.Netns, Family: k.Family,
			Local: netip.AddrPortFrom(addr(k.Laddr), k.Lport), Remote: netip.AddrPortFrom(addr(k.Raddr), k.Rport)},
		State:      v.State,
		BytesAcked: v.BytesAcked, BytesReceived: v.BytesReceived, BytesSent: v.BytesSent, BytesRetrans: v.BytesRetrans,
		SegsIn: v.SegsIn, SegsOut: v.SegsOut, DataSegsIn: v.DataSegsIn, DataSegsOut: v.DataSegsOut,
		TotalRetrans:       v.TotalRetrans,
		BusyJiffies:        v.BusyJiffies + v.RwndLimitedJiffies + v.SndbufLimitedJiffies,
		RwndLimitedJiffies: v.RwndLimitedJiffies, SndbufLimitedJiffies: v.SndbufLimitedJiffies,
		SrttUs: v.SrttUs, MinRttUs: v.MinRttUs, LastRttUs: v.LastRttUs,
		SndCwnd: v.SndCwnd, MSS: v.Mss, SndWnd: v.SndWnd, RcvWnd: v.RcvWnd,
		RateDelivered: v.RateDelivered, RateIntervalUs: v.RateIntervalUs, RateAppLimited: v.RateAppLimited != 0,
		NowNs: v.NowNs, NowJiffies: v.NowJiffies,
	}
}

// Jiffy converts the kernel's jiffies (the unit of the chrono times) to
// time without knowing CONFIG_HZ: it watches the iterator's two clocks
// (bpf_ktime_get_ns and bpf_jiffies64 at each read) and, once they are
// far enough apart, takes the standard HZ (100, 250, 300, 1000) their
// ratio is within 8% of (else the ratio itself).
type Jiffy struct {
	firstNs, firstJ uint64
	us              float64 // µs per jiffy; 0 until known
}

// minJiffySpan is how far apart (ns) two clock readings must be before
// their ratio is trusted: 200 ms is 20 jiffies at HZ=100 (±5% before the
// snap to a standard HZ, which then makes it exact).
const minJiffySpan = 200e6

// Observe feeds the clocks of one read.
func (c *Jiffy) Observe(ns, jiffies uint64) {
	if c.us != 0 || ns == 0 {
		return
	}
	if c.firstNs == 0 {
		c.firstNs, c.firstJ = ns, jiffies
		return
	}
	if ns < c.firstNs+minJiffySpan || jiffies <= c.firstJ {
		return
	}
	hz := float64(jiffies-c.firstJ) / (float64(ns-c.firstNs) / 1e9)
	for _, std := range []float64{100, 250, 300, 1000} {
		// Within 8% (the windows do not overlap): a guest that loses
		// timer ticks under emulation advances jiffies a few % slow.
		if hz > std*0.92 && hz < std*1.08 {
			hz = std
		}
	}
	c.us = 1e6 / hz
}

// Micros returns j jiffies in µs, and false while the ratio is unknown.
func (c *Jiffy) Micros(j uint64) (uint64, bool) {
	if c.us == 0 {
		return 0, false
	}
	return uint64(float64(j)*c.us + 0.5), true
}
