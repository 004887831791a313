package tcpstats

import (
	"context"
	"io"
	"math"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

func loadIter(t *testing.T) *IterReader {
	t.Helper()
	spec, err := IterSpec(IterOptions{})
	l := kerneltest.Load(t, spec, err)
	r, err := NewIterReader(l)
	if err != nil {
		t.Fatalf("%v: %+v", err, l.Status)
	}
	return r
}

// The iterator's figures for both ends of a connection against the
// kernel's own TCP_INFO of the same sockets, read while the connection is
// quiet (two TCP_INFO reads around the iterator agree): totals exactly,
// busy time to the jiffy. Each namespace's run sees its own sockets only,
// and no listener.
func TestIterMatchesTCPInfo(t *testing.T) {
	r := loadIter(t)
	bed := testbedtest.New(t, testbed.Options{})
	a, b := bed.A(), bed.B()
	ln, err := b.Listen("tcp", netip.AddrPortFrom(b.Addr, 5301).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 8 << 20
	got, done := make(chan int64, 1), make(chan struct{})
	defer close(done)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, io.LimitReader(c, size))
		got <- n
		<-done // the receiver stays open until the test ends
	}()
	c, err := a.Dial(context.Background(), "tcp", netip.AddrPortFrom(b.Addr, 5301).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != size {
		t.Fatalf("receiver got %d of %d bytes", n, size)
	}
	nss := []Netns{{Inode: a.NetnsInode(), Do: a.Do}, {Inode: b.NetnsInode(), Do: b.Do}}
	var jf Jiffy
	first, _, err := r.Read(nss)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range first {
		jf.Observe(s.NowNs, s.NowJiffies)
	}
	time.Sleep(300 * time.Millisecond)
	local := c.LocalAddr().(*net.TCPAddr).AddrPort()
	for try := 0; ; try++ {
		before := tcpInfo(t, c)
		socks, _, err := r.Read(nss)
		if err != nil {
			t.Fatal(err)
		}
		after := tcpInfo(t, c)
		if before != after && try < 20 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var snd, rcv *SockInfo
		for i := range socks {
			s := &socks[i]
			jf.Observe(s.NowNs, s.NowJiffies)
			switch {
			case s.Netns == a.NetnsInode() && s.Local.Port() == local.Port():
				snd = s
			case s.Netns == b.NetnsInode() && s.Remote.Port() == local.Port():
				rcv = s
			case s.Netns == b.NetnsInode() && s.Local.Port() == 5301 && s.Remote.Port() == 0:
				t.Errorf("listener in the iterator's output: %+v", s.Key)
			}
		}
		if snd == nil || rcv == nil {
			t.Fatalf("sender %v or receiver %v socket missing from %d sockets", snd != nil, rcv != nil, len(socks))
		}
		ti := after
		check := func(name string, got, want uint64) {
			t.Helper()
			if got != want {
				t.Errorf("sender %s: iterator %d, TCP_INFO %d", name, got, want)
			}
		}
		check("bytes_acked", snd.BytesAcked, ti.Bytes_acked)
		check("bytes_sent", snd.BytesSent, ti.Bytes_sent)
		check("bytes_retrans", snd.BytesRetrans, ti.Bytes_retrans)
		check("segs_out", uint64(snd.SegsOut), uint64(ti.Segs_out))
		check("data_segs_out", uint64(snd.DataSegsOut), uint64(ti.Data_segs_out))
		check("segs_in", uint64(snd.SegsIn), uint64(ti.Segs_in))
		check("total_retrans", uint64(snd.TotalRetrans), uint64(ti.Total_retrans))
		check("srtt_us", uint64(snd.SrttUs), uint64(ti.Rtt))
		check("min_rtt_us", uint64(snd.MinRttUs), uint64(ti.Min_rtt))
		check("snd_cwnd", uint64(snd.SndCwnd), uint64(ti.Snd_cwnd))
		check("mss", uint64(snd.MSS), uint64(ti.Snd_mss))
		check("snd_wnd", uint64(snd.SndWnd), uint64(ti.Snd_wnd))
		if ti.Rcv_wnd != 0 { // TCP_INFO has tcpi_rcv_wnd from Linux 6.2 (0 before)
			check("rcv_wnd", uint64(snd.RcvWnd), uint64(ti.Rcv_wnd))
		}
		if rate, ok := snd.DeliveryRateBps(); !ok || rate != 8*ti.Delivery_rate {
			t.Errorf("delivery rate: iterator %d bit/s (sample %v), TCP_INFO %d B/s", rate, ok, ti.Delivery_rate)
		}
		for _, x := range []struct {
			name string
			j    uint64
			want uint64
		}{{"busy", snd.BusyJiffies, ti.Busy_time}, {"rwnd_limited", snd.RwndLimitedJiffies, ti.Rwnd_limited},
			{"sndbuf_limited", snd.SndbufLimitedJiffies, ti.Sndbuf_limited}} {
			us, ok := jf.Micros(x.j)
			if !ok {
				t.Fatalf("jiffy ratio unknown after reads 300 ms apart")
			}
			if us != x.want {
				t.Errorf("sender %s time: iterator %d jiffies = %d µs, TCP_INFO %d µs", x.name, x.j, us, x.want)
			}
		}
		if ti.Busy_time == 0 {
			t.Errorf("sender busy time 0 after sending %d bytes", size)
		}
		if rcv.BytesReceived != size {
			t.Errorf("receiver bytes_received %d, the application read %d", rcv.BytesReceived, size)
		}
		t.Logf("sender: %d B acked, %d segs out, srtt %d µs, busy %d jiffies = %d µs; receiver: %d B",
			snd.BytesAcked, snd.SegsOut, snd.SrttUs, snd.BusyJiffies, ti.Busy_time, rcv.BytesReceived)
		return
	}
}

func tcpInfo(t *testing.T, c net.Conn) unix.TCPInfo {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ti *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) { ti, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return *ti
}

// Both ends of a connection close between two reads: the next read has
// their final records (with the client's automatically bound port, which
// the kernel releases before the close hook runs) and neither among the
// open sockets. The receiver's bytes_received is what its application read
// plus the FIN; the sender's bytes_acked what it wrote plus SYN and FIN.
func TestIterClosedSockets(t *testing.T) {
	r := loadIter(t)
	if !r.ClosedKnown() {
		t.Fatal("close hook not attached")
	}
	bed := testbedtest.New(t, testbed.Options{})
	a, b := bed.A(), bed.B()
	nss := []Netns{{Inode: a.NetnsInode(), Do: a.Do}, {Inode: b.NetnsInode(), Do: b.Do}}
	if _, _, err := r.Read(nss); err != nil { // drain what other tests left
		t.Fatal(err)
	}
	ln, err := b.Listen("tcp", netip.AddrPortFrom(b.Addr, 5302).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 3<<20 + 17
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c) // until the sender's FIN
		c.Close()
		got <- n
	}()
	c, err := a.Dial(context.Background(), "tcp", netip.AddrPortFrom(b.Addr, 5302).String())
	if err != nil {
		t.Fatal(err)
	}
	local := c.LocalAddr().(*net.TCPAddr).AddrPort()
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := <-got; n != size {
		t.Fatalf("receiver read %d of %d bytes", n, size)
	}
	var snd, rcv *SockInfo
	for try := 0; try < 50 && (snd == nil || rcv == nil); try++ {
		time.Sleep(20 * time.Millisecond) // the sender reaches CLOSE when the receiver's FIN is acked
		_, closed, err := r.Read(nss)
		if err != nil {
			t.Fatal(err)
		}
		for i := range closed {
			s := closed[i]
			switch {
			case s.Netns == a.NetnsInode() && s.Local.Port() == local.Port():
				snd = &s
			case s.Netns == b.NetnsInode() && s.Remote.Port() == local.Port():
				rcv = &s
			}
		}
	}
	if snd == nil || rcv == nil {
		t.Fatalf("closed records: sender %v, receiver %v", snd != nil, rcv != nil)
	}
	if snd.BytesAcked != size+2 || rcv.BytesReceived != size+1 {
		t.Errorf("sender bytes_acked %d (want %d + SYN + FIN), receiver bytes_received %d (want %d + FIN)",
			snd.BytesAcked, size, rcv.BytesReceived, size)
	}
	if snd.Local.Addr() != a.Addr || snd.Remote != netip.AddrPortFrom(b.Addr, 5302) {
		t.Errorf("sender key %v -> %v, want %v -> %v:5302", snd.Local, snd.Remote, local, b.Addr)
	}
}

