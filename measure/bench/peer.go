package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"

	"github.com/vishvananda/netlink"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/control"
)

// ErrPeerLost is wrapped by the error of a --peer run whose peer stopped
// answering or went away before the end.
var ErrPeerLost = errors.New("peer lost")

// Local is where this end of a --peer run lives: a network namespace, the
// process's own unless Do is set.
type Local struct {
	// Do runs its function inside the namespace (testbed.Host.Do has this
	// shape); nil means the process's own namespace.
	Do func(func() error) error
	// Netns is that namespace's inode (read from /proc/self/ns/net when Do
	// is nil).
	Netns uint64
}

// RunPeer performs one run to the `netprof traffic serve` at cfg.Peer from
// the namespace local describes (the zero Local: this process's own), with
// the probes and netlink counters on the interface carrying the route to
// the peer. Its contract is Run's; in addition a peer that stops reporting
// for cfg.PeerTimeout, or goes away, ends the run with an error wrapping
// ErrPeerLost, the trace keeping every completed interval, and data ports
// that cannot be reached fail within the connect timeout with an error
// (a *control.DataError) naming them.
func RunPeer(ctx context.Context, cfg Config, toolVersion string, local Local, log *slog.Logger) (*Result, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Peer == "" {
		return nil, errors.New("no peer given")
	}
	if !cfg.NoBPF {
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("the probes need root (run with sudo, or use --no-bpf): %w", ErrPrivilege)
		}
		if err := loader.Check(log); err != nil {
			return nil, fmt.Errorf("%w (run with sudo, or use --no-bpf for generator and netlink figures only)", err)
		}
	}
	addr, ip, err := resolvePeer(ctx, cfg.Peer, cfg.IPv6, local.Do != nil)
	if err != nil {
		return nil, err
	}
	ns, link, err := routeLink(local, ip)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	link.Role = localRole(cfg.dir())
	d, err := dialPeer(ctx, cfg, local, addr, log)
	if err != nil {
		return nil, err
	}
	defer d.close()
	return execute(ctx, cfg, toolVersion, []linkstats.Link{link}, []*netlink.Handle{ns.Handle}, d, d.manifestInfo(), log)
}

// resolvePeer splits HOST[:PORT] and resolves HOST (a name only in the
// process's own namespace: lookups from another one would leave it).
func resolvePeer(ctx context.Context, peer string, v6, otherNS bool) (string, netip.Addr, error) {
	host, port, err := net.SplitHostPort(peer)
	if err != nil { // no port, or a bare IPv6 address
		host, port = peer, strconv.Itoa(DefaultPeerPort)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", netip.Addr{}, fmt.Errorf("peer %q: invalid port %q", peer, port)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil && otherNS {
		return "", netip.Addr{}, fmt.Errorf("peer %q: want a literal IP address here", peer)
	}
	if err != nil {
		ip, err = lookup(ctx, host, v6)
		if err != nil {
			return "", netip.Addr{}, err
		}
	}
	ip = ip.Unmap()
	return net.JoinHostPort(ip.String(), port), ip, nil
}

// lookup resolves name, preferring IPv6 addresses when v6 is set and IPv4
// otherwise.
func lookup(ctx context.Context, name string, v6 bool) (netip.Addr, error) {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("peer %q: %w", name, err)
	}
	for _, ip := range ips {
		if ip.Unmap().Is6() == v6 {
			return ip.Unmap(), nil
		}
	}
	if len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("peer %q: no address", name)
	}
	return ips[0].Unmap(), nil
}

// routeLink describes the interface carrying the route to ip, in the local
// namespace (netlink RTM_GETROUTE, then the link's netlink and ethtool
// description). The returned NS stays open for sampling.
func routeLink(local Local, ip netip.Addr) (*linkstats.NS, linkstats.Link, error) {
	ns, err := linkstats.OpenNS(local.Do, local.Netns)
	if err != nil {
		return nil, linkstats.Link{}, err
	}
	routes, err := ns.Handle.RouteGet(ip.AsSlice())
	if err != nil || len(routes) == 0 {
		ns.Close()
		return nil, linkstats.Link{}, fmt.Errorf("no route to peer %s: %w", ip, err)
	}
	links, err := linkstats.Discover(ns)
	if err != nil {
		ns.Close()
		return nil, linkstats.Link{}, err
	}
	for _, l := range links {
		if l.Index == routes[0].LinkIndex {
			return ns, l, nil
		}
	}
	ns.Close()
	return nil, linkstats.Link{}, fmt.Errorf("route to peer %s: interface %d not found", ip, routes[0].LinkIndex)
}

// localRole is the role this end's interface plays.
func localRole(d control.Direction) string {
	if d == control.Reverse {
		return trace.RoleReceiver
	}
	return trace.RoleSender
}
