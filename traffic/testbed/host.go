package testbed

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Host is one end of a Bed: a named network namespace holding one veth end
// (or, with Options.Delay, one TUN device; a NewRouted router holds two veth
// ends).
type Host struct {
	// Name is the network namespace's name (see `ip netns list`).
	Name string
	// Link is the name of the interface carrying the bed's traffic inside
	// the namespace: the veth end, or the TUN device with Options.Delay.
	Link string
	// Addr is the host's address on Link.
	Addr netip.Addr
	// Prefix is Addr with its prefix length, as configured on Link.
	Prefix netip.Prefix

	bed     *Bed
	ns      netns.NsHandle // open while the bed is
	created bool           // the namespace is ours to delete
	inode   uint64
	ifindex int
}

// Ifindex returns Link's interface index inside the namespace.
func (h *Host) Ifindex() int { return h.ifindex }

// NetnsInode returns the inode of the host's network namespace, which is what
// BPF programs see as net->ns.inum (and `ls -L -i /run/netns/NAME` shows).
func (h *Host) NetnsInode() uint64 { return h.inode }

// Do runs fn on an OS thread switched into the host's namespace and waits for
// it. fn runs on a separate goroutine (so it must not call t.FailNow and the
// like); goroutines fn starts are not in the namespace. The thread is moved
// back afterwards, or discarded if that fails. A panic in fn is re-raised.
// Do returns fn's error, an error if the switch failed, or one wrapping
// ErrClosed after Close. Close waits for Do calls in flight, so fn must not
// call Close, nor Do or another Host method (they may deadlock against a
// waiting Close).
func (h *Host) Do(fn func() error) error {
	h.bed.mu.RLock()
	defer h.bed.mu.RUnlock()
	if h.bed.closed {
		return fmt.Errorf("netns %s: %w", h.Name, ErrClosed)
	}
	return inNetns(h.ns, fn)
}

// Listen is net.Listen with the socket created inside the namespace. network
// is "tcp", "tcp4", "tcp6", "udp", "udp4" or "udp6"; the host part of addr
// must be empty or a literal IP (no name lookups happen from the namespace).
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	if err := checkAddr(network, addr, true); err != nil {
		return nil, fmt.Errorf("listen in %s: %w", h.Name, err)
	}
	var ln net.Listener
	err := h.Do(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen in %s: %w", h.Name, err)
	}
	return ln, nil
}

// Dial is net.Dialer.DialContext with the socket created inside the
// namespace. addr's host must be a literal IP; the dial is single-address
// (no Happy Eyeballs goroutines, which would run outside the namespace).
func (h *Host) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := checkAddr(network, addr, false); err != nil {
		return nil, fmt.Errorf("dial from %s: %w", h.Name, err)
	}
	var c net.Conn
	err := h.Do(func() error {
		d := net.Dialer{FallbackDelay: -1}
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dial from %s: %w", h.Name, err)
	}
	return c, nil
}

func checkAddr(network, addr string, emptyHostOK bool) error {
	switch network {
	case "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
	default:
		return fmt.Errorf("unsupported network %q", network)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" && emptyHostOK {
		return nil
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("address %q: host must be a literal IP", addr)
	}
	return nil
}

// Handle returns a NETLINK_ROUTE handle bound to the host's namespace; the
// caller must Close it. (It is opened through Do rather than
// netlink.NewHandleAt, whose thread switch unlocks the thread even when
// switching back failed; route only, since a handle of every family also
// opens XFRM and NETFILTER sockets, which fail with "protocol not
// supported" on kernels without them and no /sbin/modprobe.)
func (h *Host) Handle() (*netlink.Handle, error) {
	var nh *netlink.Handle
	err := h.Do(func() error {
		var err error
		nh, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netlink handle in %s: %w", h.Name, err)
	}
	return nh, nil
}

// Exec returns a command that runs name with args inside the namespace, via
// `ip netns exec` (so iproute2 must be installed, and /sys shows the
// namespace's devices). ctx kills the process as in exec.CommandContext.
func (h *Host) Exec(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// addVeth creates the veth pair inside A with its peer placed straight into
// B, so it never exists in the caller's namespace (no name clash there, and
// nothing left there if we die half-way).
func (b *Bed) addVeth() error {
	nh, err := b.a.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: b.a.Link},
		PeerName:      b.b.Link,
		PeerNamespace: netlink.NsFd(int(b.b.ns)),
	}
	if q := b.queues; q > 0 {
		veth.NumTxQueues, veth.NumRxQueues = q, q
		veth.PeerNumTxQueues, veth.PeerNumRxQueues = uint32(q), uint32(q)
	}
	if err := nh.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth %s/%s: %w", b.a.Link, b.b.Link, err)
	}
	return nil
}

// configure adds the address, brings the veth end and lo up, and records the
// ifindex.
func (h *Host) configure() error {
	nh, err := h.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	link, err := nh.LinkByName(h.Link)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", h.Name, h.Link, err)
	}
	h.ifindex = link.Attrs().Index
	addr := &netlink.Addr{IPNet: &net.IPNet{
		IP:   h.Prefix.Addr().AsSlice(),
		Mask: net.CIDRMask(h.Prefix.Bits(), h.Prefix.Addr().BitLen()),
	}}
	if h.Prefix.Addr().Is6() {
		addr.Flags = unix.IFA_F_NODAD
	}
	if err := nh.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("%s: add %s to %s: %w", h.Name, h.Prefix, h.Link, err)
	}
	if err := nh.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s: set %s up: %w", h.Name, h.Link, err)
	}
	lo, err := nh.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: find lo: %w", h.Name, err)
	}
	if err := nh.LinkSetUp(lo); err != nil {
		return fmt.Errorf("%s: set lo up: %w", h.Name, err)
	}
	return nil
}

// linkUpTimeout bounds waitUp when ctx has no earlier deadline.
const linkUpTimeout = 5 * time.Second

// waitUp polls until the veth end is operationally up (carrier on, qdisc
// attached), so the first packets are not dropped.
func (h *Host) waitUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, linkUpTimeout)
	defer cancel()
	nh, err := h.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	for {
		link, err := nh.LinkByIndex(h.ifindex)
		if err != nil {
			return fmt.Errorf("%s: get %s: %w", h.Name, h.Link, err)
		}
		if link.Attrs().OperState == netlink.OperUp {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not up (operstate %s): %w", h.Name, h.Link, link.Attrs().OperState, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
