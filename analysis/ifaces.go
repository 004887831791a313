package analysis

import (
	"fmt"

	"github.com/netprof/netprof/trace"
)

// ifaceKey identifies an interface: its name within a network namespace
// (netns 0 matches any namespace, for manifests that do not record it).
type ifaceKey struct {
	name  string
	netns uint64
}

// match reports whether the row belongs to the interface.
func (k ifaceKey) match(x *trace.IfaceRow) bool {
	return x.Ifname == k.name && (k.netns == 0 || x.Netns == k.netns)
}

// ifaceSide accumulates one direction of one interface.
type ifaceSide struct {
	key                  ifaceKey
	chosen               bool
	netlink, bpf, wire   series
	rows, nullBpf, nullW int
	bpfPackets           uint64
	bpfPacketsSet        bool
	// noL2: the interface is a TUN device (no Ethernet header or framing);
	// loopback: it is lo (Ethernet header in the skb, no framing).
	noL2, loopback bool
	// allBytes is the chosen interface's netlink bytes in this direction
	// over every row (Direction.IfaceBytes).
	allBytes uint64
}

// dirCols are one direction's columns of an ifaces row.
type dirCols struct {
	bytes              uint64
	bpf, pkts, wireHdr *uint64
}

func colsOf(x *trace.IfaceRow, dir string) dirCols {
	if dir == "tx" {
		return dirCols{x.TxBytes, x.BpfTxBytes, x.BpfTxPackets, x.BpfTxWireBytes}
	}
	return dirCols{x.RxBytes, x.BpfRxBytes, x.BpfRxPackets, x.BpfRxWireBytes}
}

// add adds a row of the side's interface.
func (s *ifaceSide) add(b *builder, x *trace.IfaceRow, dir string) {
	s.rows++
	c := colsOf(x, dir)
	pre := "ifaces." + dir + "_bytes of " + s.key.name
	if b.anom.plausible(pre, x.Time, x.IntervalNs, c.bytes) {
		s.netlink.add(x.Time, x.IntervalNs, c.bytes)
	} else {
		s.netlink.exclude(x.Time)
	}
	if c.bpf == nil {
		s.nullBpf++
	} else if b.anom.plausible("ifaces.bpf_"+dir+"_bytes of "+s.key.name, x.Time, x.IntervalNs, *c.bpf) {
		s.bpf.add(x.Time, x.IntervalNs, *c.bpf)
	} else {
		s.bpf.exclude(x.Time)
	}
	if c.wireHdr == nil || c.pkts == nil {
		s.nullW++
		return
	}
	w := *c.wireHdr
	if !s.noL2 && !s.loopback {
		w += EthernetOverheadBytes * (*c.pkts)
	}
	if b.anom.plausible("ifaces.bpf_"+dir+"_wire_bytes of "+s.key.name, x.Time, x.IntervalNs, w) {
		s.wire.add(x.Time, x.IntervalNs, w)
		s.bpfPackets += *c.pkts
		s.bpfPacketsSet = true
	} else {
		s.wire.exclude(x.Time)
	}
}

// scanIfaces picks the receiving and sending interfaces (manifest roles,
// else the largest rx / tx total) and accumulates their series.
func (b *builder) scanIfaces(src source[trace.IfaceRow]) error {
	totals := map[ifaceKey][2]uint64{}
	err := scanTable(b, trace.IfacesFile, src, func(rows []trace.IfaceRow) error {
		for i := range rows {
			x := &rows[i]
			b.rows.add(x.Time, x.IntervalNs)
			b.maps.iface(x)
			k := ifaceKey{x.Ifname, x.Netns}
			t := totals[k]
			totals[k] = [2]uint64{t[0] + x.RxBytes, t[1] + x.TxBytes}
		}
		return nil
	})
	if err != nil || len(totals) == 0 {
		return err
	}
	b.rx.key, b.rx.chosen = b.pickIface(totals, trace.RoleReceiver, 0)
	b.tx.key, b.tx.chosen = b.pickIface(totals, trace.RoleSender, 1)
	b.rx.allBytes, b.tx.allBytes = totals[b.rx.key][0], totals[b.tx.key][1]
	b.rx.noL2, b.tx.noL2 = b.isTUN(b.rx.key), b.isTUN(b.tx.key)
	b.rx.loopback, b.tx.loopback = b.isLoopback(b.rx.key), b.isLoopback(b.tx.key)
	return scanTable(b, trace.IfacesFile, src, func(rows []trace.IfaceRow) error {
		for i := range rows {
			rx := b.rx.chosen && b.rx.key.match(&rows[i])
			tx := b.tx.chosen && b.tx.key.match(&rows[i])
			if rx {
				b.rx.add(b, &rows[i], "rx")
			}
			if tx {
				b.tx.add(b, &rows[i], "tx")
			}
			if rx || tx {
				b.nicLoss.iface(&rows[i])
			}
		}
		return nil
	})
}

