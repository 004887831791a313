package netdev

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
)

// DirCounts are one direction's running totals (or deltas, after Diff).
type DirCounts struct {
	Bytes     uint64 // L2 frame bytes (skb->len + MAC header)
	Packets   uint64 // segments
	Skbs      uint64 // skbs as the stack handled them
	WireBytes uint64 // Bytes + headers repeated per extra segment
}

// Counts are receive and transmit totals of one interface or flow.
type Counts struct{ Rx, Tx DirCounts }

// IfaceKey identifies an interface host-wide.
type IfaceKey struct {
	Netns   uint64 // network namespace inode (net->ns.inum)
	Ifindex uint32
}

// FlowKey identifies a flow on one interface of one namespace, oriented
// from the local end to the remote end in that namespace.
type FlowKey struct {
	IfaceKey
	Family uint8 // 4 or 6
	Proto  uint8 // IP protocol number
	Local  netip.AddrPort
	Remote netip.AddrPort
}

// CPUCounts are one CPU's running totals.
type CPUCounts struct {
	RxBytes, RxPackets, RxSkbs                  uint64 // netif_receive_skb on this CPU
	NapiPolls, NapiPackets, NapiBudgetExhausted uint64 // napi_poll on this CPU
	FlowUpdateFail, IfaceUpdateFail             uint64 // map inserts that failed
}

// Snapshot is one read of every map: running totals summed over CPUs for
// interfaces and flows, per CPU (index = CPU number) for CPUs.
type Snapshot struct {
	Ifaces map[IfaceKey]Counts
	Flows  map[FlowKey]Counts
	CPUs   []CPUCounts
}

// Reader reads the probe's maps.
type Reader struct {
	ifaces, flows, cpus *ebpf.Map
}

// NewReader returns a reader over a loaded netdev probe. It returns an error
// if a map is missing (the spec was not this probe's).
func NewReader(l *loader.Loaded) (*Reader, error) {
	r := &Reader{
		ifaces: l.Maps[bpf.NetdevMapNpNdIfaces],
		flows:  l.Maps[bpf.NetdevMapNpNdFlows],
		cpus:   l.Maps[bpf.NetdevMapNpNdCpus],
	}
	if r.ifaces == nil || r.flows == nil || r.cpus == nil {
		return nil, fmt.Errorf("netdev reader: maps missing from probe %q", l.Probe)
	}
	return r, nil
}

// Read returns the current running totals.
func (r *Reader) Read() (*Snapshot, error) {
	s := &Snapshot{Ifaces: map[IfaceKey]Counts{}, Flows: map[FlowKey]Counts{}}
	var ik bpf.NetdevNpIfaceKey
	var iv []bpf.NetdevNpIfaceVal
	it := r.ifaces.Iterate()
	for it.Next(&ik, &iv) {
		var c Counts
		for _, v := range iv {
			c.Rx.add(v.Rx.Bytes, v.Rx.Packets, v.Rx.Skbs, v.Rx.WireBytes)
			c.Tx.add(v.Tx.Bytes, v.Tx.Packets, v.Tx.Skbs, v.Tx.WireBytes)
		}
		s.Ifaces[IfaceKey{Netns: ik.Netns, Ifindex: ik.Ifindex}] = c
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read interfaces: %w", err)
	}
	var fk bpf.NetdevNpFlowKey
	var fv []bpf.NetdevNpFlowVal
	it = r.flows.Iterate()
	for it.Next(&fk, &fv) {
		var c Counts
		for _, v := range fv {
			c.Rx.add(v.Rx.Bytes, v.Rx.Packets, v.Rx.Skbs, v.Rx.WireBytes)
			c.Tx.add(v.Tx.Bytes, v.Tx.Packets, v.Tx.Skbs, v.Tx.WireBytes)
		}
		s.Flows[decodeFlowKey(&fk)] = c
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read flows: %w", err)
	}
	var cv []bpf.NetdevNpCpuVal
	if err := r.cpus.Lookup(uint32(0), &cv); err != nil {
		return nil, fmt.Errorf("read cpus: %w", err)
	}
	for _, v := range cv {
		s.CPUs = append(s.CPUs, CPUCounts{
			RxBytes: v.RxBytes, RxPackets: v.RxPackets, RxSkbs: v.RxSkbs,
			NapiPolls: v.NapiPolls, NapiPackets: v.NapiPackets,
			NapiBudgetExhausted: v.NapiBudgetExhausted,
			FlowUpdateFail:      v.FlowUpdateFail, IfaceUpdateFail: v.IfaceUpdateFail,
		})
	}
	return s, nil
}

func (d *DirCounts) add(bytes, packets, skbs, wire uint64) {
	d.Bytes += bytes
	d.Packets += packets
	d.Skbs += skbs
	d.WireBytes += wire
}

func decodeFlowKey(k *bpf.NetdevNpFlowKey) FlowKey {
	fk := FlowKey{
		IfaceKey: IfaceKey{Netns: k.Netns, Ifindex: k.Ifindex},
		Family:   k.Family,
		Proto:    k.Proto,
	}
	fk.Local = netip.AddrPortFrom(decodeAddr(k.Family, k.Laddr), k.Lport)
	fk.Remote = netip.AddrPortFrom(decodeAddr(k.Family, k.Raddr), k.Rport)
	return fk
}

func decodeAddr(family uint8, b [16]uint8) netip.Addr {
	if family == 4 {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16(b)
}
