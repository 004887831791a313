package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/netprof/netprof/trace"
)

// DropReason is the kernel's drops of one reason over the run (drops
// table: skb:kfree_skb), every CPU.
type DropReason struct {
	Reason         string
	Packets, Bytes uint64
	// CPUs are the CPUs that dropped them, most first.
	CPUs []int
}

// addDrops accumulates the drops table.
func (b *builder) addDrops(rows []trace.DropRow) error {
	if b.drops == nil {
		b.drops = map[string]*dropAcc{}
	}
	for _, d := range rows {
		a := b.drops[d.Reason]
		if a == nil {
			a = &dropAcc{cpus: map[int]uint64{}}
			b.drops[d.Reason] = a
		}
		a.packets += d.Packets
		a.bytes += d.Bytes
		a.cpus[int(d.CPU)] += d.Packets
	}
	return nil
}

type dropAcc struct {
	packets, bytes uint64
	cpus           map[int]uint64
}

// finishDrops sets Report.Drops, or says why there are none.
func (b *builder) finishDrops() {
	r := b.r
	if !r.programAttached("np_drop") {
		why, off := r.programDown("np_drop")
		if !off {
			why = "no drops probe in this trace"
		}
		r.reasons[figDrops] = "np_drop not attached: " + why
		return
	}
	r.Drops = []DropReason{}
	for reason, a := range b.drops {
		d := DropReason{Reason: reason, Packets: a.packets, Bytes: a.bytes}
		for c := range a.cpus {
			d.CPUs = append(d.CPUs, c)
		}
		slices.SortFunc(d.CPUs, func(x, y int) int { return int(a.cpus[y]) - int(a.cpus[x]) })
		r.Drops = append(r.Drops, d)
	}
	slices.SortFunc(r.Drops, func(x, y DropReason) int {
		if x.Packets != y.Packets {
			return map[bool]int{true: -1, false: 1}[x.Packets > y.Packets]
		}
		return strings.Compare(x.Reason, y.Reason)
	})
}

const figDrops = "drops"

// DropsLine says where packets were lost: the top reasons with counts,
// or n/a with the reason.
func (r *Report) DropsLine() string {
	if r.Drops == nil {
		return na(r.reason(figDrops, "drops probe did not run"))
	}
	if len(r.Drops) == 0 {
		return "none (skb:kfree_skb, whole run)"
	}
	var total uint64
	parts := make([]string, 0, 4)
	for i, d := range r.Drops {
		total += d.Packets
		if i < 4 {
			parts = append(parts, fmt.Sprintf("%s %d", d.Reason, d.Packets))
		}
	}
	s := fmt.Sprintf("%d packets (skb:kfree_skb, whole run, by reason): %s", total, strings.Join(parts, ", "))
	if len(r.Drops) > 4 {
		s += fmt.Sprintf(" and %d more reasons", len(r.Drops)-4)
	}
	return s
}
