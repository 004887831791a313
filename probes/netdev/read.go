package netdev

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/bpfmap"
)

// DirCounts are one direction's running totals or their change.
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
	// FlowLost and IfaceLost are what this CPU counted for keys the full
	// flow or interface table refused: in no entry of it.
	FlowLost, IfaceLost Counts
}

// Reader reads the probe's maps: each Read returns what changed since the
// previous one.
type Reader struct {
	ifaces, flows, cpus *ebpf.Map
	flush               *flusher // nil: the per-CPU cache is off
	cacheErr            error    // why the cache is off
	// Flow totals at the previous read, by the kernel's key (one map
	// operation per flow and read; keys are decoded once per flow).
	table     *bpfmap.Table[bpf.NetdevNpFlowKey, bpf.NetdevNpFlowVal, flowInfo]
	flowBatch bpfmap.Batch[bpf.NetdevNpFlowKey, bpf.NetdevNpFlowVal]
	prevIf    map[IfaceKey]Counts
	prevCPUs  []CPUCounts
	delta     []FlowDelta // Delta.Flows, reused from read to read
	// rxOn and napiOn: np_nd_rx and np_nd_napi are attached (the per-CPU
	// columns each fills are null without it).
	rxOn, napiOn bool
}

// flowInfo is what the reader keeps per flow beside its totals.
type flowInfo struct {
	key     FlowKey
	decoded bool
	// local and remote are key's addresses as text, made by the first
	// trace row of the flow (Sampler).
	local, remote string
}

// IdleReads is how many consecutive reads a flow's totals must stay the
// same before Read deletes its entry to keep room in the table.
const IdleReads = 3

// NewReader returns a reader over a loaded netdev probe. It returns an error
// if a map is missing (the spec was not this probe's).
//
// It also turns on the programs' per-CPU cache (bpf/netdev_cache.h) once
// np_nd_flush has run on every online CPU: this needs BPF_PROG_TEST_RUN on
// a chosen CPU (Linux >= 5.10), global variables (5.5) and two CPUs this
// process may run on. Otherwise the programs count in the hash maps
// directly, with the same results at a higher cost per packet (CacheErr
// says why).
func NewReader(l *loader.Loaded) (*Reader, error) {
	r := &Reader{
		ifaces: l.Maps[bpf.NetdevMapNpNdIfaces],
		flows:  l.Maps[bpf.NetdevMapNpNdFlows],
		cpus:   l.Maps[bpf.NetdevMapNpNdCpus],
	}
	r.init()
	r.rxOn, r.napiOn = l.IsAttached(bpf.NetdevProgNpNdRx), l.IsAttached(bpf.NetdevProgNpNdNapi)
	if r.ifaces == nil || r.flows == nil || r.cpus == nil {
		return nil, fmt.Errorf("netdev reader: maps missing from probe %q", l.Probe)
	}
	r.cacheErr = r.enableCache(l)
	return r, nil
}

func (r *Reader) init() {
	r.table = bpfmap.NewTable[bpf.NetdevNpFlowKey, bpf.NetdevNpFlowVal, flowInfo](IdleReads)
	r.prevIf = map[IfaceKey]Counts{}
}

func (r *Reader) enableCache(l *loader.Loaded) error {
	prog, on := l.Detached(bpf.NetdevProgNpNdFlush), l.Variables[bpf.NetdevVarNpNdCacheOn]
	if prog == nil || on == nil {
		return errors.New("netdev cache: flush program or switch not loaded")
	}
	f := &flusher{prog: prog}
	if err := f.flushAll(); err != nil {
		return err
	}
	if err := on.Set(uint32(1)); err != nil {
		return fmt.Errorf("netdev cache: turn on: %w", err)
	}
	r.flush = f
	return nil
}

// CacheErr returns nil when the programs' per-CPU cache is on, else why it
// is off.
func (r *Reader) CacheErr() error { return r.cacheErr }

