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
		BusyUs:       ti.Busy_time, RwndLimitedUs: ti.Rwnd_limited, SndbufLimitedUs: ti.Sndbuf_limited,
		DeliveryRateBps: ti.Delivery_rate * 8, SndWnd: ti.Snd_wnd,
	}
}

// readSteering reads SO_INCOMING_CPU and SO_INCOMING_NAPI_ID from rc's
// socket; nil if rc is nil or closed, or the kernel has not set the CPU yet
// (-1).
func readSteering(rc syscall.RawConn) *Steering {
	if rc == nil {
		return nil
	}
	var cpu, napi int
	var err1, err2 error
	if cerr := rc.Control(func(fd uintptr) {
		cpu, err1 = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_INCOMING_CPU)
		napi, err2 = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_INCOMING_NAPI_ID)
	}); cerr != nil || err1 != nil || cpu < 0 {
		return nil
	}
	s := &Steering{CPU: int32(cpu)}
	if err2 == nil {
		s.NapiID = uint32(napi)
	}
	return s
}

// pinThread binds the calling OS thread to cpu.
func pinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}
