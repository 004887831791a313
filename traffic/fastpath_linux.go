package traffic

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linux fast path of the receiver's hot loop, used only on TCP sockets (any
// other connection takes the generic net.Conn.Read loop):
//
//   - recv(MSG_TRUNC): on a TCP socket (tcp(7), since Linux 2.4.4) the
//     kernel counts and frees the queued bytes without copying them into
//     user space. The payload is synthetic and nobody looks at it, and the
//     count recv returns is exact, so the trailer check is unchanged. On
//     the local veth test bed this removes one of the transfer's two
//     copies, the expensive one (data written on one CPU, read on another).
//   - SO_RCVLOWAT (receivers of more than one stream): the reader is woken
//     once per defaultRcvLowat bytes (or the read size, if smaller) instead
//     of per burst of segments.
//
// The sender keeps net.Conn.Write (no allocation per write). Measured on the
// veth bed with this receiver (figures in the note of issue #4):
// sendfile(2) from a memfd, which attaches pages by reference instead of
// copying, was slower with one stream (page reference counts bounce
// between the sending and the freeing CPU) and no better with 4 and 16;
// MSG_ZEROCOPY was slower still: every send completed as copied
// (SO_EE_CODE_ZEROCOPY_COPIED, the kernel copies when it delivers to a
// local socket), and the completions on the error queue raise EPOLLERR,
// which Go's poller turns into read errors unless the queue is drained.

// fastPaths selects the fast paths; tests switch them off one by one to
// measure what each buys. Set it only while no Receiver runs.
var fastPaths = fastPathConfig{trunc: true, rcvLowat: defaultRcvLowat}

type fastPathConfig struct {
	trunc    bool // recv(MSG_TRUNC)
	rawRead  bool // plain recv(2) through RawConn when trunc is off (for comparison)
	rcvLowat int  // SO_RCVLOWAT in bytes, capped at the read size; 0 leaves it
	// lowatSingle sets SO_RCVLOWAT on a single-stream receiver too. Off:
	// measured, it cost a single stream 10-20% of goodput and CPU per GB
	// (the reader sleeps while the window closes), while it saved 5-10% of
	// CPU per GB with 4 and 16 streams.
	lowatSingle bool
}

// defaultRcvLowat is the SO_RCVLOWAT a receiver of several streams asks for
// (at most its read size, and at most an eighth of the socket's receive
// buffer, so a small window chosen by the user is not held back): it
// batches wake-ups and stays far below the window (the kernel also wakes
// the reader when the receive window runs low, and always at FIN).
const defaultRcvLowat = 256 << 10

// lowatAfter is how many bytes a stream receives before SO_RCVLOWAT is set:
// by then receive-buffer autotuning has grown the buffer, so the eighth
// taken of it reflects the window the stream really has.
const lowatAfter = 4 << 20

// isTCP reports whether rc is a TCP socket (SO_PROTOCOL), the only kind the
// fast path may touch: MSG_TRUNC means other things on other sockets.
func isTCP(rc syscall.RawConn) bool {
	if rc == nil {
		return false
	}
	proto := -1
	if err := rc.Control(func(fd uintptr) {
		proto, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PROTOCOL)
	}); err != nil {
		return false
	}
	return proto == unix.IPPROTO_TCP
}

// receiveFast runs the receiver's fast path on rc until EOF: recv with
// MSG_TRUNC into sink's shared buffer (which the kernel never writes), and
// with more than one stream SO_RCVLOWAT once lowatAfter bytes arrived. It
// returns errFastPathUnsupported, having read nothing, if rc is not a TCP
// socket, the fast path is off, or the kernel refuses MSG_TRUNC.
func receiveFast(rc syscall.RawConn, sink *recvSink, streams int, count func(int)) error {
	if !isTCP(rc) {
		return errFastPathUnsupported
	}
	lowat := 0
	if streams > 1 || fastPaths.lowatSingle {
		lowat = min(fastPaths.rcvLowat, sink.size)
	}
	switch {
	case fastPaths.trunc:
		return recvLoop(rc, sink.discard(), unix.MSG_TRUNC, lowat, count)
	case fastPaths.rawRead:
		return recvLoop(rc, make([]byte, sink.size), 0, lowat, count)
	}
	return errFastPathUnsupported
}

// recvLoop receives on rc with recv(2) and flags, up to len(buf) bytes per
// call, calling count with each byte count, until EOF (nil) or an error;
// after lowatAfter bytes it sets SO_RCVLOWAT to lowat (if > 0, see
// setRcvLowat). It returns errFastPathUnsupported if the very first call
// fails with EINVAL or EOPNOTSUPP (flags refused). A concurrent Close ends
// it with an error, as it does a net.Conn.Read.
func recvLoop(rc syscall.RawConn, buf []byte, flags, lowat int, count func(int)) error {
	var total int
	for {
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = recvFlags(int(fd), buf, flags)
			return rerr != unix.EAGAIN
		})
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if rerr != nil {
			if total == 0 && (rerr == unix.EINVAL || rerr == unix.EOPNOTSUPP) {
				return fmt.Errorf("recv flags %#x: %w: %w", flags, errFastPathUnsupported, rerr)
			}
			return fmt.Errorf("recv: %w", rerr)
		}
		if n == 0 {
			return nil // EOF
		}
		count(n)
		if total < lowatAfter && total+n >= lowatAfter {
			setRcvLowat(rc, lowat)
		}
		total += n
	}
}

// recvFlags is recv(2) without the source address (which unix.Recvfrom
// would decode, and a stream socket does not have). buf must not be empty.
func recvFlags(fd int, buf []byte, flags int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// setRcvLowat sets SO_RCVLOWAT on rc's socket to v, at most an eighth of
// its receive buffer (SO_RCVBUF); nothing if that is not positive. Errors
// are ignored: it is only an optimisation.
func setRcvLowat(rc syscall.RawConn, v int) {
	if v <= 0 {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		rcvbuf, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		if err != nil {
			return
		}
		if v = min(v, rcvbuf/8); v > 0 {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT, v)
		}
	})
}