// Read returns what the probe counted since the previous Read (the first
// Read: since the programs were loaded). With the cache on it first
// flushes every CPU's cached counts to the maps; a CPU that stays busy
// keeps its latest counts for the next Read (totals stay exact; they show
// up one read later). Then it deletes the flows whose totals did not change
// for IdleReads reads: a flow that moves again gets a new entry counting
// from zero. The returned Delta's Flows are valid until the next Read.
func (r *Reader) Read() (Delta, error) {
	if r.flush != nil {
		if err := r.flush.flushAll(); err != nil && !errors.Is(err, errBusy) {
			return Delta{}, err
		}
	}
	d := Delta{Ifaces: make(map[IfaceKey]Counts, len(r.prevIf))}
	cur := make(map[IfaceKey]Counts, len(r.prevIf))
	err := bpfmap.ReadAll(r.ifaces, func(ik *bpf.NetdevNpIfaceKey, iv *bpf.NetdevNpIfaceVal) {
		k := IfaceKey{Netns: ik.Netns, Ifindex: ik.Ifindex}
		c := counts((*bpf.NetdevNpFlowVal)(iv))
		cur[k] = c
		d.Ifaces[k] = c.sub(r.prevIf[k])
	})
	if err != nil {
		return Delta{}, fmt.Errorf("read interfaces: %w", err)
	}
	r.prevIf = cur
	if err := r.readFlows(&d); err != nil {
		return Delta{}, err
	}
	var cv []bpf.NetdevNpCpuVal
	if err := r.cpus.Lookup(uint32(0), &cv); err != nil {
		return Delta{}, fmt.Errorf("read cpus: %w", err)
	}
	cpus := make([]CPUCounts, len(cv))
	d.CPUs = make([]CPUCounts, len(cv))
	for i, v := range cv {
		cpus[i] = CPUCounts{
			RxBytes: v.RxBytes, RxPackets: v.RxPackets, RxSkbs: v.RxSkbs,
			NapiPolls: v.NapiPolls, NapiPackets: v.NapiPackets,
			NapiBudgetExhausted: v.NapiBudgetExhausted,
			FlowLost:            counts(&v.FlowLost), IfaceLost: counts(&v.IfaceLost),
		}
		var p CPUCounts
		if i < len(r.prevCPUs) {
			p = r.prevCPUs[i]
		}
		d.CPUs[i] = cpus[i].sub(p)
	}
	r.prevCPUs = cpus
	return d, nil
}

// readFlows reads the shared flow table into d's flows that moved, then
// deletes idle flows.
func (r *Reader) readFlows(d *Delta) error {
	r.delta = r.delta[:0]
	err := r.flowBatch.ReadAll(r.flows, func(fk *bpf.NetdevNpFlowKey, fv *bpf.NetdevNpFlowVal) {
		e, prev, _ := r.table.Seen(fk, *fv)
		if prev == *fv {
			return
		}
		in := &e.X
		if !in.decoded {
			in.key, in.decoded = decodeFlowKey(fk), true
		}
		// A flow whose totals went backwards was deleted and re-created in
		// between: its totals are the delta.
		r.delta = append(r.delta, FlowDelta{Key: in.key, Counts: counts(fv).sub(counts(&prev)), info: in})
	})
	if err != nil {
		return fmt.Errorf("read flows: %w", err)
	}
	d.Flows = r.delta
	n, err := r.table.Collect(r.flows)
	d.FlowsDeleted = uint64(n)
	d.FlowEntries = r.table.Len()
	if err != nil {
		return fmt.Errorf("delete idle flows: %w", err)
	}
	return nil
}

func counts(v *bpf.NetdevNpFlowVal) Counts {
	var c Counts
	c.Rx.add(v.Rx.Bytes, v.Rx.Packets, v.Rx.Skbs, v.Rx.WireBytes)
	c.Tx.add(v.Tx.Bytes, v.Tx.Packets, v.Tx.Skbs, v.Tx.WireBytes)
	return c
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
