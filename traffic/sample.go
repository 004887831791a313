package traffic

import (
	"context"
	"net"
	"syscall"
)

// Roles of a StreamSample.
const (
	RoleSender   = "sender"
	RoleReceiver = "receiver"
)

// StreamSample is one stream's cumulative state at the moment it was taken.
type StreamSample struct {
	// Stream is the stream index, 0..Config.Streams-1, the same on both
	// ends of a connection.
	Stream int
	// Role is RoleSender or RoleReceiver.
	Role string
	// LocalAddr and RemoteAddr are the connection's endpoints (ip:port).
	LocalAddr, RemoteAddr string
	// AppBytes is the payload written (sender) or read (receiver) so far,
	// cumulative, excluding the protocol's hello, ack and trailer.
	AppBytes uint64
	// TCP is the kernel's TCP_INFO for the sender's socket; nil on the
	// receiver (retransmits are counted on the sender), and nil if the
	// connection gives no access to its socket. After the stream is closed
	// it holds the last values read before closing.
	TCP *TCPInfo
	// Steering is where the kernel processed the receiver's packets: nil on
	// the sender, and until first read.
	Steering *Steering
}

// Steering is a receiving socket's SO_INCOMING_CPU (the CPU that last
// processed a packet for it: where RSS/RPS steered the flow) and
// SO_INCOMING_NAPI_ID (the NAPI context, i.e. the NIC receive queue, that
// delivered it; 0 when none, e.g. veth without GRO/XDP).
type Steering struct {
	CPU    int32
	NapiID uint32
}

// TCPInfo is the part of the kernel's struct tcp_info a run records.
type TCPInfo struct {
	// TotalRetrans is tcpi_total_retrans: segments retransmitted over the
	// connection's life, cumulative.
	TotalRetrans uint64
	// RttUs is tcpi_rtt: the smoothed round-trip time in microseconds.
	RttUs uint32
	// SndCwnd is tcpi_snd_cwnd: the congestion window in segments (of
	// SndMss bytes).
	SndCwnd uint32
	// SndMss is tcpi_snd_mss: the sender's maximum segment size in bytes.
	SndMss uint32
	// BytesAcked is tcpi_bytes_acked: bytes the peer acknowledged,
	// cumulative (payload plus this package's hello; kernel >= 4.1).
	BytesAcked uint64
	// What limited the sender, the kernel's chrono accounting (kernel >=
	// 4.10), cumulative µs: BusyUs is tcpi_busy_time, the time the socket
	// had data to send; RwndLimitedUs (tcpi_rwnd_limited) and
	// SndbufLimitedUs (tcpi_sndbuf_limited) are the parts of it the peer's
	// receive window and this socket's send buffer limited. (Measured on
	// 6.12 and 6.18: 2.15 s busy over 2.16 s of sending, 2.10 s of it
	// rwnd-limited.)
	BusyUs, RwndLimitedUs, SndbufLimitedUs uint64
	// DeliveryRateBps is tcpi_delivery_rate × 8: the latest delivery rate
	// sample, bit/s.
	DeliveryRateBps uint64
	// SndWnd is tcpi_snd_wnd: the peer's advertised receive window, bytes
	// (kernel >= 5.4; 0 before).
	SndWnd uint32
}

// DialFunc opens a connection, as net.Dialer.DialContext does. network is
// always "tcp".
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// rawConn returns c's syscall.RawConn, or nil if c does not expose one.
func rawConn(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
