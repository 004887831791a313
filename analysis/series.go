package analysis

import (
	"fmt"
	"sort"
	"time"
)

// series sums one counter's deltas per interval, grouping rows by their
// `time` (interval end). An interval with an implausible row is excluded
// whole: a partial sum would be a wrong figure, not a missing one.
type series struct {
	byEnd    map[int64]*Point
	excluded map[int64]bool
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

// exclude drops the interval ending at end from the series.
func (s *series) exclude(end time.Time) {
	if s.excluded == nil {
		s.excluded = map[int64]bool{}
	}
	s.excluded[end.UnixNano()] = true
}

// empty reports whether nothing was added.
func (s *series) empty() bool { return len(s.byEnd) == 0 && len(s.excluded) == 0 }

// points returns the intervals that were not excluded, sorted by end.
func (s *series) points() []Point {
	out := make([]Point, 0, len(s.byEnd))
	for k, p := range s.byEnd {
		if !s.excluded[k] {
			out = append(out, *p)
		}
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

// inWindow reports whether the interval ending at end (of intervalNs) has its
// midpoint within [start, stop]. Midpoints tolerate tables whose `time`
// differs by a few µs for the same interval.
func inWindow(end time.Time, intervalNs int64, start, stop time.Time) bool {
	mid := end.Add(-time.Duration(intervalNs) / 2)
	return !mid.Before(start) && !mid.After(stop)
}

// anomaly counts the intervals of one counter excluded as implausible.
type anomaly struct {
	count  int
	first  time.Time
	maxBps float64
	what   string
}

// anomalies records implausible deltas (a counter that went backwards or
// wrapped shows as a huge unsigned delta) per counter label.
type anomalies struct {
	limitBps float64
	limitSrc string
	byLabel  map[string]*anomaly
	order    []string
}

// plausible reports whether bytes over intervalNs is a believable rate
// (<= the limit) and a positive interval; if not it records the anomaly
// under label.
func (a *anomalies) plausible(label string, end time.Time, intervalNs int64, bytes uint64) bool {
	if intervalNs <= 0 {
		a.record(label, end, 0, "interval_ns <= 0")
		return false
	}
	bps := float64(bytes) * 8 / (float64(intervalNs) / 1e9)
	if bps <= a.limitBps {
		return true
	}
	a.record(label, end, bps, "")
	return false
}

// plausibleNs reports whether a CPU-time delta fits in its interval (1%
// slack); if not it records the anomaly under label.
func (a *anomalies) plausibleNs(label string, end time.Time, intervalNs int64, ns uint64) bool {
	if intervalNs > 0 && float64(ns) <= 1.01*float64(intervalNs) {
		return true
	}
	a.record(label, end, 0, fmt.Sprintf("%d ns of softirq in an interval of %d ns", ns, intervalNs))
	return false
}

func (a *anomalies) record(label string, end time.Time, bps float64, what string) {
	if a.byLabel == nil {
		a.byLabel = map[string]*anomaly{}
	}
	x := a.byLabel[label]
	if x == nil {
		x = &anomaly{first: end, what: what}
		a.byLabel[label] = x
		a.order = append(a.order, label)
	}
	x.count++
	if end.Before(x.first) {
		x.first = end
	}
	x.maxBps = max(x.maxBps, bps)
}

// notes returns one note per counter with excluded intervals.
func (a *anomalies) notes() []string {
	var out []string
	for _, label := range a.order {
		x := a.byLabel[label]
		why := x.what
		if why == "" {
			why = fmt.Sprintf("a delta of up to %.3g bit/s, above the plausible %.3g bit/s (%s): the counter went backwards or wrapped",
				x.maxBps, a.limitBps, a.limitSrc)
		}
		out = append(out, fmt.Sprintf("%s: %d interval(s) excluded, first ending %s: %s",
			label, x.count, fmtTime(x.first), why))
	}
	return out
}
