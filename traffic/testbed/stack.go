package testbed

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Helpers that stack devices on a host's veth end and build routed paths
// between beds, so tests can reproduce the shapes that make interface
// counters double (macvlan over a NIC, a NIC enslaved to a bridge) and
// paths through a router. All of them act inside the host's namespace only.

// AddMacvlan creates a macvlan device name (bridge mode) on the host's veth
// end, moves the host's address from the veth end to it and brings it up;
// traffic to and from Addr then flows through the macvlan, whose frames the
// veth end carries. It returns the macvlan's ifindex.
func (h *Host) AddMacvlan(ctx context.Context, name string) (int, error) {
	return h.stack(ctx, name, func(nh *netlink.Handle, lower netlink.Link) (netlink.Link, error) {
		mv := &netlink.Macvlan{
			LinkAttrs: netlink.LinkAttrs{Name: name, ParentIndex: lower.Attrs().Index},
			Mode:      netlink.MACVLAN_MODE_BRIDGE,
		}
		return mv, nh.LinkAdd(mv)
	})
}

// AddBridge creates a bridge name (no STP), enslaves the host's veth end to
// it, moves the host's address to the bridge and brings it up; traffic to
// and from Addr then flows through the bridge, whose port is the veth end.
// It returns the bridge's ifindex.
func (h *Host) AddBridge(ctx context.Context, name string) (int, error) {
	return h.stack(ctx, name, func(nh *netlink.Handle, port netlink.Link) (netlink.Link, error) {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
		if err := nh.LinkAdd(br); err != nil {
			return br, err
		}
		return br, nh.LinkSetMasterByIndex(port, br.Attrs().Index)
	})
}

// stack creates an upper device with mk, moves the address to it, brings it
// up and waits until it is operationally up. On error the device is removed.
func (h *Host) stack(ctx context.Context, name string, mk func(*netlink.Handle, netlink.Link) (netlink.Link, error)) (int, error) {
	nh, err := h.Handle()
	if err != nil {
		return 0, err
	}
	defer nh.Close()
	lower, err := nh.LinkByIndex(h.ifindex)
	if err != nil {
		return 0, fmt.Errorf("%s: find %s: %w", h.Name, h.Link, err)
	}
	if _, err := mk(nh, lower); err != nil {
		if l, lerr := nh.LinkByName(name); lerr == nil {
			_ = nh.LinkDel(l)
		}
		return 0, fmt.Errorf("%s: add %s: %w", h.Name, name, err)
	}
	up, err := nh.LinkByName(name)
	if err != nil {
		return 0, fmt.Errorf("%s: find %s: %w", h.Name, name, err)
	}
	addr := prefixAddr(h.Prefix)
	if err := nh.AddrDel(lower, addr); err != nil {
		_ = nh.LinkDel(up)
		return 0, fmt.Errorf("%s: remove %s from %s: %w", h.Name, h.Prefix, h.Link, err)
	}
	if err := nh.AddrAdd(up, prefixAddr(h.Prefix)); err != nil {
		return 0, fmt.Errorf("%s: add %s to %s: %w", h.Name, h.Prefix, name, err)
	}
	if err := nh.LinkSetUp(up); err != nil {
		return 0, fmt.Errorf("%s: set %s up: %w", h.Name, name, err)
	}
	return up.Attrs().Index, waitOperUp(ctx, nh, up.Attrs().Index, h.Name+"/"+name)
}

func prefixAddr(p netip.Prefix) *netlink.Addr {
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	return a
}

func waitOperUp(ctx context.Context, nh *netlink.Handle, index int, what string) error {
	ctx, cancel := context.WithTimeout(ctx, linkUpTimeout)
	defer cancel()
	for {
		l, err := nh.LinkByIndex(index)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if st := l.Attrs().OperState; st == netlink.OperUp || st == netlink.OperUnknown {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not up (operstate %s): %w", what, l.Attrs().OperState, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// AddAddr adds prefix (which must lie in BenchV4 or BenchV6) to the device
// dev inside the host's namespace and brings dev up.
func (h *Host) AddAddr(dev string, prefix netip.Prefix) error {
	if a := prefix.Addr(); !BenchV4.Contains(a) && !BenchV6.Contains(a) {
		return fmt.Errorf("%s: address %s outside the benchmarking ranges", h.Name, prefix)
	}
	nh, err := h.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	l, err := nh.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", h.Name, dev, err)
	}
	if err := nh.AddrAdd(l, prefixAddr(prefix)); err != nil {
		return fmt.Errorf("%s: add %s to %s: %w", h.Name, prefix, dev, err)
	}
	if err := nh.LinkSetUp(l); err != nil {
		return fmt.Errorf("%s: set %s up: %w", h.Name, dev, err)
	}
	return nil
}

// AddRoute adds a route to dst (inside BenchV4 or BenchV6) through gateway
// gw on device dev inside the host's namespace. The gateway is flagged
// on-link, so it may sit on a point-to-point device without a subnet.
func (h *Host) AddRoute(dst netip.Prefix, gw netip.Addr, dev string) error {
	if a := dst.Addr(); !BenchV4.Contains(a) && !BenchV6.Contains(a) {
		return fmt.Errorf("%s: route to %s outside the benchmarking ranges", h.Name, dst)
	}
	nh, err := h.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	l, err := nh.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", h.Name, dev, err)
	}
	r := &netlink.Route{
		LinkIndex: l.Attrs().Index,
		Dst:       &net.IPNet{IP: dst.Masked().Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), dst.Addr().BitLen())},
		Gw:        gw.AsSlice(),
		Flags:     int(netlink.FLAG_ONLINK),
	}
	if err := nh.RouteAdd(r); err != nil {
		return fmt.Errorf("%s: route %s via %s dev %s: %w", h.Name, dst, gw, dev, err)
	}
	return nil
}

// SetForwarding turns IPv4 and IPv6 forwarding on or off inside the host's
// namespace (net.ipv4.ip_forward, net.ipv6.conf.all.forwarding), making it
// a router between its devices.
func (h *Host) SetForwarding(on bool) error {
	v := []byte("0\n")
	if on {
		v = []byte("1\n")
	}
	return h.Do(func() error {
		for _, p := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
			if err := os.WriteFile(p, v, 0o644); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	})
}
