package netdev

// Delta is what happened between two snapshots.
type Delta struct {
	// Ifaces holds every interface of cur, with its change since prev.
	Ifaces map[IfaceKey]Counts
	// Flows holds the flows that moved at least one packet, in no order.
	Flows []FlowDelta
	// CPUs is per CPU (index = CPU number).
	CPUs []CPUCounts
	// FlowsDeleted counts idle flows the reader deleted in between (their
	// totals were read before; nothing of them is lost).
	FlowsDeleted uint64
}

// FlowDelta is one flow's change between two snapshots.
type FlowDelta struct {
	Key FlowKey
	Counts
}

// FlowMap returns d.Flows by key.
func (d Delta) FlowMap() map[FlowKey]Counts {
	m := make(map[FlowKey]Counts, len(d.Flows))
	for _, f := range d.Flows {
		m[f.Key] = f.Counts
	}
	return m
}

// Diff returns cur − prev. A key absent from prev counts from zero (it was
// created after prev was read). A key whose totals went backwards was
// deleted and re-created in between: its current totals are the delta.
// prev may be nil (everything counts from zero).
func Diff(prev, cur *Snapshot) Delta {
	if prev == nil {
		prev = &Snapshot{}
	}
	d := Delta{Ifaces: make(map[IfaceKey]Counts, len(cur.Ifaces)), Flows: make([]FlowDelta, 0, len(cur.Flows))}
	for k, c := range cur.Ifaces {
		d.Ifaces[k] = c.sub(prev.Ifaces[k])
	}
	for k, c := range cur.Flows {
		if dc := c.sub(prev.Flows[k]); dc != (Counts{}) {
			d.Flows = append(d.Flows, FlowDelta{Key: decodeFlowKey(&k), Counts: dc})
		}
	}
	d.FlowsDeleted = cur.FlowsDeleted - min(prev.FlowsDeleted, cur.FlowsDeleted)
	d.CPUs = make([]CPUCounts, len(cur.CPUs))
	for i, c := range cur.CPUs {
		var p CPUCounts
		if i < len(prev.CPUs) {
			p = prev.CPUs[i]
		}
		d.CPUs[i] = c.sub(p)
	}
	return d
}

func (c Counts) sub(p Counts) Counts {
	if c.Rx.less(p.Rx) || c.Tx.less(p.Tx) {
		return c
	}
	return Counts{Rx: c.Rx.minus(p.Rx), Tx: c.Tx.minus(p.Tx)}
}

func (c Counts) plus(o Counts) Counts {
	return Counts{Rx: c.Rx.plusDir(o.Rx), Tx: c.Tx.plusDir(o.Tx)}
}

func (d DirCounts) plusDir(o DirCounts) DirCounts {
	return DirCounts{Bytes: d.Bytes + o.Bytes, Packets: d.Packets + o.Packets, Skbs: d.Skbs + o.Skbs, WireBytes: d.WireBytes + o.WireBytes}
}

func (d DirCounts) less(p DirCounts) bool {
	return d.Bytes < p.Bytes || d.Packets < p.Packets || d.Skbs < p.Skbs || d.WireBytes < p.WireBytes
}

func (d DirCounts) minus(p DirCounts) DirCounts {
	return DirCounts{Bytes: d.Bytes - p.Bytes, Packets: d.Packets - p.Packets, Skbs: d.Skbs - p.Skbs, WireBytes: d.WireBytes - p.WireBytes}
}

// CPU counters only grow while the probe is loaded.
func (c CPUCounts) sub(p CPUCounts) CPUCounts {
	return CPUCounts{
		RxBytes: c.RxBytes - p.RxBytes, RxPackets: c.RxPackets - p.RxPackets, RxSkbs: c.RxSkbs - p.RxSkbs,
		NapiPolls: c.NapiPolls - p.NapiPolls, NapiPackets: c.NapiPackets - p.NapiPackets,
		NapiBudgetExhausted: c.NapiBudgetExhausted - p.NapiBudgetExhausted,
		FlowLost:            c.FlowLost.sub(p.FlowLost), IfaceLost: c.IfaceLost.sub(p.IfaceLost),
	}
}
