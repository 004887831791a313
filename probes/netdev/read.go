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
	// FlowLost and IfaceLost are what this CPU counted for keys the full
	// flow or interface table refused: in no entry of it.
	FlowLost, IfaceLost Counts
}

// Snapshot is one read of every map: running totals of interfaces and
// flows, per CPU (index = CPU number) for CPUs.
type Snapshot struct {
	Ifaces map[IfaceKey]Counts
	// Flows are keyed by the kernel's key as read (decoding it costs more
	// than the rest of a read with thousands of flows; Diff decodes the
	// keys of the flows that moved).
	Flows map[bpf.NetdevNpFlowKey]Counts
	CPUs  []CPUCounts
	// FlowsDeleted counts idle flows Read deleted from the table so far
	// (running total; they are not in Flows).
	FlowsDeleted uint64
}

// Reader reads the probe's maps.
type Reader struct {
	ifaces, flows, cpus *ebpf.Map
	flush               *flusher // nil: the per-CPU cache is off
	cacheErr            error    // why the cache is off
	gc                  *bpfmap.Idle[bpf.NetdevNpFlowKey]
	deleted             uint64
	lastFlows           int // flows in the previous read: sizes the next one's map
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
		gc:     bpfmap.NewIdle[bpf.NetdevNpFlowKey](IdleReads),
	}
	if r.ifaces == nil || r.flows == nil || r.cpus == nil {
		return nil, fmt.Errorf("netdev reader: maps missing from probe %q", l.Probe)
	}
	r.cacheErr = r.enableCache(l)
	return r, nil
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

// Read returns the current running totals. With the cache on it first
// flushes every CPU's cached counts to the maps; a CPU that stays busy
// keeps its latest counts for the next Read (totals stay exact; they show
// up one read later). Then it deletes the flows whose totals did not change
// for IdleReads reads and leaves them out of the snapshot: a flow that
// moves again gets a new entry counting from zero, which Diff takes as new.
func (r *Reader) Read() (*Snapshot, error) {
	if r.flush != nil {
		if err := r.flush.flushAll(); err != nil && !errors.Is(err, errBusy) {
			return nil, err
		}
	}
	s := &Snapshot{Ifaces: map[IfaceKey]Counts{}, Flows: make(map[bpf.NetdevNpFlowKey]Counts, r.lastFlows)}
	err := bpfmap.ReadAll(r.ifaces, func(ik *bpf.NetdevNpIfaceKey, iv *bpf.NetdevNpIfaceVal) {
		s.Ifaces[IfaceKey{Netns: ik.Netns, Ifindex: ik.Ifindex}] = counts((*bpf.NetdevNpFlowVal)(iv))
	})
	if err != nil {
		return nil, fmt.Errorf("read interfaces: %w", err)
	}
	if err := r.readFlows(s); err != nil {
		return nil, err
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
			FlowLost:            counts(&v.FlowLost), IfaceLost: counts(&v.IfaceLost),
		})
	}
	return s, nil
}

// readFlows reads the shared flow table into s, then deletes idle flows.
func (r *Reader) readFlows(s *Snapshot) error {
	err := bpfmap.ReadAll(r.flows, func(fk *bpf.NetdevNpFlowKey, fv *bpf.NetdevNpFlowVal) {
		s.Flows[*fk] = counts(fv)
		r.gc.Seen(*fk, fv.Rx.Skbs^fv.Tx.Skbs<<32^fv.Rx.Bytes^fv.Tx.Bytes)
	})
	if err != nil {
		return fmt.Errorf("read flows: %w", err)
	}
	r.lastFlows = len(s.Flows)
	gone, err := r.gc.Collect(r.flows)
	r.deleted += uint64(len(gone))
	s.FlowsDeleted = r.deleted
	for i := range gone {
		delete(s.Flows, gone[i])
	}
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
