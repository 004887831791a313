// Package linkstats samples interface counters over netlink (RTM_GETLINK,
// IFLA_STATS64): the kernel's own per-interface byte, packet and drop
// counters, the ground truth the BPF counts are checked against. Counters
// include L2 headers; their exact meaning is the driver's (veth counts
// skb->len at transmit, for the peer's receive as well).
package linkstats

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"

	"github.com/netprof/netprof/trace"
)

// Link describes one interface to sample. Describe fills the first group
// of fields; Discover fills them all.
type Link struct {
	Netns  uint64 // network namespace inode
	Name   string
	Index  int
	Driver string // kernel driver (ethtool/sysfs) or link kind (veth, macvlan, ...)
	MTU    int
	Master string // name of the master (bond, bridge, VF's synthetic NIC), if any
	// Role says what the run uses it for ("sender", "receiver"), if anything.
	Role string

	// Kind is the netlink link kind (IFLA_INFO_KIND: "veth", "bridge",
	// "macvlan", ...), or "device" for a device without one (a NIC).
	Kind string
	// MAC is the hardware address ("" when the device has none).
	MAC string
	// MasterIndex is the ifindex of the master (IFLA_MASTER), 0 if none.
	MasterIndex int
	// LowerIndex is the ifindex of the device carrying this stacked
	// device's frames (IFLA_LINK of a macvlan, ipvlan or vlan in the same
	// namespace), 0 if none; Lower is its name.
	LowerIndex int
	Lower      string
	// OperState is the RFC 2863 operational state ("up", "down", ...);
	// Up is the administrative IFF_UP flag.
	OperState string
	Up        bool
	// RxQueues and TxQueues are the kernel's queue counts (netlink);
	// Channels is the driver's active channel count (ETHTOOL_GCHANNELS,
	// combined + rx-only), 0 when the driver does not say.
	RxQueues, TxQueues, Channels int
	// BusInfo is the device's bus address (ethtool), e.g. a PCI address.
	BusInfo string
	// SpeedMbps is the rated link speed in decimal Mbit/s (10^6 bit/s), nil
	// when unknown; SpeedNote says where it came from ("ethtool",
	// "--link-speed") or why it is unknown. It is never guessed.
	SpeedMbps *int64
	SpeedNote string
	// Stats are the cumulative counters at discovery.
	Stats Stats
}

// Stats are cumulative counters of one interface (netlink stats64).
type Stats struct {
	RxBytes, TxBytes, RxPackets, TxPackets, RxDropped, TxDropped uint64
	// Errors are stats64's error counters, in ErrorNames order.
	Errors [len(ErrorNames)]uint64
}

// ErrorNames are the ifaces columns of Stats.Errors, in order: stats64's
// rx_errors, tx_errors, rx_missed_errors (the NIC had no buffer: missed by
// the host), rx_fifo_errors, rx_over_errors, rx_crc_errors,
// rx_frame_errors, rx_length_errors, tx_aborted_errors,
// tx_carrier_errors, tx_fifo_errors, tx_heartbeat_errors,
// tx_window_errors and collisions.
var ErrorNames = [...]string{"rx_errors", "tx_errors", "rx_missed_errors", "rx_fifo_errors", "rx_over_errors",
	"rx_crc_errors", "rx_frame_errors", "rx_length_errors", "tx_aborted_errors", "tx_carrier_errors",
	"tx_fifo_errors", "tx_heartbeat_errors", "tx_window_errors", "collisions"}

// Sub returns s − p, or s when a counter went backwards (the interface was
// re-created or its counters reset); reset reports that case.
func (s Stats) Sub(p Stats) (d Stats, reset bool) {
	if s.RxBytes < p.RxBytes || s.TxBytes < p.TxBytes || s.RxPackets < p.RxPackets ||
		s.TxPackets < p.TxPackets || s.RxDropped < p.RxDropped || s.TxDropped < p.TxDropped {
		return s, true
	}
	for i := range s.Errors {
		if s.Errors[i] < p.Errors[i] {
			return s, true
		}
	}
	d = Stats{
		RxBytes: s.RxBytes - p.RxBytes, TxBytes: s.TxBytes - p.TxBytes,
		RxPackets: s.RxPackets - p.RxPackets, TxPackets: s.TxPackets - p.TxPackets,
		RxDropped: s.RxDropped - p.RxDropped, TxDropped: s.TxDropped - p.TxDropped,
	}
	for i := range s.Errors {
		d.Errors[i] = s.Errors[i] - p.Errors[i]
	}
	return d, false
}

