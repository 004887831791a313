package analysis

import (
	"sort"
	"time"

	"github.com/netprof/netprof/trace"
)

// series sums byte deltas per interval, grouping rows by their `time`
// (interval end).
type series struct {
	byEnd map[int64]*Point
}

// add adds bytes to the interval ending at end. The interval's length is the
// largest interval_ns among its rows.
func (s *series) add(end time.Time, intervalNs int64, bytes uint64) {
	if s.byEnd == nil {
		s.byEnd = map[int64]*Point{}
	}
	k := end.UnixNano()
	p := s.byEnd[k]
	if p == nil {
		p = &Point{End: end}
		s.byEnd[k] = p
	}
	p.Bytes += bytes
	p.IntervalNs = max(p.IntervalNs, intervalNs)
}

// points returns the intervals sorted by end.
func (s *series) points() []Point {
	out := make([]Point, 0, len(s.byEnd))
	for _, p := range s.byEnd {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].End.Before(out[j].End) })
	return out
}

// bounds tracks the earliest interval start and latest interval end.
type bounds struct{ start, end time.Time }

// add extends b by the interval ending at end.
func (b *bounds) add(end time.Time, intervalNs int64) {
	start := end.Add(-time.Duration(max(intervalNs, 0)))
	if b.start.IsZero() || start.Before(b.start) {
		b.start = start
	}
	if b.end.IsZero() || end.After(b.end) {
		b.end = end
	}
}

// ifaceKey identifies an interface: its name within a network namespace
// (netns 0 matches any namespace, for manifests that do not record it).
type ifaceKey struct {
	name  string
	netns uint64
}

// match reports whether the row belongs to the interface.
func (k ifaceKey) match(x trace.IfaceRow) bool {
	return x.Ifname == k.name && (k.netns == 0 || x.Netns == k.netns)
}

// largestRx returns the interface with the largest rx_bytes total (the
// lexically first on ties, for determinism).
func largestRx(ifaces []trace.IfaceRow) ifaceKey {
	totals := map[ifaceKey]uint64{}
	for _, x := range ifaces {
		totals[ifaceKey{name: x.Ifname, netns: x.Netns}] += x.RxBytes
	}
	var best ifaceKey
	var bestTotal uint64
	first := true
	for k, t := range totals {
		better := t > bestTotal || (t == bestTotal && (k.name < best.name ||
			(k.name == best.name && k.netns < best.netns)))
		if first || better {
			best, bestTotal, first = k, t, false
		}
	}
	return best
}

// inWindow reports whether the interval ending at end (of intervalNs) has its
// midpoint within [start, stop]. Midpoints tolerate tables whose `time`
// differs by a few µs for the same interval.
func inWindow(end time.Time, intervalNs int64, start, stop time.Time) bool {
	mid := end.Add(-time.Duration(intervalNs) / 2)
	return !mid.Before(start) && !mid.After(stop)
}
