package sockstate_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/sockstate"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// load attaches the probe and returns its reader; both are closed when the
// test ends (reader first).
func load(t *testing.T) (*loader.Loaded, *sockstate.Reader) {
	t.Helper()
	spec, err := sockstate.Spec(sockstate.Options{})
	l := kerneltest.Load(t, spec, err)
	r, err := sockstate.NewReader(l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return l, r
}

const (
	upBytes   = 3<<20 + 123 // client -> server
	downBytes = 4567        // server -> client, after the client's FIN
)

// exchange opens one connection from a to b's port, sends upBytes, half-
// closes, reads downBytes back and closes; the server counts what it read.
// It returns the client's and server's local addresses as the kernel sees
// them.
func exchange(t *testing.T, bed *testbed.Bed, ln net.Listener) (client, server netip.AddrPort) {
	t.Helper()
	srv := make(chan error, 1)
	srvAddr := make(chan netip.AddrPort, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srv <- err
			return
		}
		defer c.Close()
		srvAddr <- c.LocalAddr().(*net.TCPAddr).AddrPort()
		n, err := io.Copy(io.Discard, c)
		if err == nil && n != upBytes {
			err = errors.New("server read a different byte count")
		}
		if err == nil {
			_, err = c.Write(make([]byte, downBytes))
		}
		srv <- err
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	addr := net.JoinHostPort(bed.B().Addr.String(), strconv.Itoa(port))
	c, err := bed.A().Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	client = c.LocalAddr().(*net.TCPAddr).AddrPort()
	if _, err := c.Write(make([]byte, upBytes)); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, c)
	if err != nil || n != downBytes {
		t.Fatalf("client read %d bytes, %v; want %d", n, err, downBytes)
	}
	c.Close()
	if err := <-srv; err != nil {
		t.Fatalf("server: %v", err)
	}
	return client, <-srvAddr
}

