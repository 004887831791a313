package testbed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Addresses of the routed bed (NewRouted): A — R on one /30, R — B on
// another; A and B reach each other through R.
var (
	RoutedAddrA  = netip.MustParsePrefix("198.18.1.1/30") // A, towards R
	RoutedAddrRA = netip.MustParsePrefix("198.18.1.2/30") // R, towards A
	RoutedAddrRB = netip.MustParsePrefix("198.18.2.1/30") // R, towards B
	RoutedAddrB  = netip.MustParsePrefix("198.18.2.2/30") // B, towards R
)

// Interface names inside the router's namespace.
const (
	RouterLinkA = "r-a" // towards A
	RouterLinkB = "r-b" // towards B, where RoutedOptions shapes
)

// Shaping defaults and limits of RoutedOptions.
const (
	// DefaultBurstBytes is the HTB burst and cburst: without an explicit
	// burst of this order a 1 Gbit/s class delivers only 0.76–0.89 Gbit/s.
	DefaultBurstBytes = 256 << 10
	// DefaultQueueBytes is the bfifo limit under the HTB class.
	DefaultQueueBytes = 128 << 10
	// MinQueueBytes is the smallest bfifo limit accepted. Note that a
	// forwarded 64 KiB GSO packet counts ~68 KB (headers once per
	// segment), so a limit under ~70 KB drops every full-size one.
	MinQueueBytes = 64 << 10
)

// RoutedOptions configures NewRouted. The zero value is valid: a router
// that forwards without shaping.
type RoutedOptions struct {
	// Prefix names the namespaces Prefix+"-a", "-b" and "-r" and the
	// veth ends in A and B (Prefix+"-a", Prefix+"-b"); as Options.Prefix.
	Prefix string
	// RateBps, when positive, shapes R's egress towards B (RouterLinkB)
	// with HTB at this rate (and ceil), in bit/s, decimal: 1e9 is
	// 1 Gbit/s. What exceeds the rate queues in a bfifo of QueueBytes
	// and is dropped beyond it, so a sender sees real loss and
	// retransmits. 0 means no shaping.
	RateBps uint64
	// BurstBytes is HTB's burst and cburst in bytes; 0 means
	// DefaultBurstBytes. Only with RateBps.
	BurstBytes uint32
	// QueueBytes is the bfifo's limit in bytes (GSO packets count their
	// segments' headers too); 0 means DefaultQueueBytes, else at least
	// MinQueueBytes. Only with RateBps.
	QueueBytes uint32
	// Sysctls are written inside A's and B's namespaces, as
	// Options.Sysctls.
	Sysctls map[string]string
}

func (o RoutedOptions) withDefaults() (RoutedOptions, error) {
	base, err := Options{Prefix: o.Prefix, Sysctls: o.Sysctls}.withDefaults()
	if err != nil {
		return o, err
	}
	o.Prefix = base.Prefix
	if o.BurstBytes == 0 {
		o.BurstBytes = DefaultBurstBytes
	}
	if o.QueueBytes == 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.QueueBytes < MinQueueBytes {
		return o, fmt.Errorf("queue %d bytes: must be at least %d", o.QueueBytes, MinQueueBytes)
	}
	if o.BurstBytes < 2048 {
		return o, fmt.Errorf("burst %d bytes: must be at least 2048", o.BurstBytes)
	}
	return o, nil
}

// R returns the router of a bed made by NewRouted (Link is RouterLinkB,
// Addr its address), or nil for other beds.
func (b *Bed) R() *Host { return b.r }

// NewRouted creates three named namespaces A, R and B, a veth pair A—R and
// a veth pair R—B, addresses RoutedAddrA … RoutedAddrB, IPv4 forwarding in
// R and routes in A and B via R, and, when opt.RateBps is set, HTB with an
// explicit burst and a bfifo leaf on R's egress towards B. A and B look as
// in New: Host.Addr is what the other end dials (B's is RoutedAddrB),
// Link and Ifindex name the veth end in that namespace. It returns once
// every veth end is up. On error everything created is removed, as New
// does; Close removes all three namespaces.
func NewRouted(ctx context.Context, opt RoutedOptions) (*Bed, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	mk := func(suffix, link string, p netip.Prefix) *Host {
		return &Host{Name: opt.Prefix + suffix, Link: link, Addr: p.Addr(), Prefix: p, ns: netns.None()}
	}
	b := &Bed{
		a: mk("-a", opt.Prefix+"-a", RoutedAddrA),
		b: mk("-b", opt.Prefix+"-b", RoutedAddrB),
		r: mk("-r", RouterLinkB, RoutedAddrRB),
	}
	for _, h := range []*Host{b.a, b.b, b.r} {
		h.bed = b
	}
	if b.marker, err = writeMarker(opt.Prefix); err != nil {
		return nil, fmt.Errorf("testbed %s: %w", opt.Prefix, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = b.Close()
		}
	}()
	if err := b.buildRouted(ctx, opt); err != nil {
		return nil, fmt.Errorf("testbed %s: %w", opt.Prefix, err)
	}
	if err := setSysctls(opt.Sysctls, b.a, b.b); err != nil {
		return nil, fmt.Errorf("testbed %s: %w", opt.Prefix, err)
	}
	ok = true
	return b, nil
}

