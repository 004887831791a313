package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/netprof/netprof/trace"
)

// NICLoss is one loss or error counter of an interface the report counts
// (its rx or tx interface), summed over every interval of the run: a
// stats64 counter from netlink (ifaces table) or a driver statistic from
// `ethtool -S` (nics table) whose name says it counts drops, misses,
// discards, missing buffers or errors (mlx5 rx_out_of_buffer, mana
// rx_dropped, virtio/veth per-queue drops).
type NICLoss struct {
	Ifname  string
	Counter string
	// Source is "netlink" (ifaces.<counter>) or "ethtool -S" (nics.stat).
	Source string
	// Queue is the queue a per-queue ethtool statistic names; nil else.
	Queue *int32
	Value uint64
}

// Sources of NICLoss counters.
const (
	SourceNetlink = "netlink"
	SourceEthtool = "ethtool -S"
)

// lossStat matches the ethtool statistic names that count lost or broken
// packets.
var lossStat = regexp.MustCompile(`drop|miss|discard|no_?buf|out_of_buf|overrun|overflow|err|fifo|timeout|fail`)

// nicLossAcc sums the counted interfaces' loss counters.
type nicLossAcc struct {
	sums map[nicLossKey]uint64
	// netlink: an ifaces row of a counted interface had the stats64 error
	// columns; ethtool: a nics row of one was read.
	netlink, ethtool bool
}

type nicLossKey struct {
	ifname, counter, source string
	queue                   int32 // -1: none
}

func (a *nicLossAcc) add(k nicLossKey, v uint64) {
	if a.sums == nil {
		a.sums = map[nicLossKey]uint64{}
	}
	a.sums[k] += v
}

// iface adds an ifaces row of a counted interface.
func (a *nicLossAcc) iface(x *trace.IfaceRow) {
	k := nicLossKey{ifname: x.Ifname, source: SourceNetlink, queue: -1}
	for _, c := range []struct {
		name string
		v    uint64
	}{{"rx_dropped", x.RxDropped}, {"tx_dropped", x.TxDropped}} {
		k.counter = c.name
		a.add(k, c.v)
	}
	if x.RxMissedErrors == nil {
		return // a trace from before the stats64 error columns
	}
	a.netlink = true
	for _, c := range []struct {
		name string
		v    *uint64
	}{
		{"rx_errors", x.RxErrors}, {"tx_errors", x.TxErrors}, {"rx_missed_errors", x.RxMissedErrors},
		{"rx_fifo_errors", x.RxFifoErrors}, {"rx_over_errors", x.RxOverErrors}, {"rx_crc_errors", x.RxCrcErrors},
		{"rx_frame_errors", x.RxFrameErrors}, {"rx_length_errors", x.RxLengthErrors},
		{"tx_aborted_errors", x.TxAbortedErrors}, {"tx_carrier_errors", x.TxCarrierErrors},
		{"tx_fifo_errors", x.TxFifoErrors}, {"tx_heartbeat_errors", x.TxHeartbeatErrors},
		{"tx_window_errors", x.TxWindowErrors},
	} {
		if c.v != nil {
			k.counter = c.name
			a.add(k, *c.v)
		}
	}
}

// addNICs adds the nics rows of the counted interfaces.
func (b *builder) addNICs(rows []trace.NICStatRow) error {
	for i := range rows {
		x := &rows[i]
		if !b.counted(x.Ifname, x.Netns) {
			continue
		}
		b.nicLoss.ethtool = true
		b.queueHeat.row(b, x)
		if !lossStat.MatchString(strings.ToLower(x.Stat)) {
			continue
		}
		k := nicLossKey{ifname: x.Ifname, counter: x.Stat, source: SourceEthtool, queue: -1}
		if x.Queue != nil {
			k.queue = *x.Queue
		}
		b.nicLoss.add(k, x.Value)
	}
	return nil
}

// counted reports whether the interface is the report's rx or tx one.
func (b *builder) counted(name string, netns uint64) bool {
	for _, s := range []*ifaceSide{&b.rx, &b.tx} {
		if s.chosen && s.key.name == name && (s.key.netns == 0 || s.key.netns == netns) {
			return true
		}
	}
	return false
}

const figNICLoss = "nic loss"

// finishNICLoss sets Report.NICLoss: the counters that moved, largest
// first; nil (with the reason) when no counted interface had loss
// counters recorded.
func (b *builder) finishNICLoss() {
	a := &b.nicLoss
	if !a.netlink && !a.ethtool && a.sums == nil {
		b.r.reasons[figNICLoss] = "no ifaces rows of a counted interface"
		return
	}
	b.r.NICLoss = []NICLoss{}
	for k, v := range a.sums {
		if v == 0 {
			continue
		}
		l := NICLoss{Ifname: k.ifname, Counter: k.counter, Source: k.source, Value: v}
		if k.queue >= 0 {
			q := k.queue
			l.Queue = &q
		}
		b.r.NICLoss = append(b.r.NICLoss, l)
	}
	slices.SortFunc(b.r.NICLoss, func(x, y NICLoss) int {
		if x.Value != y.Value {
			return map[bool]int{true: -1, false: 1}[x.Value > y.Value]
		}
		return strings.Compare(x.Ifname+" "+x.Counter+" "+x.Source, y.Ifname+" "+y.Counter+" "+y.Source)
	})
	var srcs []string
	if a.netlink {
		srcs = append(srcs, "netlink stats64")
	} else {
		srcs = append(srcs, "netlink rx/tx_dropped only (trace without the stats64 error columns)")
	}
	if a.ethtool {
		srcs = append(srcs, "ethtool -S")
	} else {
		srcs = append(srcs, "no ethtool -S rows (nics table: bench and watch)")
	}
	b.r.nicLossSources = strings.Join(srcs, ", ")
}

// NICLossLine says which loss and error counters of the counted
// interfaces moved over the run, or n/a with the reason.
func (r *Report) NICLossLine() string {
	if r.NICLoss == nil {
		return na(r.reason(figNICLoss, "no interface counters"))
	}
	if len(r.NICLoss) == 0 {
		return "none (" + r.nicLossSources + ", whole run)"
	}
	parts := make([]string, 0, 4)
	for i, l := range r.NICLoss {
		if i == 4 {
			break
		}
		parts = append(parts, l.String())
	}
	s := fmt.Sprintf("%s (whole run)", strings.Join(parts, ", "))
	if len(r.NICLoss) > 4 {
		s += " and " + plural(len(r.NICLoss)-4, "more counter")
	}
	return s
}

// String is "IF COUNTER VALUE (SOURCE)".
func (l NICLoss) String() string {
	return fmt.Sprintf("%s %s %d (%s)", l.Ifname, l.Counter, l.Value, l.Source)
}

// nicLossEvidence cites the NIC's loss counters when any moved.
func nicLossEvidence(r *Report) []string {
	if len(r.NICLoss) == 0 {
		return nil
	}
	return []string{"interface loss counters: " + r.NICLossLine()}
}
