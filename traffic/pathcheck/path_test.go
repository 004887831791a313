package pathcheck_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/traffic/pathcheck"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/delayline"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func TestClassify(t *testing.T) {
	for a, want := range map[string]string{
		"10.1.2.3": "private (RFC 1918)", "172.20.0.1": "private (RFC 1918)", "192.168.1.1": "private (RFC 1918)",
		"100.64.0.1": "shared/CGNAT (RFC 6598)", "198.18.0.1": "benchmarking (RFC 2544)", "127.0.0.1": "loopback",
		"20.50.1.2": "public", "fd00::1": "private (RFC 4193 ULA)", "2001:2::1": "benchmarking (RFC 5180)",
		"2603:1030::1": "public", "::ffff:10.0.0.1": "private (RFC 1918)",
	} {
		if got := pathcheck.Classify(netip.MustParseAddr(a)); got != want {
			t.Errorf("Classify(%s) = %q, want %q", a, got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	near := pathcheck.Check{Route: pathcheck.Route{Peer: netip.MustParseAddr("10.0.0.5"), Class: "private (RFC 1918)"},
		RTT: pathcheck.Result{Samples: 10, Min: 60 * time.Microsecond}}
	far := pathcheck.Check{Route: pathcheck.Route{Peer: netip.MustParseAddr("20.1.2.3"), Gateway: netip.MustParseAddr("10.0.0.1"), Class: "public"},
		RTT: pathcheck.Result{Samples: 10, Min: 2 * time.Millisecond}}
	if v := pathcheck.Judge(near, 0, nil); v.Hairpin() || v.Status != pathcheck.StatusOK {
		t.Errorf("near peer: %+v", v)
	}
	v := pathcheck.Judge(far, 0, &near)
	if !v.Hairpin() || !strings.Contains(strings.Join(v.Evidence, "\n"), "33.33x that of 10.0.0.5") {
		t.Errorf("far peer: %+v", v)
	}
	if v := pathcheck.Judge(far, 5*time.Millisecond, nil); v.Hairpin() {
		t.Errorf("far peer with --expect-rtt 5ms: %+v", v)
	}
	none := pathcheck.Check{Route: near.Route, RTT: pathcheck.Result{Timeouts: 3}}
	if v := pathcheck.Judge(none, 0, nil); v.Status != pathcheck.StatusUnknown {
		t.Errorf("no samples: %+v", v)
	}
}

// routedBed is A with a direct veth to B and a routed path to C through a
// router R; the A-R hop is a TUN pair joined by a delay line.
type routedBed struct {
	direct, far *testbed.Bed // A-B, R-C
	line        *delayline.Line
}

func newRoutedBed(t *testing.T, delay time.Duration) *routedBed {
	t.Helper()
	rb := &routedBed{direct: testbedtest.New(t, testbed.Options{})}
	rb.far = testbedtest.New(t, testbed.Options{
		AddrA: netip.MustParsePrefix("198.18.1.1/30"), AddrB: netip.MustParsePrefix("198.18.1.2/30")})
	a, r, c := rb.direct.A(), rb.far.A(), rb.far.B()
	open := func(h *testbed.Host, name string) *delayline.TUN {
		var tun *delayline.TUN
		if err := h.Do(func() (err error) { tun, err = delayline.OpenTUN(name); return err }); err != nil {
			t.Fatal(err)
		}
		return tun
	}
	tunA, tunR := open(a, "nptunA"), open(r, "nptunR")
	// Addresses go on (and the TUNs come up) before the line starts, as
	// the testbed's own delayed bed does.
	for _, err := range []error{
		a.AddAddr("nptunA", netip.MustParsePrefix("198.18.2.1/30")),
		r.AddAddr("nptunR", netip.MustParsePrefix("198.18.2.2/30")),
	} {
		if err != nil {
			tunA.Close()
			tunR.Close()
			t.Fatal(err)
		}
	}
	line, err := delayline.Start(context.Background(), tunA, tunR, delayline.Config{Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { line.Close() })
	rb.line = line
	for _, err := range []error{
		r.SetForwarding(true),
		a.AddRoute(netip.MustParsePrefix("198.18.1.0/30"), netip.MustParseAddr("198.18.2.2"), "nptunA"),
		c.AddRoute(netip.MustParsePrefix("198.18.2.0/30"), netip.MustParseAddr("198.18.1.1"), c.Link),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return rb
}

// The direct veth path is not flagged; the routed path with 2 ms of
// one-way delay on its first hop is, with the gateway in the evidence. The
// direct peer has no listener: its RST still gives RTT samples.
func TestDirectVsDelayedRouted(t *testing.T) {
	rb := newRoutedBed(t, 2*time.Millisecond)
	a, b, c := rb.direct.A(), rb.direct.B(), rb.far.B()
	ln, err := c.Listen("tcp", "198.18.1.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	farAddr := netip.MustParseAddrPort(ln.Addr().String())
	nearAddr := netip.AddrPortFrom(b.Addr, 9) // nothing listens: refused
	h, err := a.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	check := func(ap netip.AddrPort) pathcheck.Check {
		t.Helper()
		rt, err := pathcheck.Lookup(h, ap.Addr())
		if err != nil {
			t.Fatal(err)
		}
		res, err := pathcheck.Measure(ctx, a.Do, ap, pathcheck.Options{Count: 20, Gap: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return pathcheck.Check{Route: rt, RTT: res}
	}
	near, far := check(nearAddr), check(farAddr)
	for _, ch := range []pathcheck.Check{near, far} {
		t.Logf("%s: min %v p50 %v p90 %v over %d samples (%s)", ch.Route, ch.RTT.Min, ch.RTT.P50, ch.RTT.P90, ch.RTT.Samples, ch.RTT.Kind())
	}
	if !near.Route.OnLink() || near.Route.Dev != a.Link || near.RTT.Refused != 20 || near.RTT.Samples != 20 {
		t.Errorf("direct: route %s, %s: want on-link via %s and 20 refused samples", near.Route, near.RTT.Kind(), a.Link)
	}
	if far.Route.OnLink() || far.Route.Gateway != netip.MustParseAddr("198.18.2.2") || far.RTT.Connected != 20 {
		t.Errorf("routed: route %s, %s: want via 198.18.2.2 and 20 connects", far.Route, far.RTT.Kind())
	}
	if far.RTT.Min < 4*time.Millisecond {
		t.Errorf("routed floor %v below the 4 ms the delay line imposes", far.RTT.Min)
	}
	vn, vf := pathcheck.Judge(near, 0, &far), pathcheck.Judge(far, 0, &near)
	t.Logf("direct: %s: %s", vn.Status, strings.Join(vn.Evidence, "; "))
	t.Logf("routed: %s: %s", vf.Status, strings.Join(vf.Evidence, "; "))
	if vn.Hairpin() {
		t.Errorf("direct path flagged: %+v", vn)
	}
	if !vf.Hairpin() || !strings.Contains(strings.Join(vf.Evidence, " "), "via gateway 198.18.2.2") {
		t.Errorf("routed path not flagged with its gateway: %+v", vf)
	}
}

// A peer inside a connected prefix that the kernel routes via a gateway is
// flagged from the route alone.
func TestConnectedPeerViaGateway(t *testing.T) {
	rb := newRoutedBed(t, 0)
	a := rb.direct.A()
	if err := a.AddAddr(a.Link, netip.MustParsePrefix("198.18.3.1/24")); err != nil {
		t.Fatal(err)
	}
	if err := a.AddRoute(netip.MustParsePrefix("198.18.3.9/32"), netip.MustParseAddr("198.18.2.2"), "nptunA"); err != nil {
		t.Fatal(err)
	}
	h, err := a.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rt, err := pathcheck.Lookup(h, netip.MustParseAddr("198.18.3.9"))
	if err != nil {
		t.Fatal(err)
	}
	v := pathcheck.Judge(pathcheck.Check{Route: rt}, 0, nil)
	t.Logf("%s: %s: %v", rt, v.Status, v.Evidence)
	if rt.Connected != netip.MustParsePrefix("198.18.3.0/24") || !v.Hairpin() {
		t.Errorf("route %+v verdict %+v: want connected 198.18.3.0/24 and a hairpin", rt, v)
	}
	if _, err := pathcheck.Lookup(h, netip.MustParseAddr("198.19.255.1")); err == nil {
		t.Error("lookup of an unrouted address succeeded")
	}
	_ = net.IPv4len
}