func (b *Bed) buildRouted(ctx context.Context, opt RoutedOptions) error {
	if err := createNetns([]*Host{b.a, b.b, b.r}, []string{"netns-a", "netns-b", "netns-r"}); err != nil {
		return err
	}
	if err := addVethPair(b.a, b.a.Link, b.r, RouterLinkA); err != nil {
		return err
	}
	if err := addVethPair(b.r, RouterLinkB, b.b, b.b.Link); err != nil {
		return err
	}
	if err := hook("veth"); err != nil {
		return err
	}
	// R's link towards A, configured through a copy of R's Host.
	ra := *b.r
	ra.Link, ra.Addr, ra.Prefix = RouterLinkA, RoutedAddrRA.Addr(), RoutedAddrRA
	for _, h := range []*Host{b.a, b.b, b.r, &ra} {
		if err := h.configure(); err != nil {
			return err
		}
	}
	if err := b.r.SetSysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	if err := b.a.addRoute(RoutedAddrB.Masked(), RoutedAddrRA.Addr()); err != nil {
		return err
	}
	if err := b.b.addRoute(RoutedAddrA.Masked(), RoutedAddrRB.Addr()); err != nil {
		return err
	}
	if err := hook("configured"); err != nil {
		return err
	}
	if opt.RateBps > 0 {
		if err := b.r.shape(opt); err != nil {
			return err
		}
	}
	if err := hook("qdisc"); err != nil {
		return err
	}
	for _, h := range []*Host{b.a, b.b, b.r, &ra} {
		if err := h.waitUp(ctx); err != nil {
			return err
		}
	}
	return hook("up")
}

// addVethPair creates a veth pair inside x's namespace with its peer placed
// straight into y's, as addVeth does.
func addVethPair(x *Host, xLink string, y *Host, yLink string) error {
	nh, err := x.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: xLink},
		PeerName:      yLink,
		PeerNamespace: netlink.NsFd(int(y.ns)),
	}
	if err := nh.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth %s:%s/%s:%s: %w", x.Name, xLink, y.Name, yLink, err)
	}
	return nil
}

// addRoute adds a route to dst via gw on h.Link.
func (h *Host) addRoute(dst netip.Prefix, gw netip.Addr) error {
	nh, err := h.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	r := &netlink.Route{
		LinkIndex: h.ifindex,
		Dst:       &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), dst.Addr().BitLen())},
		Gw:        gw.AsSlice(),
	}
	if err := nh.RouteAdd(r); err != nil {
		return fmt.Errorf("%s: route %s via %s: %w", h.Name, dst, gw, err)
	}
	return nil
}

// Handles of the shaping tree on RouterLinkB: HTB root 1:, class 1:10
// (the default class), bfifo 10: under it.
var (
	htbRoot  = netlink.MakeHandle(1, 0)
	htbClass = netlink.MakeHandle(1, 0x10)
	fifoLeaf = netlink.MakeHandle(0x10, 0)
)

// htbQuantum is the class's DRR quantum in bytes, given explicitly so the
// kernel does not derive a huge one from the rate (and warn about it).
const htbQuantum = 200000

// shape installs HTB (rate = ceil = opt.RateBps, burst = cburst =
// opt.BurstBytes) with a bfifo of opt.QueueBytes on h.Link, like
//
//	tc qdisc add dev r-b root handle 1: htb default 10
//	tc class add dev r-b parent 1: classid 1:10 htb rate R ceil R burst B cburst B
//	tc qdisc add dev r-b parent 1:10 handle 10: bfifo limit Q
func (h *Host) shape(opt RoutedOptions) error {
	nh, err := h.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	q := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: h.ifindex, Handle: htbRoot, Parent: netlink.HANDLE_ROOT})
	q.Defcls = 0x10
	if err := nh.QdiscAdd(q); err != nil {
		return fmt.Errorf("%s: htb qdisc on %s: %w", h.Name, h.Link, err)
	}
	c := netlink.NewHtbClass(
		netlink.ClassAttrs{LinkIndex: h.ifindex, Parent: htbRoot, Handle: htbClass},
		netlink.HtbClassAttrs{Rate: opt.RateBps, Ceil: opt.RateBps, Buffer: opt.BurstBytes, Cbuffer: opt.BurstBytes, Quantum: htbQuantum},
	)
	if err := nh.ClassAdd(c); err != nil {
		return fmt.Errorf("%s: htb class on %s: %w", h.Name, h.Link, err)
	}
	// vishvananda/netlink has no bfifo type (its GenericQdisc sends no
	// options, so the limit would default to txqueuelen × MTU): build the
	// request with its nl package, on a thread inside the namespace.
	err = h.Do(func() error {
		req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(h.ifindex), Handle: fifoLeaf, Parent: htbClass})
		req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("bfifo")))
		limit := binary.NativeEndian.AppendUint32(nil, opt.QueueBytes) // struct tc_fifo_qopt
		req.AddData(nl.NewRtAttr(nl.TCA_OPTIONS, limit))
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: bfifo on %s: %w", h.Name, h.Link, err)
	}
	return nil
}

// QdiscDrops returns the packets dropped so far by the qdiscs on the
// router's shaped link (RouterLinkB), summed over the HTB tree; it returns
// an error for a bed without a router.
func (b *Bed) QdiscDrops() (uint64, error) {
	if b.r == nil {
		return 0, errors.New("not a routed bed")
	}
	nh, err := b.r.Handle()
	if err != nil {
		return 0, err
	}
	defer nh.Close()
	link, err := nh.LinkByIndex(b.r.ifindex)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.r.Name, err)
	}
	qs, err := nh.QdiscList(link)
	if err != nil {
		return 0, fmt.Errorf("%s: list qdiscs: %w", b.r.Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Handle == htbRoot && q.Attrs().Statistics != nil {
			// The root's drops include its children's.
			return uint64(q.Attrs().Statistics.Queue.Drops), nil
		}
	}
	return 0, nil
}
