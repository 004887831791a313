package netdev

// Delta is what happened between two reads.
type Delta struct {
	// Ifaces holds every interface in the table, with its change since
	// the previous read.
	Ifaces map[IfaceKey]Counts
	// Flows holds the flows that moved at least one packet, in no order.
	Flows []FlowDelta
	// CPUs is per CPU (index = CPU number).
	CPUs []CPUCounts
	// FlowsDeleted counts idle flows the read deleted from the table
	// (their totals were read before; nothing of them is lost).
	FlowsDeleted uint64
	// FlowEntries is the number of flows in the table after the read.
	FlowEntries int
}

// FlowDelta is one flow's change between two reads.
type FlowDelta struct {
	Key FlowKey
	Counts
	info *flowInfo // the reader's memory of the flow
}

// FlowMap returns d.Flows by key.
func (d Delta) FlowMap() map[FlowKey]Counts {
	m := make(map[FlowKey]Counts, len(d.Flows))
	for _, f := range d.Flows {
		m[f.Key] = f.Counts
	}
	return m
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