// pickIface returns the manifest interface with the role when it has rows,
// else the interface with the largest total (column col: 0 rx, 1 tx;
// lexically first on ties).
func (b *builder) pickIface(totals map[ifaceKey][2]uint64, role string, col int) (ifaceKey, bool) {
	for _, mi := range b.r.Manifest.Interfaces {
		if mi.Role != role {
			continue
		}
		k := ifaceKey{name: mi.Name, netns: mi.Netns}
		for t := range totals {
			if t.name == k.name && (k.netns == 0 || t.netns == k.netns) {
				return k, true
			}
		}
		b.r.note("manifest's " + role + " interface " + mi.Name + " has no ifaces rows")
	}
	dir := []string{"rx", "tx"}[col]
	if b.manifestHasRoles() {
		b.r.note(fmt.Sprintf("no interface has role %s in the manifest (on a two-machine run it is the peer's): no %s interface figures", role, dir))
		return ifaceKey{}, false
	}
	var best ifaceKey
	var bestTotal uint64
	first := true
	for k, t := range totals {
		v := t[col]
		if first || v > bestTotal || (v == bestTotal && (k.name < best.name || (k.name == best.name && k.netns < best.netns))) {
			best, bestTotal, first = k, v, false
		}
	}
	if bestTotal == 0 {
		b.r.note(fmt.Sprintf("no interface marked %s and none with %s_bytes: no %s interface figures", role, dir, dir))
		return ifaceKey{}, false
	}
	b.r.note(fmt.Sprintf("no interface marked %s: using %s (largest %s_bytes total)", role, best.name, dir))
	return best, true
}

// manifestHasRoles reports whether the manifest marks any interface as
// sender or receiver: the run then said which interface does what, and an
// unmarked direction is not on this host.
func (b *builder) manifestHasRoles() bool {
	for _, mi := range b.r.Manifest.Interfaces {
		if mi.Role == trace.RoleSender || mi.Role == trace.RoleReceiver {
			return true
		}
	}
	return false
}

// direction builds one direction's rates.
func (b *builder) direction(name string, side *ifaceSide, app *series, role string) Direction {
	d := Direction{Name: name, Iface: side.key.name, IfaceNetns: side.key.netns, IfaceMTU: b.mtu(side.key), NoL2: side.noL2,
		Loopback: side.loopback && !side.noL2}
	iface := orDash(side.key.name)
	appRate := Rate{Counter: CounterApp, Label: "application (" + role + " payload)",
		Source: "traffic.app_bytes, role " + role}
	if b.r.Bidir() {
		// Every receiving (sending) stream of both ends: both directions,
		// where an interface counter sees one direction's data.
		appRate.Label = "application (" + role + " payload, both directions)"
	}
	if app.empty() {
		appRate.Missing = "no " + role + " traffic rows"
	} else {
		appRate.Points = app.points()
		appRate.W = b.compute(appRate.Points)
	}
	kernel := map[string]string{"rx": "netif_receive_skb", "tx": "net_dev_start_xmit"}[name]
	l2, wireLabel := "incl. L2 headers", fmt.Sprintf("+ %d B/segment", EthernetOverheadBytes)
	wireSrc := fmt.Sprintf("ifaces.bpf_%s_wire_bytes + %d B x ifaces.bpf_%s_packets", name, EthernetOverheadBytes, name)
	if side.noL2 {
		l2, wireLabel = "IP packets: TUN device, no L2 header", "TUN device: no Ethernet framing"
		wireSrc = "ifaces.bpf_" + name + "_wire_bytes (TUN device: no framing added)"
	} else if side.loopback {
		l2, wireLabel = "loopback: IP packets, no L2 header", "loopback: no framing"
		wireSrc = "ifaces.bpf_" + name + "_wire_bytes (loopback: its 14 B Ethernet header, no framing added)"
	}
	d.Rates = []Rate{appRate,
		b.ifaceRate(side, &side.netlink, CounterNetlink, "interface "+name+" (netlink, "+iface+", "+l2+")",
			"ifaces."+name+"_bytes (netlink stats64)", side.rows, 0),
		b.ifaceRate(side, &side.bpf, CounterBPF, "interface "+name+" (bpf, "+iface+")",
			"ifaces.bpf_"+name+"_bytes ("+kernel+")", side.rows, side.nullBpf),
		b.ifaceRate(side, &side.wire, CounterWire, "wire estimate "+name+" ("+iface+", "+wireLabel+")",
			wireSrc, side.rows, side.nullW),
	}
	return d
}

