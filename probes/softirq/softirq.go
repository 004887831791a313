// Package softirq is the per-CPU softirq probe: time spent in and number of
// NET_RX and NET_TX softirqs, from irq:softirq_entry/exit attached as tp_btf
// (Linux >= 5.5 with BTF).
//
// Time is apportioned to the interval it ran in: Read adds the elapsed part
// of a softirq still running at read time, and the next read counts only
// the rest, so no interval gets more softirq time than its own length
// (beyond read skew, which Diff clamps).
package softirq

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
)

// Spec returns the loader spec of the probe. The exit program comes first
// so the loader attaches it before the entry program: an entry recorded
// while softirq_exit was not yet attached would leave a start timestamp no
// exit clears, and the CPU would read as busy in that softirq until its
// next one (for the rare NET_TX, possibly the whole run). In this order an
// exit seen before any entry is simply ignored.
func Spec() (loader.Spec, error) {
	cs, err := bpf.LoadSoftirq()
	if err != nil {
		return loader.Spec{}, fmt.Errorf("softirq spec: %w", err)
	}
	return loader.Spec{
		Probe:      "softirq",
		Collection: cs,
		Programs: []loader.Program{
			{Name: bpf.SoftirqProgNpSiExit, Hook: "irq:softirq_exit"},
			{Name: bpf.SoftirqProgNpSiEntry, Hook: "irq:softirq_entry"},
		},
	}, nil
}

// CPU holds one CPU's NET_RX/NET_TX softirq running totals (nanoseconds and
// completed-softirq counts), or deltas after Diff.
type CPU struct {
	NetRxNs, NetRxCount uint64
	NetTxNs, NetTxCount uint64
}

// Reader reads the probe's per-CPU map.
type Reader struct {
	m interface{ Lookup(key, value any) error }
	// live is false when softirq_exit is not attached: then nothing clears
	// a start timestamp, and the "running" part would grow without bound.
	live bool
	// clock returns CLOCK_MONOTONIC in ns (replaced in tests).
	clock func() (uint64, error)
}

// NewReader returns a reader over a loaded softirq probe. It returns an
// error if the probe's map is missing. When softirq_exit is not attached,
// Read adds no running time (nothing would ever clear a start).
func NewReader(l *loader.Loaded) (*Reader, error) {
	m := l.Maps[bpf.SoftirqMapNpSiCpus]
	if m == nil {
		return nil, fmt.Errorf("softirq reader: map missing from probe %q", l.Probe)
	}
	r := &Reader{m: m, clock: monotonic}
	for _, st := range l.Status {
		if st.Name == bpf.SoftirqProgNpSiExit {
			r.live = st.Attached
		}
	}
	return r, nil
}

func monotonic() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime: %w", err)
	}
	return uint64(ts.Nano()), nil
}

// Read returns running totals per CPU (index = CPU number, every possible
// CPU), including the elapsed part of softirqs running at this instant
// (measured against CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns).
//
// The clock is read before the map: a softirq that exits between the two
// reads then contributes at most its true length, so successive reads
// never go backwards (reading the clock after the map could count up to
// the read's latency twice, which Diff would clamp but not undo).
func (r *Reader) Read() ([]CPU, error) {
	now, err := r.clock()
	if err != nil {
		return nil, err
	}
	var vals []bpf.SoftirqNpSoftirqVal
	if err := r.m.Lookup(uint32(0), &vals); err != nil {
		return nil, fmt.Errorf("read softirq map: %w", err)
	}
	if !r.live {
		now = 0 // no running parts: see Reader.live
	}
	out := make([]CPU, len(vals))
	for i, v := range vals {
		out[i] = CPU{NetRxNs: v.NetRxNs + running(v.NetRxStart, now), NetRxCount: v.NetRxCount,
			NetTxNs: v.NetTxNs + running(v.NetTxStart, now), NetTxCount: v.NetTxCount}
	}
	return out, nil
}

// running returns how long a softirq that started at start has run at now,
// or 0 when none is running (start 0) or it started after now.
func running(start, now uint64) uint64 {
	if start == 0 || start > now {
		return 0
	}
	return now - start
}

// Diff returns cur − prev per CPU with times clamped to [0, intervalNs]
// (a read racing a softirq exit can otherwise count a few µs twice). prev
// may be nil or shorter than cur.
func Diff(prev, cur []CPU, intervalNs int64) []CPU {
	out := make([]CPU, len(cur))
	for i, c := range cur {
		var p CPU
		if i < len(prev) {
			p = prev[i]
		}
		out[i] = CPU{
			NetRxNs: clamp(c.NetRxNs, p.NetRxNs, intervalNs), NetRxCount: sub(c.NetRxCount, p.NetRxCount),
			NetTxNs: clamp(c.NetTxNs, p.NetTxNs, intervalNs), NetTxCount: sub(c.NetTxCount, p.NetTxCount),
		}
	}
	return out
}

func sub(c, p uint64) uint64 {
	if c < p {
		return 0
	}
	return c - p
}

func clamp(c, p uint64, max int64) uint64 {
	d := sub(c, p)
	if max > 0 && d > uint64(max) {
		return uint64(max)
	}
	return d
}
