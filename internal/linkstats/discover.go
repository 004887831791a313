package linkstats

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"

	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NS is one network namespace to discover interfaces in: a netlink handle
// and an ethtool socket, both opened inside that namespace (ethtool ioctls
// resolve interface names in the namespace of their socket, not of the
// calling thread). Create it with OpenNS; Close it.
type NS struct {
	// Netns is the namespace's inode (what BPF sees as net->ns.inum).
	Netns  uint64
	Handle *netlink.Handle
	// Ethtool is nil when no ethtool socket could be opened; discovery then
	// reports drivers from netlink/sysfs and every speed as unknown.
	Ethtool *ethtool.Ethtool
	// own is true for the caller's own namespace, where /sys/class/net
	// describes these interfaces.
	own bool
}

// OpenNS opens a netlink handle and an ethtool socket inside a network
// namespace. do runs its function inside the namespace (testbed.Host.Do has
// this shape) and inode is that namespace's inode; a nil do means the
// caller's own namespace, whose inode OpenNS reads from /proc/self/ns/net.
// It returns an error if the netlink handle cannot be opened; a missing
// ethtool socket is not an error (NS.Ethtool stays nil).
func OpenNS(do func(func() error) error, inode uint64) (*NS, error) {
	ns := &NS{Netns: inode}
	open := func() error {
		// NETLINK_ROUTE only: with no family, NewHandle also opens XFRM
		// and NETFILTER sockets, which fail ("protocol not supported")
		// on kernels without them built in and no /sbin/modprobe.
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink handle: %w", err)
		}
		ns.Handle = h
		if e, err := ethtool.NewEthtool(); err == nil {
			ns.Ethtool = e
		}
		return nil
	}
	if do == nil {
		ns.own = true
		var st unix.Stat_t
		// The calling thread's, where the netlink socket is opened
		// (/proc/self is the main thread's, which a locked goroutine may
		// have moved).
		if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
			return nil, fmt.Errorf("stat own netns: %w", err)
		}
		ns.Netns = st.Ino
		if err := open(); err != nil {
			return nil, err
		}
		return ns, nil
	}
	if err := do(open); err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// Close closes the netlink handle and the ethtool socket. It is idempotent.
func (ns *NS) Close() {
	if ns == nil {
		return
	}
	if ns.Handle != nil {
		ns.Handle.Close()
		ns.Handle = nil
	}
	if ns.Ethtool != nil {
		ns.Ethtool.Close()
		ns.Ethtool = nil
	}
}

// Discover lists every interface of the namespace with what netlink
// (RTM_GETLINK) and ethtool (ETHTOOL_GDRVINFO, ETHTOOL_GSET,
// ETHTOOL_GCHANNELS) say about it, sorted by index. Rated speeds of devices
// whose driver reports a fixed placeholder (veth, tun) or none
// (SPEED_UNKNOWN) are nil, with the reason in SpeedNote; see RatedSpeed.
// It returns an error only when the netlink dump fails.
func Discover(ns *NS) ([]Link, error) {
	nl, err := ns.Handle.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	links := make([]Link, 0, len(nl))
	for _, l := range nl {
		links = append(links, ns.describe(l))
	}
	sort.Slice(links, func(i, j int) bool { return links[i].Index < links[j].Index })
	resolveNames(links)
	resolveSpeeds(links)
	return links, nil
}

// describe fills a Link from one netlink link and ethtool.
func (ns *NS) describe(l netlink.Link) Link {
	a := l.Attrs()
	out := Link{
		Netns: ns.Netns, Name: a.Name, Index: a.Index, MTU: a.MTU, Kind: l.Type(),
		MAC: a.HardwareAddr.String(), MasterIndex: a.MasterIndex,
		OperState: a.OperState.String(), Up: a.Flags&net.FlagUp != 0,
		RxQueues: a.NumRxQueues, TxQueues: a.NumTxQueues,
	}
	if stacked[out.Kind] && a.NetNsID < 0 {
		out.LowerIndex = a.ParentIndex
	}
	if st := a.Statistics; st != nil {
		out.Stats = FromNetlink(st)
	}
	out.Driver = out.Kind
	if a.Flags&net.FlagLoopback != 0 {
		out.Driver = "loopback"
	}
	if ns.Ethtool != nil {
		if di, err := ns.Ethtool.DriverInfo(a.Name); err == nil && di.Driver != "" {
			out.Driver, out.BusInfo = di.Driver, di.BusInfo
		}
		if ch, err := ns.Ethtool.GetChannels(a.Name); err == nil {
			out.Channels = int(ch.CombinedCount + ch.RxCount)
		}
		out.SpeedMbps, out.SpeedNote = ns.speed(a.Name)
	} else {
		out.SpeedNote = "unknown: no ethtool socket"
	}
	if out.Driver == "device" && ns.own {
		if p, err := os.Readlink(filepath.Join("/sys/class/net", a.Name, "device/driver")); err == nil {
			out.Driver = filepath.Base(p)
		}
	}
	return out
}