// ifaceRate builds one interface counter's rate; nulls of a BPF column make
// it missing (all rows) or noted (some rows).
func (b *builder) ifaceRate(side *ifaceSide, s *series, counter, label, src string, rows, nulls int) Rate {
	rt := Rate{Counter: counter, Label: label, Source: src}
	switch {
	case !side.chosen || rows == 0:
		rt.Missing = "no ifaces rows"
		return rt
	case nulls == rows:
		rt.Missing = b.r.probesOff("bpf columns null", bpfProgram(src))
		return rt
	}
	rt.Points = s.points()
	rt.W = b.compute(rt.Points)
	return rt
}

// compute returns the windows of points over the run.
func (b *builder) compute(points []Point) *Windows {
	w := ComputeWindows(points, b.r.RunStart, b.r.RunEnd)
	return &w
}

// isTUN reports whether the manifest lists the interface with driver
// "tuntap" (or "tun"): a TUN device, which carries IP packets with no
// Ethernet header or framing. The manifest records no link kind, so a TAP
// device (also "tuntap", with Ethernet headers) would be taken for TUN;
// netprof's own tuntap use (bench --rtt's delay line) is TUN.
func (b *builder) isTUN(k ifaceKey) bool {
	mi := b.manifestIface(k)
	return mi != nil && (mi.Driver == "tuntap" || mi.Driver == "tun")
}

// isLoopback reports whether the interface is the loopback device: the
// manifest's driver "loopback" (recorded from the IFF_LOOPBACK flag when
// ethtool reports no driver, as for lo), else the name "lo" (which every
// network namespace's loopback has; bench's manifest records its driver
// as "device").
func (b *builder) isLoopback(k ifaceKey) bool {
	if mi := b.manifestIface(k); mi != nil && mi.Driver == "loopback" {
		return true
	}
	return k.name == "lo"
}

// mtu returns the manifest MTU of the interface, or 0.
func (b *builder) mtu(k ifaceKey) int {
	if mi := b.manifestIface(k); mi != nil {
		return mi.MTU
	}
	return 0
}

// manifestIface returns the manifest's first entry for the interface
// (same name; same netns unless either is 0), or nil.
func (b *builder) manifestIface(k ifaceKey) *trace.Interface {
	for i, mi := range b.r.Manifest.Interfaces {
		if mi.Name == k.name && (k.netns == 0 || mi.Netns == 0 || mi.Netns == k.netns) {
			return &b.r.Manifest.Interfaces[i]
		}
	}
	return nil
}

// notePartialNulls notes BPF columns null in some (not all) rows of the
// chosen interfaces.
func (b *builder) notePartialNulls() {
	for _, s := range []struct {
		side *ifaceSide
		dir  string
	}{{&b.rx, "rx"}, {&b.tx, "tx"}} {
		if n := s.side.nullBpf; n > 0 && n < s.side.rows {
			b.r.note(fmt.Sprintf("bpf_%s_bytes null in %d of %d intervals of %s: bpf figures cover the others only",
				s.dir, n, s.side.rows, s.side.key.name))
		}
	}
}