// Row returns the ifaces row of these (delta) counters.
func (s Stats) Row(netns uint64, name string, index int, driver string) trace.IfaceRow {
	r := trace.IfaceRow{
		Netns: netns, Ifname: name, Ifindex: int32(index), Driver: driver,
		RxBytes: s.RxBytes, TxBytes: s.TxBytes, RxPackets: s.RxPackets, TxPackets: s.TxPackets,
		RxDropped: s.RxDropped, TxDropped: s.TxDropped,
	}
	e := s.Errors
	for i, p := range []**uint64{&r.RxErrors, &r.TxErrors, &r.RxMissedErrors, &r.RxFifoErrors, &r.RxOverErrors,
		&r.RxCrcErrors, &r.RxFrameErrors, &r.RxLengthErrors, &r.TxAbortedErrors, &r.TxCarrierErrors,
		&r.TxFifoErrors, &r.TxHeartbeatErrors, &r.TxWindowErrors, &r.Collisions} {
		*p = &e[i]
	}
	return r
}

// Read returns the interface's counters through handle h (a netlink handle
// in the interface's namespace). It returns an error wrapping the netlink
// error when the interface is gone.
func Read(h *netlink.Handle, index int) (Stats, error) {
	l, err := h.LinkByIndex(index)
	if err != nil {
		return Stats{}, fmt.Errorf("link %d: %w", index, err)
	}
	st := l.Attrs().Statistics
	if st == nil {
		return Stats{}, fmt.Errorf("link %s: no stats64 in netlink reply", l.Attrs().Name)
	}
	return FromNetlink(st), nil
}

// Describe returns name, driver, MTU and master of the interface at index
// through handle h; netns is recorded as given.
func Describe(h *netlink.Handle, netns uint64, index int) (Link, error) {
	l, err := h.LinkByIndex(index)
	if err != nil {
		return Link{}, fmt.Errorf("link %d: %w", index, err)
	}
	a := l.Attrs()
	out := Link{Netns: netns, Name: a.Name, Index: a.Index, MTU: a.MTU, Driver: driver(l)}
	if a.MasterIndex > 0 {
		if m, err := h.LinkByIndex(a.MasterIndex); err == nil {
			out.Master = m.Attrs().Name
		}
	}
	return out, nil
}

// driver returns the bound kernel driver from sysfs for devices that have
// one (only meaningful in the caller's own namespace), else the link kind.
func driver(l netlink.Link) string {
	if t := l.Type(); t != "device" {
		return t
	}
	p, err := os.Readlink(filepath.Join("/sys/class/net", l.Attrs().Name, "device/driver"))
	if err != nil {
		return "device"
	}
	return filepath.Base(p)
}

// FromNetlink converts netlink's stats64.
func FromNetlink(st *netlink.LinkStatistics) Stats {
	return Stats{
		RxBytes: st.RxBytes, TxBytes: st.TxBytes, RxPackets: st.RxPackets, TxPackets: st.TxPackets,
		RxDropped: st.RxDropped, TxDropped: st.TxDropped,
		Errors: [len(ErrorNames)]uint64{st.RxErrors, st.TxErrors, st.RxMissedErrors, st.RxFifoErrors, st.RxOverErrors,
			st.RxCrcErrors, st.RxFrameErrors, st.RxLengthErrors, st.TxAbortedErrors, st.TxCarrierErrors,
			st.TxFifoErrors, st.TxHeartbeatErrors, st.TxWindowErrors, st.Collisions},
	}
}
