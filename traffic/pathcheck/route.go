// Package pathcheck checks the network path to a peer before a run: the route
// the kernel would use (RTM_GETROUTE), TCP connect round-trip times, and
// whether the path looks like a hairpin (traffic to a nearby peer taking a
// detour through a gateway or a load-balancer edge: milliseconds where
// microseconds are expected).
package pathcheck

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Route is the kernel's answer to "how would a packet to Peer leave?".
type Route struct {
	Peer netip.Addr
	// Dev and Ifindex name the output interface.
	Dev     string
	Ifindex int
	// Gateway is the next hop; invalid when the peer is on-link.
	Gateway netip.Addr
	// Src is the source address the kernel would pick.
	Src netip.Addr
	// Connected is the local interface prefix that contains the peer, if
	// any: such a peer should be on-link.
	Connected netip.Prefix
	// ConnectedDev is the interface holding Connected.
	ConnectedDev string
	// Class says what kind of address the peer is (see Classify).
	Class string
	// Local is true when the peer is an address of this host.
	Local bool
}

// OnLink reports whether the peer is reached without a gateway.
func (r Route) OnLink() bool { return !r.Gateway.IsValid() }

// String describes the route in one line, like `ip route get`.
func (r Route) String() string {
	s := r.Peer.String()
	if r.Local {
		return s + " is local (" + r.Dev + ")"
	}
	if r.OnLink() {
		s += " on-link"
	} else {
		s += " via " + r.Gateway.String()
	}
	s += " dev " + r.Dev
	if r.Src.IsValid() {
		s += " src " + r.Src.String()
	}
	return s + " (" + r.Class + ")"
}

// Lookup asks the kernel (through h, a netlink handle in the namespace the
// traffic leaves from) for the route to peer, and which local prefix, if
// any, contains it. It returns an error wrapping unix.ENETUNREACH (or the
// kernel's errno) when there is no route.
func Lookup(h *netlink.Handle, peer netip.Addr) (Route, error) {
	peer = peer.Unmap()
	r := Route{Peer: peer, Class: Classify(peer)}
	routes, err := h.RouteGet(peer.AsSlice())
	if err != nil {
		return r, fmt.Errorf("route to %s: %w", peer, err)
	}
	if len(routes) == 0 {
		return r, fmt.Errorf("route to %s: %w", peer, unix.ENETUNREACH)
	}
	rt := routes[0]
	r.Ifindex = rt.LinkIndex
	if l, err := h.LinkByIndex(rt.LinkIndex); err == nil {
		r.Dev = l.Attrs().Name
	}
	if gw, ok := netip.AddrFromSlice(rt.Gw); ok && len(rt.Gw) > 0 {
		r.Gateway = gw.Unmap()
	}
	if src, ok := netip.AddrFromSlice(rt.Src); ok && len(rt.Src) > 0 {
		r.Src = src.Unmap()
	}
	r.Local = rt.Type == unix.RTN_LOCAL
	if err := r.findConnected(h); err != nil {
		return r, err
	}
	return r, nil
}

// findConnected looks for an interface address whose prefix contains the
// peer (skipping host routes: /32 and /128 say nothing about neighbours).
func (r *Route) findConnected(h *netlink.Handle) error {
	fam := netlink.FAMILY_V4
	if r.Peer.Is6() {
		fam = netlink.FAMILY_V6
	}
	addrs, err := h.AddrList(nil, fam)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		p, ok := prefixOf(a.IPNet)
		if !ok || p.IsSingleIP() || !p.Contains(r.Peer) {
			continue
		}
		if !r.Connected.IsValid() || p.Bits() > r.Connected.Bits() {
			r.Connected = p.Masked()
			if l, err := h.LinkByIndex(a.LinkIndex); err == nil {
				r.ConnectedDev = l.Attrs().Name
			}
		}
	}
	return nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}

var special = []struct {
	p    netip.Prefix
	name string
}{
	{netip.MustParsePrefix("10.0.0.0/8"), "private (RFC 1918)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (RFC 1918)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared/CGNAT (RFC 6598)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (RFC 2544)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("fc00::/7"), "private (RFC 4193 ULA)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking (RFC 5180)"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
}

// Classify says whether a is a public address or which kind of
// non-public one (private, shared, benchmarking, link-local, loopback).
func Classify(a netip.Addr) string {
	a = a.Unmap()
	for _, s := range special {
		if s.p.Contains(a) {
			return s.name
		}
	}
	return "public"
}

// Public reports whether Classify(a) is "public".
func Public(a netip.Addr) bool { return Classify(a) == "public" }
