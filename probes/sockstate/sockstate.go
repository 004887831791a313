// Package sockstate is the TCP connection-lifecycle probe: one event when
// a connection opens and one when it closes, with its 4-tuple, network
// namespace, direction, duration and final byte, segment and retransmit
// counts, from sock:inet_sock_set_state attached as tp_btf (Linux >= 5.12
// with BTF: the program keys connections by bpf_get_socket_cookie).
//
// Open is the transition to ESTABLISHED (from SYN_SENT: active, connect;
// from SYN_RECV: passive, accept). Close is the transition to CLOSE, when
// the counters of struct tcp_sock are final (at the first transition out of
// ESTABLISHED, data in flight is not yet acknowledged). Only connections
// opened while the probe is attached are reported: the kernel keeps each
// open connection's start in a hash table until its close.
//
// Events travel through a BPF ring buffer drained by a goroutine (Reader),
// at each Drain or when the ring is a quarter full.
// Events the kernel could not deliver (ring buffer or connection table
// full) are counted, never silently dropped (Stats.Lost).
package sockstate

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
)

// Options tunes the probe.
type Options struct {
	// ConnEntries sizes the kernel's table of open connections (default
	// DefaultConnEntries). A connection opened while it is full is reported
	// open but its close is lost (counted in Stats.ConnTableFull).
	ConnEntries uint32
	// RingBytes sizes the ring buffer in bytes: a power of two, at least
	// the page size (default DefaultRingBytes). One event takes 112 bytes.
	RingBytes uint32
}

// Defaults for Options fields left 0.
const (
	DefaultConnEntries = 65536
	DefaultRingBytes   = 256 << 10
)

// Spec returns the loader spec of the probe with its tables sized. It
// returns an error if RingBytes is not a power of two.
func Spec(opt Options) (loader.Spec, error) {
	if n := opt.RingBytes; n != 0 && n&(n-1) != 0 {
		return loader.Spec{}, fmt.Errorf("sockstate spec: ring size %d bytes is not a power of two", n)
	}
	cs, err := bpf.LoadSockstate()
	if err != nil {
		return loader.Spec{}, fmt.Errorf("sockstate spec: %w", err)
	}
	conns, ring := opt.ConnEntries, opt.RingBytes
	if conns == 0 {
		conns = DefaultConnEntries
	}
	if ring == 0 {
		ring = DefaultRingBytes
	}
	cs.Maps[bpf.SockstateMapNpSsConns].MaxEntries = conns
	cs.Maps[bpf.SockstateMapNpSsEvents].MaxEntries = ring
	return loader.Spec{
		Probe:      "sockstate",
		Collection: cs,
		Programs: []loader.Program{
			{Name: bpf.SockstateProgNpSsState, Hook: "sock:inet_sock_set_state"},
		},
	}, nil
}

// Kind says which end of a connection's life an Event is.
type Kind uint8

// Event kinds (the kernel's NP_SOCK_OPEN and NP_SOCK_CLOSE).
const (
	Open  Kind = 1
	Close Kind = 2
)

// String returns "open" or "close" (trace.SocketOpen, trace.SocketClose).
func (k Kind) String() string {
	switch k {
	case Open:
		return "open"
	case Close:
		return "close"
	}
	return fmt.Sprintf("kind_%d", uint8(k))
}

// State is a TCP state number (include/net/tcp_states.h).
type State uint8

var stateNames = [...]string{1: "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
	"TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV", "BOUND_INACTIVE"}

// String returns the state's name as `ss` prints it in upper case
// ("FIN_WAIT2"), or "STATE_<n>" for a number it does not know.
func (s State) String() string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return fmt.Sprintf("STATE_%d", uint8(s))
}

// Event is one decoded ring-buffer record. Times are bpf_ktime_get_ns()
// (CLOCK_MONOTONIC, ns); Clock.Time converts them to wall-clock time.
// Counters are the connection's totals at the event, from struct tcp_sock.
type Event struct {
	Kind   Kind
	Netns  uint64 // network namespace inode
	Cookie uint64 // socket cookie
	Family uint8  // 4 or 6 (IPv4-mapped IPv6 connections are 4)
	Local  netip.AddrPort
	Remote netip.AddrPort
	Active bool   // opened by connect (true) or accepted (false)
	OpenNs uint64 // when the connection reached ESTABLISHED
	// CloseNs is when it reached CLOSE, 0 on Open events.
	CloseNs uint64
	// BytesAcked (tcp_sock.bytes_acked: bytes the peer acknowledged) and
	// BytesReceived (tcp_sock.bytes_received: bytes received in order)
	// follow sequence numbers: payload plus one per SYN sent (active
	// side) and per FIN.
	BytesAcked    uint64
	BytesReceived uint64
	TotalRetrans  uint32 // tcp_sock.total_retrans, segments
	// SegsOut and SegsIn (tcp_sock.segs_out/segs_in, segments incl. pure
	// ACKs) are valid when HaveSegs (the kernel has the fields).
	SegsOut, SegsIn uint32
	HaveSegs        bool
	// FromState is the state the connection left for CLOSE (Close events).
	FromState State
}

// TimeNs returns when the event happened: OpenNs for Open, CloseNs for Close.
func (e Event) TimeNs() uint64 {
	if e.Kind == Close {
		return e.CloseNs
	}
	return e.OpenNs
}

// DurationNs returns CloseNs - OpenNs for a Close event, 0 otherwise.
func (e Event) DurationNs() uint64 {
	if e.Kind != Close || e.CloseNs < e.OpenNs {
		return 0
	}
	return e.CloseNs - e.OpenNs
}

const haveSegs = 1 // NP_SOCK_HAVE_SEGS

// EventSize is the size in bytes of one ring-buffer record.
var EventSize = binary.Size(bpf.SockstateNpSockEvent{})

// Decode decodes one ring-buffer record (struct np_sock_event, host byte
// order). It returns an error for a record shorter than EventSize or of an
// unknown kind.
func Decode(b []byte) (Event, error) {
	var r bpf.SockstateNpSockEvent
	if _, err := binary.Decode(b, binary.NativeEndian, &r); err != nil {
		return Event{}, fmt.Errorf("decode sockstate event (%d bytes): %w", len(b), err)
	}
	k := Kind(r.Kind)
	if k != Open && k != Close {
		return Event{}, fmt.Errorf("decode sockstate event: unknown kind %d", r.Kind)
	}
	c := &r.Conn
	addr := func(b [16]uint8) netip.Addr {
		if c.Family == 4 {
			return netip.AddrFrom4([4]byte(b[:4]))
		}
		return netip.AddrFrom16(b)
	}
	return Event{
		Kind: k, Netns: c.Netns, Cookie: c.Cookie, Family: c.Family,
		Local:  netip.AddrPortFrom(addr(c.Laddr), c.Lport),
		Remote: netip.AddrPortFrom(addr(c.Raddr), c.Rport),
		Active: c.Active != 0, OpenNs: c.OpenNs, CloseNs: r.CloseNs,
		BytesAcked: r.BytesAcked, BytesReceived: r.BytesReceived, TotalRetrans: r.TotalRetrans,
		SegsOut: r.SegsOut, SegsIn: r.SegsIn, HaveSegs: r.Flags&haveSegs != 0,
		FromState: State(r.FromState),
	}, nil
}