// A socket whose busy time reads lower than at the previous read (the
// running chrono is added up to each read) is not taken for a new socket:
// its interval is the growth of its byte and retransmit counters, busy 0.
// One whose byte counters went back was re-created: counted from zero.
func TestIterSamplerCountsFromPrevious(t *testing.T) {
	s := &IterSampler{}
	s.jiffy.us = 4000 // HZ 250
	k := Key{Netns: 1, Family: 4, Local: netip.MustParseAddrPort("198.18.0.1:40000"), Remote: netip.MustParseAddrPort("198.18.0.2:5001")}
	p := SockInfo{Key: k, BytesAcked: 1000, TotalRetrans: 5, BusyJiffies: 10, SegsOut: 10, DataSegsOut: math.MaxUint32 - 2}
	c := SockInfo{Key: k, BytesAcked: 1500, TotalRetrans: 7, BusyJiffies: 9, SegsOut: 15, DataSegsOut: 4}
	var iv trace.Interval
	s.add(&iv, flowIndex(&iv), p, &c)
	if len(iv.Flows) != 1 {
		t.Fatalf("%d rows", len(iv.Flows))
	}
	r := iv.Flows[0]
	if *r.TCPBytesAcked != 500 || r.Retransmits != 2 || *r.TCPBusyUs != 0 || *r.TCPDataSegsOut != 7 {
		t.Errorf("row: acked %d, retransmits %d, busy %d µs, data segments %d (across the 32-bit wrap); want 500, 2, 0, 7",
			*r.TCPBytesAcked, r.Retransmits, *r.TCPBusyUs, *r.TCPDataSegsOut)
	}
	c.BytesAcked = 300 // a new socket with the same addresses
	iv = trace.Interval{}
	s.add(&iv, flowIndex(&iv), p, &c)
	if r := iv.Flows[0]; *r.TCPBytesAcked != 300 || r.Retransmits != 7 || *r.TCPBusyUs != 36000 {
		t.Errorf("re-created socket: acked %d, retransmits %d, busy %d µs; want 300, 7, 36000", *r.TCPBytesAcked, r.Retransmits, *r.TCPBusyUs)
	}
}
