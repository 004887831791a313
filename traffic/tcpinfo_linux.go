package traffic

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// readTCPInfo reads TCP_INFO from rc's socket. It returns nil if rc is nil,
// closed, or not a TCP socket. Safe while other goroutines use the socket.
func readTCPInfo(rc syscall.RawConn) *TCPInfo {
	if rc == nil {
		return nil
	}
	var ti *unix.TCPInfo
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		ti, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); cerr != nil || err != nil {
		return nil
	}
	return &TCPInfo{
		TotalRetrans: uint64(ti.Total_retrans),
		RttUs:        ti.Rtt,
		SndCwnd:      ti.Snd_cwnd,
		SndMss:       ti.Snd_mss,
		BytesAcked:   ti.Bytes_acked,
	}
}
