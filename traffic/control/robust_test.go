package control

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stuckListen opens real listeners, but those on stuck ports never accept:
// the kernel completes handshakes into the backlog and nobody answers.
func stuckListen(stuck map[int]bool) ListenFunc {
	return func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		if stuck[ln.Addr().(*net.TCPAddr).Port] {
			return &stuckListener{Listener: ln, closed: make(chan struct{})}, nil
		}
		return ln, nil
	}
}

type stuckListener struct {
	net.Listener
	once   sync.Once
	closed chan struct{}
}

func (l *stuckListener) Accept() (net.Conn, error) {
	<-l.closed
	return nil, net.ErrClosed
}

func (l *stuckListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

func header(version uint16, n uint32) []byte {
	b := make([]byte, headerLen)
	binary.BigEndian.PutUint32(b[0:], magic)
	binary.BigEndian.PutUint16(b[4:], version)
	binary.BigEndian.PutUint32(b[8:], n)
	return b
}

// rawExchange sends raw bytes, optionally closes, and returns the server's
// answer (a decoded message, or the read error).
func rawExchange(t *testing.T, addr string, data []byte, closeAfter bool) (message, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	if closeAfter {
		c.Close()
		return message{}, nil
	}
	return readMsg(c, 5*time.Second)
}

// Garbage, an oversized length prefix, truncated messages and clients that
// vanish at any step never crash or wedge the server: after each, the next
// client runs a test.
func TestServerSurvivesBadClients(t *testing.T) {
	ts := startServer(t, ServerConfig{IOTimeout: 500 * time.Millisecond})
	next := func(what string) {
		t.Helper()
		if _, err := runClient(t, ts.addr, Params{Streams: 2, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}); err != nil {
			t.Fatalf("after %s: next client failed: %v", what, err)
		}
	}
	m, err := rawExchange(t, ts.addr, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false)
	if err != nil || m.Type != msgError || m.Code != CodeProtocol || !strings.Contains(m.Error, "not a netprof control message") {
		t.Errorf("garbage: answer %+v, %v", m, err)
	}
	next("garbage")

	m, err = rawExchange(t, ts.addr, header(Version, 0xffffffff), false)
	if err != nil || m.Code != CodeProtocol || !strings.Contains(m.Error, "message of 4294967295 bytes exceeds the 1048576-byte limit") {
		t.Errorf("oversized: answer %+v, %v", m, err)
	}
	next("oversized length prefix")

	// Truncated, then closed; truncated and left hanging (the server's read
	// deadline ends it); a body that is not JSON.
	rawExchange(t, ts.addr, append(header(Version, 100), `{"type":"set`...), true)
	next("truncated message")
	m, err = rawExchange(t, ts.addr, append(header(Version, 100), `{"type":"set`...), false)
	if err != nil || m.Code != CodeProtocol || !strings.Contains(m.Error, "read 100-byte message") || !strings.Contains(m.Error, "timeout") {
		t.Errorf("hanging truncated message: answer %+v, %v; want a protocol error after the read timeout", m, err)
	}
	next("truncated message left hanging")
	m, _ = rawExchange(t, ts.addr, append(header(Version, 5), "hello"...), false)
	if m.Code != CodeProtocol || !strings.Contains(m.Error, "decode message") {
		t.Errorf("not JSON: answer %+v", m)
	}
	m, _ = rawExchange(t, ts.addr, append(header(Version, 15), `{"type":"start"}`[:15]...), false)
	if m.Code != CodeProtocol {
		t.Errorf("bad JSON: answer %+v", m)
	}
	next("bad bodies")

	// Connect and say nothing.
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // past the server's I/O timeout
	c.Close()
	next("silent client")

	// Vanish after setup, before the data streams.
	s, err := Dial(t.Context(), nil, ts.addr, Params{Streams: 2, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	next("disconnect after setup")

	// Vanish mid-test: control and data connections closed abruptly, no
	// abort message.
	s, err = Dial(t.Context(), nil, ts.addr, Params{Streams: 2, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ConnectData(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() {
		_, err := s.Run(t.Context())
		runErr <- err
	}()
	time.Sleep(400 * time.Millisecond)
	s.conn.Close()
	s.sender.Close()
	if err := <-runErr; err == nil {
		t.Error("run with its connections cut succeeded")
	}
	start := time.Now()
	next("disconnect mid-test")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("next client after a mid-test disconnect took %v", took)
	}
	var sawMid bool
	for range len(ts.records) {
		if rec := <-ts.records; rec.Error != "" && rec.Result != nil && len(rec.Intervals) > 0 {
			sawMid = true
		}
	}
	if !sawMid {
		t.Error("no server record of the test cut mid-way")
	}
}

// Version mismatch, both ways: each end names both versions.
func TestVersionMismatch(t *testing.T) {
	ts := startServer(t, ServerConfig{})
	body := `{"type":"setup","params":{"streams":1}}`
	m, err := rawExchange(t, ts.addr, append(header(Version+1, uint32(len(body))), body...), false)
	if err != nil || m.Code != CodeVersion || !strings.Contains(m.Error, "peer speaks control protocol version 2, this end version 1") {
		t.Errorf("server answer to version 2: %+v, %v", m, err)
	}

	// A server from the future.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = readMsg(c, 5*time.Second)
		reply := `{"type":"error","code":"version","error":"this server speaks version 9 only"}`
		_ = writeFrame(c, 9, []byte(reply), 5*time.Second)
	})
	_, err = Dial(t.Context(), nil, ln.Addr().String(), Params{Streams: 1, Duration: time.Second})
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "peer speaks control protocol version 9, this end version 1") ||
		!strings.Contains(err.Error(), "version 9 only") {
		t.Errorf("Dial to a version 9 server: %v", err)
	}
}

// A peer that is not a netprof server is reported as such.
func TestNotAServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
		time.Sleep(100 * time.Millisecond)
	})
	_, err = Dial(t.Context(), nil, ln.Addr().String(), Params{Streams: 1, Duration: time.Second})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not a netprof control message") {
		t.Errorf("Dial to an SSH server: %v", err)
	}
}

func TestServerConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{}, "no data ports"},
		{ServerConfig{Ports: []int{0}}, "invalid data port 0"},
		{ServerConfig{Ports: []int{5001}, Limits: Limits{MaxStreams: 1 << 20}}, "invalid max streams"},
		{ServerConfig{Ports: []int{5001}, Limits: Limits{MaxBlockSize: 1 << 40}}, "invalid max block size"},
	} {
		if _, err := NewServer(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewServer(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// A data port already in use is reported to the client by number.
	busyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busyLn.Close()
	p := busyLn.Addr().(*net.TCPAddr).Port
	ts := startServer(t, ServerConfig{Ports: []int{p}})
	_, err = runClient(t, ts.addr, Params{Streams: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "listen on data port "+strconv.Itoa(p)) {
		t.Errorf("port in use: %v", err)
	}
}

// Connections that never send a valid setup never hold the test slot or
// keep a real client out: with idle connections open, slow-loris ones
// trickling a header byte by byte, garbage senders, and a flood of more
// silent connections than the server keeps, a real client run right after
// each gets its test (not "busy", not EOF), and the server's records count
// exactly the real tests.
func TestServeUnharmedByPreSetupConnections(t *testing.T) {
	ts := startServer(t, ServerConfig{})
	p := Params{Streams: 1, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}
	var open []net.Conn
	t.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		return c
	}
	real := func(after string) {
		t.Helper()
		start := time.Now()
		if _, err := runClient(t, ts.addr, p); err != nil {
			t.Fatalf("real client after %s: %v", after, err)
		}
		t.Logf("real client after %s: ran in %v", after, time.Since(start).Round(time.Millisecond))
	}
	for range 20 {
		dial()
	}
	real("20 idle connections")

	loris := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		c := dial()
		wg.Go(func() {
			h := header(Version, 64)
			for i := 0; i < len(h); i++ { // bounded: one header, a byte per 100 ms
				select {
				case <-loris:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := c.Write(h[i : i+1]); err != nil {
					return
				}
			}
		})
	}
	real("8 slow-loris connections")
	close(loris)
	wg.Wait()

	for range 10 {
		c := dial()
		if _, err := c.Write([]byte("\x00\x01garbage\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	real("10 garbage senders")

	for range 3 * maxPreSetup {
		dial()
	}
	real(fmt.Sprintf("%d silent connections (the server keeps %d)", 3*maxPreSetup, maxPreSetup))

	// The last record is sent when the server's side of the test ends,
	// just after the client's.
	for n := 0; n < 4; n++ {
		select {
		case <-ts.records:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d test records, want the 4 real tests", n)
		}
	}
	select {
	case rec := <-ts.records:
		t.Errorf("a fifth test record: %+v", rec)
	case <-time.After(100 * time.Millisecond):
	}
}
