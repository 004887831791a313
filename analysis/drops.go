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
	// Class is DropBenign for the reasons of benignDrops, else DropLost;
	// Why says what a benign reason means ("" for lost ones).
	Class, Why string
}

// Drop classes (DropReason.Class).
const (
	// DropLost: data that did not get through — a full queue, ring or
	// buffer, a filter, no socket, a bad or unexpected packet, or a drop
	// the kernel gave no reason for (NOT_SPECIFIED; also "unknown" before
	// 5.17 and a subsystem's reasons): every reason not known to be benign.
	DropLost = "lost"
	// DropBenign: TCP discarding a copy of what it already has (a
	// retransmit of data that was not lost, an old ACK) and sockets freeing
	// what is left at teardown: nothing was lost on the path or in the host.
	DropBenign = "benign"
)

// benignDrops are the benign drop reasons (enum skb_drop_reason without
// its SKB_DROP_REASON_ prefix), with what each means, after the kernel's
// own comments (include/net/dropreason-core.h).
var benignDrops = map[string]string{
	// Duplicates: the data or ACK had already arrived.
	"TCP_OLD_DATA":         "data already received (a spurious retransmit)",
	"TCP_OLD_SEQUENCE":     "old sequence number: a duplicate packet",
	"TCP_OFOMERGE":         "data already in the out-of-order queue",
	"TCP_OFO_DROP":         "out-of-order data already in the receive queue",
	"TCP_OLD_ACK":          "an old ACK, in window",
	"TCP_TOO_OLD_ACK":      "a too old ACK",
	"TCP_RFC7323_PAWS_ACK": "PAWS: an old ACK",
	"DUP_FRAG":             "a duplicate IP fragment",
	// Teardown: what a closing socket (or a queue emptied) still held.
	"QUEUE_PURGE":         "bulk free of a queue being emptied (a socket closing)",
	"SOCKET_CLOSE":        "the socket was closed",
	"TCP_CLOSE":           "the TCP socket was in CLOSE state",
	"TCP_ABORT_ON_DATA":   "data after the application closed the socket (reset)",
	"TCP_RFC7323_TW_PAWS": "PAWS on a TIME_WAIT socket",
	"UNIX_DISCONNECT":     "a unix socket's queue purged at disconnect",
	"UNIX_SKIP_OOB":       "a unix socket's out-of-band byte skipped by recv",
}

// dropClass returns a reason's class and, for a benign one, its meaning.
func dropClass(reason string) (class, why string) {
	if w, ok := benignDrops[reason]; ok {
		return DropBenign, w
	}
	return DropLost, ""
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
		d.Class, d.Why = dropClass(reason)
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

// DropTotals are the packets dropped over the run of each class.
func (r *Report) DropTotals() (lost, benign uint64) {
	for _, d := range r.Drops {
		if d.Class == DropBenign {
			benign += d.Packets
		} else {
			lost += d.Packets
		}
	}
	return lost, benign
}

// dropsShown is how many reasons of a class DropsLine names.
const dropsShown = 4

// DropsLine says where packets were lost and what was dropped without a
// loss: the packets of each class with their top reasons, or n/a with the
// reason.
func (r *Report) DropsLine() string {
	if r.Drops == nil {
		return na(r.reason(figDrops, "drops probe did not run"))
	}
	if len(r.Drops) == 0 {
		return "none (skb:kfree_skb, whole run)"
	}
	lost, benign := r.DropTotals()
	s := fmt.Sprintf("%d lost", lost)
	if l := dropReasons(r.Drops, DropLost); l != "" {
		s += " (" + l + ")"
	}
	if benign > 0 {
		s += fmt.Sprintf("; %d benign TCP/socket discards of duplicates or at teardown (%s)", benign, dropReasons(r.Drops, DropBenign))
	}
	return s + " (packets, skb:kfree_skb, whole run, by reason)"
}

// dropReasons lists the top reasons of class with their packets.
func dropReasons(drops []DropReason, class string) string {
	var parts []string
	n := 0
	for _, d := range drops {
		if d.Class != class {
			continue
		}
		if n++; n <= dropsShown {
			parts = append(parts, fmt.Sprintf("%s %d", d.Reason, d.Packets))
		}
	}
	if more := n - dropsShown; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more %s", more, oneMany(more, "reason", "reasons")))
	}
	return strings.Join(parts, ", ")
}

// writeDrops writes the drops line and, when there were drops, every
// reason with its class, packets, bytes and CPUs.
func (r *Report) writeDrops(p *printer) {
	p.line("drops (skb:kfree_skb, every CPU, whole run): %s", r.DropsLine())
	if len(r.Drops) == 0 {
		return
	}
	rows := [][]string{{"  reason", "class", "packets", "bytes", "CPUs (most first)", "meaning (benign)"}}
	for _, d := range r.Drops {
		cpus := make([]string, len(d.CPUs))
		for i, c := range d.CPUs {
			cpus[i] = fmt.Sprint(c)
		}
		rows = append(rows, []string{"  " + d.Reason, d.Class, fmt.Sprint(d.Packets), fmt.Sprint(d.Bytes), strings.Join(cpus, ","), orDash(d.Why)})
	}
	p.table(rows)
	p.line("  benign = TCP discarding a copy it already had (a spurious retransmit, an old ACK) or a socket freeing what it held " +
		"at teardown: nothing lost; lost = every other reason (a full queue, ring or buffer, a filter, no socket, a bad packet), " +
		"NOT_SPECIFIED (the kernel gave no reason) included")
}