// speedUnknown is SPEED_UNKNOWN (include/uapi/linux/ethtool.h), (u32)-1.
const speedUnknown = 0xffffffff

// speed reads the link speed with ETHTOOL_GSET (the kernel serves it from
// the driver's get_link_ksettings too), in decimal Mbit/s.
func (ns *NS) speed(name string) (*int64, string) {
	var cmd ethtool.EthtoolCmd
	sp, err := ns.Ethtool.CmdGet(&cmd, name)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP) {
			return nil, "unknown: driver has no link settings"
		}
		return nil, "unknown: " + err.Error()
	}
	if sp == 0 || sp == speedUnknown || sp == 0xffff {
		return nil, "unknown: driver reports none (SPEED_UNKNOWN)"
	}
	v := int64(sp)
	return &v, "ethtool"
}

// placeholder lists drivers whose ethtool speed is a constant that says
// nothing about what the device can carry (a veth moves 20+ Gbit/s while
// reporting 10000 Mb/s; a tun reports 10 Mb/s).
var placeholder = map[string]bool{"veth": true, "tun": true, "dummy": true, "ifb": true}

// stacked lists link kinds whose IFLA_LINK is a lower device carrying
// their frames (as opposed to veth, whose IFLA_LINK is its peer).
var stacked = map[string]bool{"macvlan": true, "macvtap": true, "ipvlan": true, "ipvtap": true, "vlan": true}

// resolveNames fills Master and Lower names from indexes.
func resolveNames(links []Link) {
	byIndex := Index(links)
	for i := range links {
		if m, ok := byIndex[links[i].MasterIndex]; ok {
			links[i].Master = m.Name
		}
		if lo, ok := byIndex[links[i].LowerIndex]; ok {
			links[i].Lower = lo.Name
		}
	}
}

// resolveSpeeds drops placeholder speeds, also where an upper device
// (bridge, bond, macvlan...) derives its speed from a placeholder below it.
func resolveSpeeds(links []Link) {
	byIndex := Index(links)
	var below func(l Link, depth int) (string, bool)
	below = func(l Link, depth int) (string, bool) {
		if placeholder[l.Driver] {
			return l.Name, true
		}
		if depth > 8 {
			return "", false
		}
		for _, o := range links {
			if o.MasterIndex == l.Index || (l.LowerIndex != 0 && o.Index == l.LowerIndex) {
				if n, ok := below(o, depth+1); ok {
					return n, true
				}
			}
		}
		return "", false
	}
	for i := range links {
		if links[i].SpeedMbps == nil {
			continue
		}
		if n, ok := below(links[i], 0); ok {
			was := *links[i].SpeedMbps
			links[i].SpeedMbps = nil
			if n == links[i].Name {
				links[i].SpeedNote = fmt.Sprintf("unknown: %s reports a fixed %d Mb/s, not a limit", links[i].Driver, was)
			} else {
				links[i].SpeedNote = fmt.Sprintf("unknown: %d Mb/s derived from %s (%s placeholder)", was, n, byIndex[indexOf(links, n)].Driver)
			}
		}
	}
}

func indexOf(links []Link, name string) int {
	for _, l := range links {
		if l.Name == name {
			return l.Index
		}
	}
	return 0
}

// Index returns links by ifindex.
func Index(links []Link) map[int]Link {
	m := make(map[int]Link, len(links))
	for _, l := range links {
		m[l.Index] = l
	}
	return m
}
