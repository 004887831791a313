package trace

import "time"

// Socket event kinds in SocketRow.Event.
const (
	// SocketOpen: the connection reached ESTABLISHED (from SYN_SENT for an
	// active open, SYN_RECV for a passive one).
	SocketOpen = "open"
	// SocketClose: the connection reached CLOSE.
	SocketClose = "close"
)

// SocketRow is one TCP connection event × interval, from the
// sock:inet_sock_set_state tracepoint (sockstate probe; tp_btf, Linux >=
// 5.12). A connection has an "open" row in the interval in which it was
// established and a "close" row in the interval in which it reached CLOSE
// (both rows in one interval for a connection shorter than it); Cookie joins
// them. Only connections established while the probe was attached are
// reported; events the kernel could not hand over are counted in
// probes.parquet (hook "map:sockstate", map_update_failures).
//
// Src is the LOCAL end in the connection's network namespace and Dst the
// remote end, as in FlowRow: a connection between two namespaces on one host
// appears once per side (the connecting side with Active true, the accepting
// side with Active false).
//
// Unlike the counter tables, BytesAcked, BytesReceived, TotalRetrans and
// Segs* are the connection's totals at the event (struct tcp_sock, RFC 4898
// semantics), not per-interval deltas: an event happens once.
type SocketRow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	// Netns is the inode number of the socket's network namespace.
	Netns uint64 `parquet:"netns"`
	// Family is 4 or 6; IPv4-mapped IPv6 connections are 4.
	Family  uint8  `parquet:"family"`
	SrcAddr string `parquet:"src_addr"`
	SrcPort uint16 `parquet:"src_port"`
	DstAddr string `parquet:"dst_addr"`
	DstPort uint16 `parquet:"dst_port"`
	// Event is SocketOpen or SocketClose.
	Event string `parquet:"event"`
	// Active is true for a connection this end opened (connect), false for
	// one it accepted.
	Active bool `parquet:"active"`
	// Cookie is the kernel's socket cookie (as `ss -e` prints it after
	// "sk:"), unique per socket while the host is up.
	Cookie uint64 `parquet:"cookie"`
	// OpenTime is when the connection reached ESTABLISHED.
	OpenTime time.Time `parquet:"open_time,timestamp(microsecond:utc)"`
	// CloseTime is when it reached CLOSE; null on open rows.
	CloseTime *time.Time `parquet:"close_time,optional,timestamp(microsecond:utc)"`
	// DurationNs is CLOSE minus ESTABLISHED in kernel monotonic
	// nanoseconds (exact; the timestamps are µs); null on open rows.
	DurationNs *uint64 `parquet:"duration_ns,optional"`
	// BytesAcked is bytes this end sent that the peer acknowledged
	// (tcp_sock.bytes_acked); BytesReceived is bytes received in order
	// (tcp_sock.bytes_received). Both at the event. They follow sequence
	// numbers: payload plus one per SYN this end sent (active side only)
	// and per FIN (on close rows, typically +2 / +1 over the payload).
	BytesAcked    uint64 `parquet:"bytes_acked"`
	BytesReceived uint64 `parquet:"bytes_received"`
	// TotalRetrans is segments retransmitted by this end over the
	// connection's life (tcp_sock.total_retrans); meaningful on the sender.
	TotalRetrans uint32 `parquet:"total_retrans"`
	// SegsOut and SegsIn are segments sent and received, pure ACKs
	// included (tcp_sock.segs_out/segs_in); null where the kernel lacks them.
	SegsOut *uint32 `parquet:"segs_out,optional"`
	SegsIn  *uint32 `parquet:"segs_in,optional"`
	// CloseFromState is the state the connection left for CLOSE
	// ("FIN_WAIT2", "LAST_ACK", "ESTABLISHED" on a reset, ...); null on
	// open rows.
	CloseFromState *string `parquet:"close_from_state,optional"`
}
