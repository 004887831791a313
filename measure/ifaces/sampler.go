package ifaces

import (
	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/trace"
)

// LinkSampler is the measure.Sampler that writes one ifaces row per member
// of the tracked groups each interval, from netlink stats64 (the delta over
// the interval, by ifindex, so a rename does not break the series). Run
// netdev's Sampler after it (with Tracker.Scope) to fill the BPF columns
// and flows, then FoldSampler to apply the counting rule.
type LinkSampler struct {
	T    *Tracker
	prev map[int]linkstats.Stats
}

// Name implements measure.Sampler.
func (s *LinkSampler) Name() string { return "netlink-ifaces" }

// Baseline implements measure.Sampler.
func (s *LinkSampler) Baseline() error {
	if _, err := s.T.Refresh(); err != nil {
		return err
	}
	s.prev = map[int]linkstats.Stats{}
	for _, g := range s.T.Groups() {
		for _, m := range g.Members {
			s.prev[m.Index] = m.Stats
		}
	}
	return nil
}

// Sample implements measure.Sampler. A member seen for the first time (it
// joined a group mid-run) is baselined and counts from the next interval;
// a member whose counters went backwards (re-created) counts from zero.
func (s *LinkSampler) Sample(iv *trace.Interval, _ int64) error {
	if _, err := s.T.Refresh(); err != nil {
		return err
	}
	next := map[int]linkstats.Stats{}
	for _, g := range s.T.Groups() {
		for _, m := range g.Members {
			next[m.Index] = m.Stats
			p, seen := s.prev[m.Index]
			if !seen {
				p = m.Stats
			}
			d, _ := m.Stats.Sub(p)
			iv.Ifaces = append(iv.Ifaces, d.Row(s.T.Netns(), m.Name, m.Index, m.Driver))
		}
	}
	s.prev = next
	return nil
}

// FoldSampler applies the counting rule to the interval's rows: each
// counted interface's row gets the BPF receive counts of its RxFrom members
// and the transmit counts of its TxFrom members; flows seen on members are
// merged onto the counted interface the same way; rows of members that are
// not counted are removed, so summing the ifaces or flows table counts
// every byte once. Rows of other namespaces or interfaces are left alone.
type FoldSampler struct{ T *Tracker }

// Name implements measure.Sampler.
func (s *FoldSampler) Name() string { return "fold-ifaces" }

// Baseline implements measure.Sampler.
func (s *FoldSampler) Baseline() error { return nil }

// Sample implements measure.Sampler.
func (s *FoldSampler) Sample(iv *trace.Interval, _ int64) error {
	netns := s.T.Netns()
	rows := map[int]trace.IfaceRow{}
	for _, r := range iv.Ifaces {
		if r.Netns == netns {
			rows[int(r.Ifindex)] = r
		}
	}
	var ifaces []trace.IfaceRow
	for _, r := range iv.Ifaces {
		if r.Netns != netns || s.T.counted(int(r.Ifindex)) == nil {
			if r.Netns != netns || !s.T.isMember(int(r.Ifindex)) {
				ifaces = append(ifaces, r)
			}
			continue
		}
		c := s.T.counted(int(r.Ifindex))
		if r.BpfRxBytes != nil || r.BpfTxBytes != nil {
			foldBPF(&r, c, rows)
		}
		ifaces = append(ifaces, r)
	}
	iv.Ifaces = ifaces
	iv.Flows = s.foldFlows(iv.Flows)
	return nil
}

func foldBPF(r *trace.IfaceRow, c *Count, rows map[int]trace.IfaceRow) {
	var rb, rp, rs, rw, tb, tp, ts, tw uint64
	for _, i := range c.RxFrom {
		m := rows[i]
		rb, rp, rs, rw = rb+val(m.BpfRxBytes), rp+val(m.BpfRxPackets), rs+val(m.BpfRxSkbs), rw+val(m.BpfRxWireBytes)
	}
	for _, i := range c.TxFrom {
		m := rows[i]
		tb, tp, ts, tw = tb+val(m.BpfTxBytes), tp+val(m.BpfTxPackets), ts+val(m.BpfTxSkbs), tw+val(m.BpfTxWireBytes)
	}
	r.BpfRxBytes, r.BpfRxPackets, r.BpfRxSkbs, r.BpfRxWireBytes = &rb, &rp, &rs, &rw
	r.BpfTxBytes, r.BpfTxPackets, r.BpfTxSkbs, r.BpfTxWireBytes = &tb, &tp, &ts, &tw
}

func val(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

type flowKey struct {
	ifindex          int
	family, proto    uint8
	src, dst         string
	srcPort, dstPort uint16
}

// foldFlows merges member flow rows onto counted interfaces.
func (s *FoldSampler) foldFlows(flows []trace.FlowRow) []trace.FlowRow {
	netns := s.T.Netns()
	var out []trace.FlowRow
	merged := map[flowKey]int{} // key -> index in out
	for _, f := range flows {
		if f.Netns != netns || !s.T.isMember(int(f.Ifindex)) {
			out = append(out, f)
			continue
		}
		for _, g := range s.T.Groups() {
			for ci := range g.Counted {
				c := &g.Counted[ci]
				rx, tx := contains(c.RxFrom, int(f.Ifindex)), contains(c.TxFrom, int(f.Ifindex))
				if !rx && !tx {
					continue
				}
				k := flowKey{c.Index, f.Family, f.Proto, f.SrcAddr, f.DstAddr, f.SrcPort, f.DstPort}
				i, ok := merged[k]
				if !ok {
					row := f
					row.Ifindex, row.Ifname = int32(c.Index), c.Name
					row.RxBytes, row.RxPackets, row.RxSkbs, row.RxWireBytes = 0, 0, 0, 0
					row.TxBytes, row.TxPackets, row.TxSkbs, row.TxWireBytes = 0, 0, 0, 0
					out = append(out, row)
					i = len(out) - 1
					merged[k] = i
				}
				if rx {
					out[i].RxBytes += f.RxBytes
					out[i].RxPackets += f.RxPackets
					out[i].RxSkbs += f.RxSkbs
					out[i].RxWireBytes += f.RxWireBytes
				}
				if tx {
					out[i].TxBytes += f.TxBytes
					out[i].TxPackets += f.TxPackets
					out[i].TxSkbs += f.TxSkbs
					out[i].TxWireBytes += f.TxWireBytes
				}
			}
		}
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// counted returns the Count of ifindex if it is a counted interface.
func (t *Tracker) counted(idx int) *Count {
	for gi := range t.groups {
		for ci := range t.groups[gi].Counted {
			if t.groups[gi].Counted[ci].Index == idx {
				return &t.groups[gi].Counted[ci]
			}
		}
	}
	return nil
}

func (t *Tracker) isMember(idx int) bool {
	_, ok := t.Member(idx)
	return ok
}
