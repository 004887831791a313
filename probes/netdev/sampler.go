package netdev

import (
	"slices"

	"github.com/netprof/netprof/internal/cpulist"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/trace"
)

// Scope names the interfaces a run cares about: it returns the interface's
// name and true for those, false for the rest of the host.
type Scope func(netns uint64, ifindex uint32) (name string, ok bool)

// Sampler turns the probe's maps into trace rows each interval: it fills
// the bpf_* columns of interface rows already in the interval (made by the
// netlink sampler), adds one flow row per flow on an in-scope interface
// that moved data, fills per-CPU receive and NAPI columns, and adds a
// "map:netdev" probes row with the flow table's occupancy, the idle flows
// deleted, and the bytes and packets of flows the full table refused.
//
// Per-CPU columns come from a map with a value for every possible CPU;
// only CPUs online at some point of the run get them (see online).
type Sampler struct {
	r     *Reader
	scope Scope
	// online follows the machine's online CPUs: a CPU gets cpus rows once
	// it was online at a read of the list or its counters moved.
	online *cpulist.Seen
}

// NewSampler returns a sampler reading r; scope filters flows (nil keeps all).
func NewSampler(r *Reader, scope Scope) *Sampler {
	return &Sampler{r: r, scope: scope, online: cpulist.NewSeen()}
}

// Name implements measure.Sampler.
func (s *Sampler) Name() string { return "netdev" }

// Baseline implements measure.Sampler.
func (s *Sampler) Baseline() error {
	_ = s.online.Update() // unreadable: every CPU keeps its rows
	_, err := s.r.Read()
	return err
}

// Sample implements measure.Sampler.
func (s *Sampler) Sample(iv *trace.Interval, _ int64) error {
	_ = s.online.Update()
	d, err := s.r.Read()
	if err != nil {
		return err
	}
	for i := range iv.Ifaces {
		row := &iv.Ifaces[i]
		c := d.Ifaces[IfaceKey{Netns: row.Netns, Ifindex: uint32(row.Ifindex)}]
		row.BpfRxBytes, row.BpfRxPackets, row.BpfRxSkbs = ptr(c.Rx.Bytes), ptr(c.Rx.Packets), ptr(c.Rx.Skbs)
		row.BpfTxBytes, row.BpfTxPackets, row.BpfTxSkbs = ptr(c.Tx.Bytes), ptr(c.Tx.Packets), ptr(c.Tx.Skbs)
		row.BpfRxWireBytes, row.BpfTxWireBytes = ptr(c.Rx.WireBytes), ptr(c.Tx.WireBytes)
	}
	iv.Flows = slices.Grow(iv.Flows, len(d.Flows))
	for i := range d.Flows {
		f := &d.Flows[i]
		name, ok := "", true
		if s.scope != nil {
			name, ok = s.scope(f.Key.Netns, f.Key.Ifindex)
		}
		if ok {
			iv.Flows = append(iv.Flows, flowRow(f, name))
		}
	}
	var lost, ifaceLost Counts
	for cpu, c := range d.CPUs {
		if s.online.Keep(cpu, c != (CPUCounts{})) {
			row := measure.CPURow(iv, cpu)
			if s.r.rxOn {
				row.RxPackets, row.RxBytes = ptr(c.RxPackets), ptr(c.RxBytes)
			}
			if s.r.napiOn {
				row.NapiPolls, row.NapiPackets, row.NapiBudgetExhausted = ptr(c.NapiPolls), ptr(c.NapiPackets), ptr(c.NapiBudgetExhausted)
			}
		}
		lost = lost.plus(c.FlowLost)
		ifaceLost = ifaceLost.plus(c.IfaceLost)
	}
	iv.Probes = append(iv.Probes, trace.ProbeRow{
		Program: "np_nd_flows", Hook: "map:netdev",
		MapUpdateFailures: lost.Rx.Skbs + lost.Tx.Skbs + ifaceLost.Rx.Skbs + ifaceLost.Tx.Skbs,
		MapEntries:        ptr(uint64(d.FlowEntries)),
		MapDeleted:        ptr(d.FlowsDeleted),
		MapLostBytes:      ptr(lost.Rx.Bytes + lost.Tx.Bytes),
		MapLostPackets:    ptr(lost.Rx.Packets + lost.Tx.Packets),
	})
	return nil
}

// flowRow returns f's trace row. Its addresses' text is made once per flow
// and kept with the reader's memory of it.
func flowRow(f *FlowDelta, ifname string) trace.FlowRow {
	k, c, in := &f.Key, &f.Counts, f.info
	if in.local == "" {
		in.local, in.remote = k.Local.Addr().String(), k.Remote.Addr().String()
	}
	return trace.FlowRow{
		Netns: k.Netns, Ifindex: int32(k.Ifindex), Ifname: ifname,
		Family: k.Family, Proto: k.Proto,
		SrcAddr: in.local, SrcPort: k.Local.Port(),
		DstAddr: in.remote, DstPort: k.Remote.Port(),
		RxBytes: c.Rx.Bytes, RxPackets: c.Rx.Packets, RxSkbs: c.Rx.Skbs, RxWireBytes: c.Rx.WireBytes,
		TxBytes: c.Tx.Bytes, TxPackets: c.Tx.Packets, TxSkbs: c.Tx.Skbs, TxWireBytes: c.Tx.WireBytes,
	}
}

func ptr[T any](v T) *T { return &v }
