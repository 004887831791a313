package linkstats_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func find(t *testing.T, links []linkstats.Link, name string) linkstats.Link {
	t.Helper()
	for _, l := range links {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("%s not discovered in %+v", name, links)
	return linkstats.Link{}
}

// Discovery inside a test-bed namespace: drivers come from ethtool (not
// the caller's sysfs), relations are resolved, and no speed is invented:
// a veth's fixed 10000 Mb/s and a macvlan's copy of it are placeholders,
// and a bridge without running ports reports SPEED_UNKNOWN.
func TestDiscoverInNamespace(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	b := bed.B()
	if _, err := b.AddMacvlan(context.Background(), "mv0"); err != nil {
		t.Fatal(err)
	}
	nh, err := b.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	if err := nh.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "brempty"}}); err != nil {
		t.Fatal(err)
	}
	ns, err := linkstats.OpenNS(b.Do, b.NetnsInode())
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	routeOnly(t, "testbed Host.Handle", nh)
	routeOnly(t, "OpenNS", ns.Handle)
	links, err := linkstats.Discover(ns)
	if err != nil {
		t.Fatal(err)
	}
	veth, mv, br, lo := find(t, links, b.Link), find(t, links, "mv0"), find(t, links, "brempty"), find(t, links, "lo")
	for _, l := range links {
		t.Logf("%s idx %d driver %s kind %s mac %s mtu %d master %q lower %q queues %d/%d speed %v (%s)",
			l.Name, l.Index, l.Driver, l.Kind, l.MAC, l.MTU, l.Master, l.Lower, l.RxQueues, l.TxQueues, l.SpeedMbps, l.SpeedNote)
		if l.Netns != b.NetnsInode() {
			t.Errorf("%s: netns %d, want %d", l.Name, l.Netns, b.NetnsInode())
		}
	}
	if veth.Driver != "veth" || veth.Index != b.Ifindex() || veth.RxQueues < 1 || veth.MAC == "" || veth.OperState != "up" {
		t.Errorf("veth: %+v", veth)
	}
	if mv.Driver != "macvlan" || mv.LowerIndex != veth.Index || mv.Lower != veth.Name {
		t.Errorf("macvlan: driver %s lower %d (%s), want macvlan on %s", mv.Driver, mv.LowerIndex, mv.Lower, veth.Name)
	}
	if lo.Driver != "loopback" {
		t.Errorf("lo driver %q", lo.Driver)
	}
	for _, c := range []struct {
		l    linkstats.Link
		note string
	}{{veth, "fixed 10000 Mb/s"}, {mv, "derived from " + veth.Name}, {br, "SPEED_UNKNOWN"}} {
		if c.l.SpeedMbps != nil || !strings.Contains(c.l.SpeedNote, c.note) {
			t.Errorf("%s: speed %v (%q), want unknown with %q", c.l.Name, c.l.SpeedMbps, c.l.SpeedNote, c.note)
		}
	}
}

// routeOnly checks that h has a NETLINK_ROUTE socket and no other: a
// handle opened with every family (netlink.NewHandle()) also opens XFRM
// and NETFILTER sockets, and fails with "protocol not supported" where
// the kernel has neither built in nor /sbin/modprobe to load them.
func routeOnly(t *testing.T, name string, h *netlink.Handle) {
	t.Helper()
	if !h.SupportsNetlinkFamily(unix.NETLINK_ROUTE) {
		t.Errorf("%s: no NETLINK_ROUTE socket", name)
	}
	for fam, what := range map[int]string{unix.NETLINK_XFRM: "XFRM", unix.NETLINK_NETFILTER: "NETFILTER"} {
		if h.SupportsNetlinkFamily(fam) {
			t.Errorf("%s: opened a NETLINK_%s socket netprof does not use", name, what)
		}
	}
}

// The handle of the caller's own namespace is route-only too (no root
// needed: a netlink socket is not privileged).
func TestOpenNSOwnRouteOnly(t *testing.T) {
	ns, err := linkstats.OpenNS(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	routeOnly(t, "OpenNS(own namespace)", ns.Handle)
}

// Each stats64 error counter lands in the ifaces column of its name, as
// an interval's change; a counter going back is a reset.
func TestErrorCountersByName(t *testing.T) {
	st := &netlink.LinkStatistics{RxErrors: 1, TxErrors: 2, RxMissedErrors: 3, RxFifoErrors: 4, RxOverErrors: 5,
		RxCrcErrors: 6, RxFrameErrors: 7, RxLengthErrors: 8, TxAbortedErrors: 9, TxCarrierErrors: 10,
		TxFifoErrors: 11, TxHeartbeatErrors: 12, TxWindowErrors: 13, Collisions: 14}
	later := *st
	later.RxMissedErrors, later.Collisions = 103, 114
	d, reset := linkstats.FromNetlink(&later).Sub(linkstats.FromNetlink(st))
	if reset {
		t.Fatal("reset reported")
	}
	r := d.Row(1, "eth0", 2, "mana")
	got := map[string]*uint64{"rx_errors": r.RxErrors, "tx_errors": r.TxErrors, "rx_missed_errors": r.RxMissedErrors,
		"rx_fifo_errors": r.RxFifoErrors, "rx_over_errors": r.RxOverErrors, "rx_crc_errors": r.RxCrcErrors,
		"rx_frame_errors": r.RxFrameErrors, "rx_length_errors": r.RxLengthErrors, "tx_aborted_errors": r.TxAbortedErrors,
		"tx_carrier_errors": r.TxCarrierErrors, "tx_fifo_errors": r.TxFifoErrors, "tx_heartbeat_errors": r.TxHeartbeatErrors,
		"tx_window_errors": r.TxWindowErrors, "collisions": r.Collisions}
	for _, n := range linkstats.ErrorNames {
		want := uint64(0)
		if n == "rx_missed_errors" || n == "collisions" {
			want = 100
		}
		if p := got[n]; p == nil || *p != want {
			t.Errorf("%s: %v, want %d", n, p, want)
		}
	}
	// Full counters on a row of absolute values map one to one.
	abs := linkstats.FromNetlink(st).Row(1, "eth0", 2, "mana")
	if *abs.RxMissedErrors != 3 || *abs.TxWindowErrors != 13 || *abs.Collisions != 14 || *abs.RxErrors != 1 {
		t.Errorf("absolute row %+v", abs)
	}
	if _, reset := linkstats.FromNetlink(st).Sub(linkstats.FromNetlink(&later)); !reset {
		t.Error("error counters going back: no reset")
	}
}
