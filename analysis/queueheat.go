package analysis

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/netprof/netprof/trace"
)

// QueueHeat is each queue's packet rate over time, for the counted
// interfaces whose driver counts packets per queue in `ethtool -S` (nics
// table: rx_queue_3_packets, rx3_packets, rx_3_packets, queue_3_rx_cnt;
// veth's rx_queue_3_xdp_packets),
// with intervals merged into at most HeatBins bins: how evenly RSS spread
// the streams over the receive queues, and when that changed.
type QueueHeat struct {
	BinEnds []time.Time
	Queues  []QueueName
	// PacketsPerSec[q][b] is queue Queues[q]'s packets per second in bin b
	// (NaN when it has no rows there).
	PacketsPerSec [][]float64
}

// QueueName names one queue's packet counter.
type QueueName struct {
	Ifname, Dir string
	Queue       int32
	Stat        string
}

func (q QueueName) String() string { return fmt.Sprintf("%s %s %d", q.Ifname, q.Dir, q.Queue) }

// queuePackets matches the per-queue packet counters (not XDP's or LRO's).
var queuePackets = regexp.MustCompile(`^(?:(?:rx|tx)_queue_\d+_packets|(?:rx|tx)\d+_packets|(?:rx|tx)_\d+_packets|queue_\d+_(?:rx|tx)_cnt)$`)

// vethQueuePackets is veth's per-queue receive counter: every packet its
// queue's NAPI context handled, with or without an XDP program (veth
// uses NAPI when XDP is attached or GRO is on; packets it passes straight
// to the stack are in no queue's count).
var vethQueuePackets = regexp.MustCompile(`^rx_queue_\d+_xdp_packets$`)

// isQueuePackets says whether stat counts one queue's packets on an
// interface of driver.
func isQueuePackets(driver, stat string) bool {
	if driver == "veth" {
		return vethQueuePackets.MatchString(stat)
	}
	return queuePackets.MatchString(stat)
}

// queueHeatAcc bins the per-queue packet counters.
type queueHeatAcc struct {
	heat  heatAcc
	ids   map[QueueName]int32
	names []QueueName
}

func (a *queueHeatAcc) row(b *builder, x *trace.NICStatRow) {
	if x.Queue == nil || x.Direction == nil || !isQueuePackets(b.driver(x.Netns, x.Ifname), x.Stat) {
		return
	}
	if a.ids == nil {
		a.ids = map[QueueName]int32{}
		a.heat.init(b.r.RunStart, b.r.RunEnd, b.r.Manifest.IntervalNs)
	}
	n := QueueName{Ifname: x.Ifname, Dir: *x.Direction, Queue: *x.Queue, Stat: x.Stat}
	id, ok := a.ids[n]
	if !ok {
		id = int32(len(a.names))
		a.ids[n] = id
		a.names = append(a.names, n)
	}
	a.heat.add(id, x.Time, x.IntervalNs, x.Value)
}

// result returns the heat map, queues sorted by interface, direction
// (rx first) and number; nil without per-queue packet counters.
func (a *queueHeatAcc) result() *QueueHeat {
	h := a.heat.result(func(int32) bool { return true })
	if h == nil {
		return nil
	}
	out := &QueueHeat{BinEnds: h.BinEnds}
	order := make([]int, len(h.CPUs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		x, y := a.names[h.CPUs[i]], a.names[h.CPUs[j]]
		if c := strings.Compare(x.Ifname, y.Ifname); c != 0 {
			return c
		}
		if c := strings.Compare(x.Dir, y.Dir); c != 0 {
			return c
		}
		return int(x.Queue) - int(y.Queue)
	})
	for _, i := range order {
		out.Queues = append(out.Queues, a.names[h.CPUs[i]])
		row := make([]float64, len(h.Share[i]))
		for b, v := range h.Share[i] {
			row[b] = v * 1e9 // packets per ns of interval
			if math.IsNaN(v) {
				row[b] = v
			}
		}
		out.PacketsPerSec = append(out.PacketsPerSec, row)
	}
	return out
}

// driver is the manifest's driver of interface ifname in namespace netns;
// "" when the manifest does not list it.
func (b *builder) driver(netns uint64, ifname string) string {
	for _, mi := range b.r.Manifest.Interfaces {
		if mi.Name == ifname && mi.Netns == netns {
			return mi.Driver
		}
	}
	return ""
}
