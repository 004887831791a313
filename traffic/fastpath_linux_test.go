package traffic

import (
	"bytes"
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		c.Close()
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func TestIsTCP(t *testing.T) {
	c, _ := tcpPair(t)
	if !isTCP(rawConn(c)) {
		t.Error("loopback TCP connection not recognised as TCP")
	}
	if isTCP(nil) {
		t.Error("nil RawConn taken for TCP")
	}
	u1, u2 := unixPair(t)
	if isTCP(rawConn(u1)) || isTCP(rawConn(u2)) {
		t.Error("unix stream socket taken for TCP")
	}
}

// unixPair returns a connected pair of unix stream sockets (net.Conns that
// expose a socket that is not TCP).
func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	path := t.TempDir() + "/s"
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		c.Close()
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// recv(MSG_TRUNC) on TCP must count every byte sent, stop at EOF, and leave
// the buffer untouched: the data is discarded in the kernel, not copied.
func TestRecvTruncDiscardsWithoutCopy(t *testing.T) {
	c, s := tcpPair(t)
	const total = 5<<20 + 123
	go func() {
		block := bytes.Repeat([]byte{0x55}, 64<<10)
		for left := total; left > 0; {
			n, err := c.Write(block[:min(len(block), left)])
			if err != nil {
				return
			}
			left -= n
		}
		_ = c.CloseWrite()
	}()
	buf := bytes.Repeat([]byte{0xAA}, 256<<10)
	var got int
	if err := recvLoop(rawConn(s), buf, unix.MSG_TRUNC, 128<<10, func(n int) { got += n }); err != nil {
		t.Fatal(err)
	}
	if got != total {
		t.Errorf("counted %d bytes, sent %d", got, total)
	}
	if n := bytes.Count(buf, []byte{0xAA}); n != len(buf) {
		t.Errorf("%d bytes of the buffer changed: MSG_TRUNC copied data to user space", len(buf)-n)
	}
}

// A receiver of several streams sets SO_RCVLOWAT once lowatAfter bytes
// arrived, capped at an eighth of the receive buffer; one of a single
// stream leaves it (measured: it cost a single stream goodput and CPU).
func TestRcvLowatPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		streams int
		rcvbuf  int  // SO_RCVBUF set on the receiving socket; 0: autotuned
		set     bool // SO_RCVLOWAT expected to change
	}{
		{"one stream", 1, 0, false},
		{"four streams", 4, 0, true},
		{"four streams, small window", 4, 64 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := tcpPair(t)
			rc := rawConn(s)
			if tc.rcvbuf > 0 {
				if err := s.SetReadBuffer(tc.rcvbuf); err != nil {
					t.Fatal(err)
				}
			}
			before := sockoptInt(t, rc, unix.SO_RCVLOWAT)
			go func() {
				block := make([]byte, 1<<20)
				for range (lowatAfter >> 20) + 2 {
					if _, err := c.Write(block); err != nil {
						return
					}
				}
				_ = c.CloseWrite()
			}()
			sink := &recvSink{size: 100_000}
			var got int
			if err := receiveFast(rc, sink, tc.streams, func(n int) { got += n }); err != nil || got != lowatAfter+2<<20 {
				t.Fatalf("receiveFast = %v after %d bytes, want nil after %d", err, got, lowatAfter+2<<20)
			}
			lowat, rcvbuf := sockoptInt(t, rc, unix.SO_RCVLOWAT), sockoptInt(t, rc, unix.SO_RCVBUF)
			switch {
			case !tc.set && lowat != before:
				t.Errorf("SO_RCVLOWAT changed from %d to %d", before, lowat)
			case tc.set && (lowat != min(100_000, rcvbuf/8)):
				t.Errorf("SO_RCVLOWAT = %d, want min(read size 100000, SO_RCVBUF %d / 8)", lowat, rcvbuf)
			}
		})
	}
}

func sockoptInt(t *testing.T, rc syscall.RawConn, opt int) int {
	t.Helper()
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return v
}

// Every combination of fast paths (and none) keeps the exact per-stream
// accounting the trailer check relies on, over TCP and over a socket that
// is not TCP (which must take the generic loops).
func TestFastPathVariantsExactCounts(t *testing.T) {
	saved := fastPaths
	t.Cleanup(func() { fastPaths = saved })
	for _, v := range []struct {
		name string
		fp   fastPathConfig
	}{
		{"none", fastPathConfig{}},
		{"default", saved},
		{"trunc-lowat-always", fastPathConfig{trunc: true, rcvLowat: defaultRcvLowat, lowatSingle: true}},
		{"rawread-lowat", fastPathConfig{rawRead: true, rcvLowat: defaultRcvLowat}},
		{"generic", fastPathConfig{rcvLowat: defaultRcvLowat}}, // neither trunc nor rawRead: net.Conn.Read
	} {
		fastPaths = v.fp
		for _, network := range []string{"tcp", "unix"} {
			t.Run(v.name+"/"+network, func(t *testing.T) { checkExactCounts(t, network) })
		}
	}
}

func checkExactCounts(t *testing.T, network string) {
	const streams = 3
	cfg := Config{Streams: streams, Duration: 200 * time.Millisecond, BlockSize: 100_000}
	snd := make([]net.Conn, streams)
	rcv := make([]net.Conn, streams)
	for i := range streams {
		if network == "tcp" {
			snd[i], rcv[i] = tcpPair(t)
		} else {
			snd[i], rcv[i] = unixPair(t)
		}
	}
	s, err := NewSenderConns(snd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiverConns(rcv, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx) }()
	if err := s.Run(ctx); err != nil {
		t.Errorf("run: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	sent, got := s.Sample(), r.Sample()
	for i := range streams {
		if sent[i].AppBytes == 0 || sent[i].AppBytes != got[i].AppBytes {
			t.Errorf("stream %d: sent %d, received %d", i, sent[i].AppBytes, got[i].AppBytes)
		}
	}
}
