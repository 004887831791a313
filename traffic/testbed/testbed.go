// Package testbed builds a throwaway two-host network: two named network
// namespaces (visible to `ip netns`) joined by a veth pair, with addresses
// from the benchmarking ranges 198.18.0.0/15 and 2001:2::/48 only. Tests and
// benchmarks use it so that no traffic ever leaves namespaces they created.
//
// Everything here needs CAP_SYS_ADMIN and CAP_NET_ADMIN (in practice root).
package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/vishvananda/netns"

	"github.com/netprof/netprof/traffic/testbed/delayline"
)

// MaxPrefixLen is the longest Options.Prefix: names are prefix + "-a"/"-b",
// and interface names are limited to 15 bytes.
const MaxPrefixLen = 13

// Benchmarking ranges (RFC 2544, RFC 5180). Options addresses must lie inside.
var (
	BenchV4 = netip.MustParsePrefix("198.18.0.0/15")
	BenchV6 = netip.MustParsePrefix("2001:2::/48")
)

// Default addresses of the two hosts.
var (
	DefaultAddrA = netip.MustParsePrefix("198.18.0.1/30")
	DefaultAddrB = netip.MustParsePrefix("198.18.0.2/30")
)

// ErrClosed is returned (wrapped) by Host methods after Bed.Close.
var ErrClosed = errors.New("test bed closed")

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_]*$`)

// Options configures New. The zero value is valid.
type Options struct {
	// Prefix names everything New creates: namespaces and veth ends are
	// called Prefix+"-a" and Prefix+"-b". Letters, digits and '_', at most
	// MaxPrefixLen bytes. Default: "np" plus 8 random hex digits, so
	// parallel runs do not collide.
	Prefix string
	// AddrA and AddrB are the hosts' addresses with prefix length. Both must
	// be in the same subnet, of the same family, distinct, and inside
	// BenchV4 or BenchV6. Default DefaultAddrA and DefaultAddrB. An IPv6
	// address is added with IFA_F_NODAD, so it is usable at once.
	AddrA, AddrB netip.Prefix
	// Delay, when positive, joins A and B through a user-space delay line
	// instead of a veth pair: a TUN device in each namespace (named as the
	// veth ends would be, so Host.Link and Host.Ifindex name it), held open
	// by this process, which forwards every packet after Delay in each
	// direction (see package delayline). A round trip takes 2×Delay plus
	// the line's own ~0.2–0.5 ms. At most MaxDelay.
	Delay time.Duration
	// DelayQueueBytes bounds each direction of the delay line in bytes;
	// packets that do not fit are dropped and counted (Bed.DelayStats).
	// 0 means delayline.DefaultMaxBytes. Only with Delay.
	DelayQueueBytes int
	// Sysctls are written inside both namespaces once they exist, e.g.
	// {"net.ipv4.tcp_wmem": "4096 16384 67108864"}. Keys must be under
	// net. (per network namespace); the caller's namespace is untouched.
	Sysctls map[string]string
	// Queues, when positive, gives both veth ends that many receive and
	// transmit queues (default: the kernel's, one each), for tests of
	// per-queue steering and counters. At most MaxQueues; not with Delay.
	Queues int
}

// MaxQueues is the most queues Options.Queues may ask for.
const MaxQueues = 64

func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return o, fmt.Errorf("random prefix: %w", err)
		}
		o.Prefix = "np" + hex.EncodeToString(b[:])
	}
	if !o.AddrA.IsValid() && !o.AddrB.IsValid() {
		o.AddrA, o.AddrB = DefaultAddrA, DefaultAddrB
	}
	return o, o.validate()
}

func (o Options) validate() error {
	if len(o.Prefix) > MaxPrefixLen || !prefixRE.MatchString(o.Prefix) {
		return fmt.Errorf("invalid prefix %q: want 1-%d letters, digits or '_', starting with a letter or digit", o.Prefix, MaxPrefixLen)
	}
	for _, p := range []struct {
		name string
		pfx  netip.Prefix
	}{{"AddrA", o.AddrA}, {"AddrB", o.AddrB}} {
		if !p.pfx.IsValid() {
			return fmt.Errorf("%s: not set (set both or neither)", p.name)
		}
		a := p.pfx.Addr()
		if a.Zone() != "" || a.Is4In6() || !(BenchV4.Contains(a) || BenchV6.Contains(a)) {
			return fmt.Errorf("%s %s: outside the benchmarking ranges %s and %s", p.name, p.pfx, BenchV4, BenchV6)
		}
	}
	if o.AddrA.Addr() == o.AddrB.Addr() {
		return fmt.Errorf("AddrA and AddrB are the same address %s", o.AddrA.Addr())
	}
	if o.AddrA.Bits() != o.AddrB.Bits() || !o.AddrA.Contains(o.AddrB.Addr()) {
		return fmt.Errorf("AddrA %s and AddrB %s are not in the same subnet", o.AddrA, o.AddrB)
	}
	var qerr error
	switch {
	case o.Queues < 0 || o.Queues > MaxQueues:
		qerr = fmt.Errorf("Queues %d: want 0-%d", o.Queues, MaxQueues)
	case o.Queues > 0 && o.Delay > 0:
		qerr = errors.New("Queues: a delay line has no veth queues")
	}
	return errors.Join(validateDelay(o), validateSysctls(o.Sysctls), qerr)
}

// Bed is a pair of namespaces joined by a veth (New), by a delay line (New
// with Options.Delay) or through a router namespace (NewRouted). Release it
// with Close. Methods are safe for concurrent use.
type Bed struct {
	mu     sync.RWMutex // held for reading while a Host uses its namespace
	closed bool
	queues int // Options.Queues
	a, b   *Host
	r      *Host           // the router of NewRouted, else nil
	line   *delayline.Line // the delay line of Options.Delay, else nil
	marker string          // the bed's file in MarkerDir ("" if none)
}

// A returns the first host (address Options.AddrA).
func (b *Bed) A() *Host { return b.a }

// B returns the second host (address Options.AddrB).
func (b *Bed) B() *Host { return b.b }

// New creates the two named namespaces (under NetnsDir, so `ip netns exec`
// works), a veth pair with one end in each (with Options.Delay: a TUN device
// in each and a running delay line), the addresses, and brings the links and
// lo up; it returns once both links are up; then it writes Options.Sysctls.
// ctx bounds that wait. On any error everything New created is removed
// before it returns; a namespace that already existed is reported with an
// error wrapping fs.ErrExist and left untouched. Invalid options fail before
// anything is created.
func New(ctx context.Context, opt Options) (*Bed, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	b := &Bed{
		a: &Host{Name: opt.Prefix + "-a", Link: opt.Prefix + "-a", Addr: opt.AddrA.Addr(), Prefix: opt.AddrA, ns: netns.None()},
		b: &Host{Name: opt.Prefix + "-b", Link: opt.Prefix + "-b", Addr: opt.AddrB.Addr(), Prefix: opt.AddrB, ns: netns.None()},
	}
	b.a.bed, b.b.bed = b, b
	if b.marker, err = writeMarker(opt.Prefix); err != nil {
		return nil, fmt.Errorf("testbed %s: %w", opt.Prefix, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = b.Close()
		}
	}()
	b.queues = opt.Queues
	build := b.build
	if opt.Delay > 0 {
		build = func(ctx context.Context) error { return b.buildDelayed(ctx, opt) }
	}
	if err := build(ctx); err != nil {
		return nil, fmt.Errorf("testbed %s: %w", opt.Prefix, err)
	}
	if err := setSysctls(opt.Sysctls, b.a, b.b); err != nil {
		return nil, fmt.Errorf("testbed %s: %w", opt.Prefix, err)
	}
	ok = true
	return b, nil
}

// testHook, when set (by tests), is called after each step of New; an error
// makes New fail there.
var testHook func(step string) error

func hook(step string) error {
	if testHook == nil {
		return nil
	}
	return testHook(step)
}

func (b *Bed) build(ctx context.Context) error {
	if err := ensureNetnsDir(); err != nil {
		return err
	}
	for i, h := range []*Host{b.a, b.b} {
		ns, err := createNamed(h.Name)
		if err != nil {
			return err
		}
		h.ns, h.created = ns, true
		if h.inode, err = nsInode(ns); err != nil {
			return err
		}
		if err := hook([]string{"netns-a", "netns-b"}[i]); err != nil {
			return err
		}
	}
	if err := b.addVeth(); err != nil {
		return err
	}
	if err := hook("veth"); err != nil {
		return err
	}
	for _, h := range []*Host{b.a, b.b} {
		if err := h.configure(); err != nil {
			return err
		}
	}
	if err := hook("configured"); err != nil {
		return err
	}
	for _, h := range []*Host{b.a, b.b} {
		if err := h.waitUp(ctx); err != nil {
			return err
		}
	}
	return hook("up")
}

// Close stops the delay line if there is one (removing its TUN devices),
// then deletes the bed's namespaces, which destroys the veth pairs with them.
// Sockets still open inside a namespace keep the kernel object alive (but
// unnamed) until they are closed, so close listeners and connections first.
// Close is idempotent: later calls return nil. It waits for Host.Do calls in
// flight to return.
func (b *Bed) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	if b.line != nil {
		if err := b.line.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range []*Host{b.a, b.b, b.r} {
		if h == nil {
			continue
		}
		if h.ns.IsOpen() {
			_ = h.ns.Close()
			h.ns = netns.None()
		}
		if h.created {
			if err := deleteNamed(h.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testbed close: %w", err)
	}
	if b.marker != "" {
		if err := os.Remove(b.marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("testbed close: %w", err)
		}
	}
	return nil
}