// collect drains until both connections' close events arrived (or 3 s).
func collect(t *testing.T, r *sockstate.Reader, netns map[uint64]bool) []sockstate.Event {
	t.Helper()
	var got []sockstate.Event
	deadline := time.Now().Add(3 * time.Second)
	for {
		evs, _, err := r.Drain()
		if err != nil {
			t.Fatal(err)
		}
		closes := 0
		for _, e := range evs {
			if netns[e.Netns] {
				got = append(got, e)
			}
		}
		for _, e := range got {
			if e.Kind == sockstate.Close {
				closes++
			}
		}
		if closes >= 2 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testLifecycle(t *testing.T, opt testbed.Options, wantFamily uint8) {
	_, r := load(t)
	bed := testbedtest.New(t, opt)
	before, err := r.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// A wildcard listener is dual-stack (AF_INET6): for IPv4 peers the
	// kernel holds IPv4-mapped addresses, which the probe reports as IPv4.
	ln, err := bed.B().Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	client, server := exchange(t, bed, ln)
	elapsed := time.Since(start)
	netns := map[uint64]bool{bed.A().NetnsInode(): true, bed.B().NetnsInode(): true}
	evs := collect(t, r, netns)

	type key struct {
		ns   uint64
		kind sockstate.Kind
	}
	byKey := map[key]sockstate.Event{}
	for _, e := range evs {
		k := key{e.Netns, e.Kind}
		if _, dup := byKey[k]; dup {
			t.Errorf("two %v events in netns %d: %+v", e.Kind, e.Netns, e)
		}
		byKey[k] = e
	}
	a, b := bed.A().NetnsInode(), bed.B().NetnsInode()
	cOpen, cClose := byKey[key{a, sockstate.Open}], byKey[key{a, sockstate.Close}]
	sOpen, sClose := byKey[key{b, sockstate.Open}], byKey[key{b, sockstate.Close}]
	if len(evs) != 4 || cClose.Kind != sockstate.Close || sClose.Kind != sockstate.Close {
		t.Fatalf("got %d events %+v, want open and close on each side", len(evs), evs)
	}
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	for _, c := range []struct {
		name           string
		e              sockstate.Event
		local, remote  netip.AddrPort
		active         bool
		acked, recvd   uint64
		wantFromStates []string
	}{
		{"client open", cOpen, client, server, true, 0, 0, nil},
		{"server open", sOpen, server, client, false, 0, 0, nil},
		// The client closes first: FIN_WAIT2 -> (time wait) CLOSE.
		{"client close", cClose, client, server, true, upBytes, downBytes, []string{"FIN_WAIT2", "FIN_WAIT1", "CLOSING"}},
		{"server close", sClose, server, client, false, downBytes, upBytes, []string{"LAST_ACK"}},
	} {
		e := c.e
		if e.Family != wantFamily || e.Local != c.local || e.Remote != c.remote || e.Active != c.active {
			t.Errorf("%s: family %d %v -> %v active %t; want %d %v -> %v active %t",
				c.name, e.Family, e.Local, e.Remote, e.Active, wantFamily, c.local, c.remote, c.active)
		}
		// The counters follow sequence numbers: bytes_acked counts the
		// active opener's SYN and every FIN once acknowledged,
		// bytes_received the FIN received.
		acked, recvd := c.acked, c.recvd
		if c.active {
			acked++ // SYN
		}
		if e.Kind == sockstate.Close {
			acked, recvd = acked+1, recvd+1 // FINs
		}
		if e.BytesAcked != acked || e.BytesReceived != recvd {
			t.Errorf("%s: bytes_acked %d bytes_received %d; want %d and %d", c.name, e.BytesAcked, e.BytesReceived, acked, recvd)
		}
		if !e.HaveSegs || (e.Kind == sockstate.Close && (e.SegsOut == 0 || e.SegsIn == 0)) {
			t.Errorf("%s: segs out %d in %d (have %t)", c.name, e.SegsOut, e.SegsIn, e.HaveSegs)
		}
		if e.Kind == sockstate.Close {
			if d := time.Duration(e.DurationNs()); d <= 0 || d > elapsed {
				t.Errorf("%s: duration %v, want in (0, %v]", c.name, d, elapsed)
			}
			if !slices.Contains(c.wantFromStates, e.FromState.String()) {
				t.Errorf("%s: closed from %v, want one of %v", c.name, e.FromState, c.wantFromStates)
			}
		}
		t.Logf("%s: %+v from %v", c.name, e, e.FromState)
	}
	if cOpen.Cookie == 0 || cOpen.Cookie != cClose.Cookie || sOpen.Cookie != sClose.Cookie || cOpen.Cookie == sOpen.Cookie {
		t.Errorf("cookies: client %d/%d server %d/%d", cOpen.Cookie, cClose.Cookie, sOpen.Cookie, sClose.Cookie)
	}
	after, err := r.Stats()
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d.Opens < 2 || d.Closes < 2 || d.Lost() != 0 {
		t.Errorf("stats delta %+v: want >= 2 opens and closes, 0 lost", d)
	}
}

func TestKernelLifecycleIPv4(t *testing.T) { testLifecycle(t, testbed.Options{}, 4) }

func TestKernelLifecycleIPv6(t *testing.T) {
	testLifecycle(t, testbed.Options{
		AddrA: netip.MustParsePrefix("2001:2::1/64"),
		AddrB: netip.MustParsePrefix("2001:2::2/64"),
	}, 6)
}

// Close is idempotent and stops the goroutine; Drain afterwards says so.
func TestKernelReaderClose(t *testing.T) {
	_, r := load(t)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := r.Drain(); !errors.Is(err, ringbuf.ErrClosed) {
		t.Fatalf("Drain after Close: %v, want ringbuf.ErrClosed", err)
	}
}

// The sampler writes rows only for namespaces in scope and one map row.
func TestKernelSamplerScope(t *testing.T) {
	_, r := load(t)
	bed := testbedtest.New(t, testbed.Options{})
	s := sockstate.NewSampler(r, func(ns uint64) bool { return ns == bed.B().NetnsInode() })
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	ln, err := bed.B().Listen("tcp", net.JoinHostPort(bed.B().Addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	exchange(t, bed, ln)
	time.Sleep(100 * time.Millisecond) // the server's close follows its last ACK
	var iv trace.Interval
	if err := s.Sample(&iv, int64(time.Second)); err != nil {
		t.Fatal(err)
	}
	if len(iv.Sockets) != 2 {
		t.Fatalf("rows %+v, want the receiver's open and close", iv.Sockets)
	}
	for _, row := range iv.Sockets {
		if row.Netns != bed.B().NetnsInode() || row.Active || row.IntervalNs != int64(time.Second) {
			t.Errorf("row %+v: want netns %d, passive", row, bed.B().NetnsInode())
		}
	}
	if len(iv.Probes) != 1 || iv.Probes[0].Hook != sockstate.MapHook || iv.Probes[0].MapUpdateFailures != 0 {
		t.Errorf("probes rows %+v", iv.Probes)
	}
}

// With a tiny connection table and ring buffer and nobody reading, events
// are lost, and every lost one is counted: opens not stored (table full)
// and records the ring could not take. Other namespaces' connections may
// add to the counters, so the checks are lower bounds.
func TestKernelLostEventsCounted(t *testing.T) {
	kerneltest.RequireRoot(t)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	const conns, table = 20, 8
	spec, err := sockstate.Spec(sockstate.Options{ConnEntries: table, RingBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	l, err := loader.Load(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bed := testbedtest.New(t, testbed.Options{})
	ln, err := bed.B().Listen("tcp", net.JoinHostPort(bed.B().Addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var open []net.Conn
	for range conns { // all open at once: the table overflows
		c, err := bed.A().Dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c, s)
	}
	for _, c := range open {
		c.Close()
	}
	time.Sleep(100 * time.Millisecond)
	r, err := sockstate.NewReader(l) // only now: the ring has overflowed
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	evs, _, err := r.Drain()
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Stats()
	if err != nil {
		t.Fatal(err)
	}
	ours := map[uint64]bool{bed.A().NetnsInode(): true, bed.B().NetnsInode(): true}
	opens, closes := 0, 0
	for _, e := range evs {
		switch {
		case !ours[e.Netns]:
		case e.Kind == sockstate.Open:
			opens++
		default:
			closes++
		}
	}
	if maxRing := 4096 / 112; len(evs) > maxRing {
		t.Errorf("%d events delivered through a ring of %d", len(evs), maxRing)
	}
	if st.ConnTableFull < 2*conns-table || closes > table {
		t.Errorf("table of %d, %d connections (2 sockets each): %d opens not stored, %d closes; want >= %d and <= %d",
			table, conns, st.ConnTableFull, closes, 2*conns-table, table)
	}
	if missing := uint64(2*conns - opens); st.RingFull < missing || missing == 0 {
		t.Errorf("%d of our %d open events missing, ring_full %d: want every missing one counted", missing, 2*conns, st.RingFull)
	}
	if st.Lost() != st.RingFull+st.ConnTableFull {
		t.Errorf("Lost %d != ring %d + table %d", st.Lost(), st.RingFull, st.ConnTableFull)
	}
	t.Logf("delivered %d (ours: %d opens, %d closes); stats %+v", len(evs), opens, closes, st)
}
