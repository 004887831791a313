// Package drops is the dropped-packets probe: packets and bytes the kernel
// dropped (skb:kfree_skb, attached as tp_btf), counted per CPU and drop
// reason in the kernel and read once per interval into the drops table.
// The reason (enum skb_drop_reason: NO_SOCKET, TCP_CSUM, QDISC_DROP,
// NETFILTER_DROP, SOCKET_RCVBUFF, ...) is passed by Linux >= 5.17; on
// older kernels drops are counted without it.
package drops

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/trace"
)

// Slots is the kernel array's size: reasons at or above Slots-1 share the
// last slot.
const Slots = 512

// ReasonUnknown names drops counted on a kernel whose kfree_skb passes no
// reason (before 5.17).
const ReasonUnknown = "unknown (kernel passes no reason)"

// ReasonOther names the last slot.
const ReasonOther = "other (reason code >= 511 or a subsystem's)"

// Spec returns the loader spec: np_drop where the kernel's kfree_skb
// tracepoint passes the reason (three or more arguments), else
// np_drop_noreason under the same name.
func Spec() (loader.Spec, error) {
	cs, err := bpf.LoadDrops()
	if err != nil {
		return loader.Spec{}, fmt.Errorf("drops spec: %w", err)
	}
	p := loader.Program{Name: bpf.DropsProgNpDrop, Hook: "skb:kfree_skb"}
	if n, err := loader.TracepointArgs("kfree_skb"); err == nil && n < 3 {
		p.Object = bpf.DropsProgNpDropNoreason
	}
	return loader.Spec{Probe: "drops", Collection: cs, Programs: []loader.Program{p}}, nil
}

// Reader reads the probe's per-CPU array.
type Reader struct {
	m      interface{ Lookup(key, value any) error }
	names  map[uint32]string
	reason bool // the kernel passes reasons
}

// NewReader returns a reader over a loaded drops probe, naming reasons
// from the kernel's BTF (enum skb_drop_reason, prefix SKB_DROP_REASON_
// dropped); a code the enum lacks reads as "code N".
func NewReader(l *loader.Loaded) (*Reader, error) {
	m := l.Maps[bpf.DropsMapNpDrops]
	if m == nil {
		return nil, fmt.Errorf("drops reader: map missing from probe %q", l.Probe)
	}
	n, err := loader.TracepointArgs("kfree_skb")
	r := &Reader{m: m, reason: err != nil || n >= 3}
	if r.names, err = kernelReasons(); err != nil && r.reason {
		return nil, err
	}
	return r, nil
}

// kernelReasons reads enum skb_drop_reason from the kernel's BTF.
func kernelReasons() (map[uint32]string, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("drop reasons: kernel btf: %w", err)
	}
	var e *btf.Enum
	if err := spec.TypeByName("skb_drop_reason", &e); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			return map[uint32]string{}, nil
		}
		return nil, fmt.Errorf("drop reasons: %w", err)
	}
	out := make(map[uint32]string, len(e.Values))
	for _, v := range e.Values {
		out[uint32(v.Value)] = strings.TrimPrefix(v.Name, "SKB_DROP_REASON_")
	}
	return out, nil
}

// Name returns the name of reason code (a slot).
func (r *Reader) Name(code uint32) string {
	switch {
	case !r.reason:
		return ReasonUnknown
	case code >= Slots-1:
		return ReasonOther
	}
	if n, ok := r.names[code]; ok {
		return n
	}
	return fmt.Sprintf("code %d", code)
}

// Count is one CPU's drops of one reason: running totals, or deltas.
type Count struct {
	Packets, Bytes uint64
}

// Read returns the running totals [slot][cpu] for every slot with a drop
// on some CPU (nil entries for slots with none).
func (r *Reader) Read() ([][]Count, error) {
	out := make([][]Count, Slots)
	var vals []bpf.DropsNpDropVal
	for slot := range uint32(Slots) {
		if err := r.m.Lookup(slot, &vals); err != nil {
			return nil, fmt.Errorf("read drops slot %d: %w", slot, err)
		}
		var some bool
		for _, v := range vals {
			some = some || v.Packets > 0
		}
		if !some {
			continue
		}
		out[slot] = make([]Count, len(vals))
		for cpu, v := range vals {
			out[slot][cpu] = Count{Packets: v.Packets, Bytes: v.Bytes}
		}
	}
	return out, nil
}

// Sampler writes the drops table: a row per CPU and reason with drops in
// the interval. CPUs never online have none (their counters cannot move).
type Sampler struct {
	r    *Reader
	prev [][]Count
}

// NewSampler returns a sampler reading r.
func NewSampler(r *Reader) *Sampler { return &Sampler{r: r} }

// Name implements measure.Sampler.
func (s *Sampler) Name() string { return "drops" }

// Baseline implements measure.Sampler.
func (s *Sampler) Baseline() error {
	cur, err := s.r.Read()
	s.prev = cur
	return err
}

// Sample implements measure.Sampler.
func (s *Sampler) Sample(iv *trace.Interval, _ int64) error {
	cur, err := s.r.Read()
	if err != nil {
		return err
	}
	for slot, cpus := range cur {
		for cpu, c := range cpus {
			var p Count
			if s.prev[slot] != nil && cpu < len(s.prev[slot]) {
				p = s.prev[slot][cpu]
			}
			if c.Packets <= p.Packets {
				continue
			}
			iv.Drops = append(iv.Drops, trace.DropRow{CPU: int32(cpu), Reason: s.r.Name(uint32(slot)),
				ReasonCode: int32(slot), Packets: c.Packets - p.Packets, Bytes: c.Bytes - p.Bytes})
		}
	}
	s.prev = cur
	return nil
}
