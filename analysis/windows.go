// Package analysis turns a netprof trace into figures and verdicts:
// throughput windows (peak, active window, steady state, whole run) per
// direction and counter (application, interface, BPF, on-the-wire
// estimate), per-CPU softirq load, RTT per flow and peer, BDP, retransmits,
// and rule-based verdicts (softirq-bound, wire-bound, rate-limited path,
// window-limited, storage-throttled, hairpin, sender-limited) with their
// evidence. Reports are text, JSON, and (package analysis/htmlreport) HTML.
//
// The core accumulates rows batch by batch and does no I/O ([BuildTables],
// [ComputeWindows]); [Analyze] streams a run directory's tables through
// trace.Scan so memory stays bounded by flows, CPUs and intervals, not rows.
//
// All rates are bit/s (float64); reports print them in decimal Gbit/s
// (10^9 bit/s) unless binary units are asked for, never mixed in a table.
package analysis

import (
	"math"
	"slices"
	"sort"
	"time"
)

// ActiveThreshold is the fraction of the peak rate an interval must reach to
// belong to the active window (first to last interval at or above it).
const ActiveThreshold = 0.10

// Point is one interval's counter delta.
type Point struct {
	// End is the end of the interval (the trace's `time` column).
	End time.Time
	// IntervalNs is the measured interval length in nanoseconds (the
	// trace's `interval_ns`); points with IntervalNs <= 0 are skipped.
	IntervalNs int64
	// Bytes is the counter delta over the interval, in bytes.
	Bytes uint64
}

// Start returns the start of the interval (End − IntervalNs).
func (p Point) Start() time.Time { return p.End.Add(-time.Duration(p.IntervalNs)) }

// RateBps returns the interval's rate in bit/s: Bytes*8 divided by the
// interval's own length. It returns 0 when IntervalNs <= 0.
func (p Point) RateBps() float64 {
	if p.IntervalNs <= 0 {
		return 0
	}
	return float64(p.Bytes) * 8 / (float64(p.IntervalNs) / 1e9)
}

// Windows holds the three throughput figures of one counter over a run
// (see docs/report.md). Rates are in bit/s.
type Windows struct {
	// PeakBps is the largest single-interval rate, bit/s; PeakAt is the end
	// of that interval (the earliest one on ties), zero when no interval has
	// a positive rate.
	PeakBps float64
	PeakAt  time.Time

	// ActiveStart is the start of the first and ActiveEnd the end of the
	// last interval whose rate is >= ActiveThreshold × PeakBps. Both are
	// zero when there is no active window (no intervals, or peak 0).
	ActiveStart, ActiveEnd time.Time
	// ActiveIntervals is the number of intervals from the first to the last
	// active interval inclusive (intervals below the threshold between them
	// are part of the window).
	ActiveIntervals int

	// SteadyBps is the median interval rate, bit/s, inside the active window
	// after dropping its first and last interval. When the active window has
	// fewer than 3 intervals it is the median of all active-window intervals
	// and SteadyApprox is true. The median of an even count is the mean of
	// the two middle rates.
	SteadyBps    float64
	SteadyApprox bool
	// SteadyStart and SteadyEnd bound the steady-state intervals (the
	// active window without its first and last interval; the whole active
	// window when SteadyApprox). SteadyIntervals is their number and
	// SteadyCV the coefficient of variation (population standard deviation
	// / mean) of their rates: 0.02 means the rate varied by about 2%.
	SteadyStart, SteadyEnd time.Time
	SteadyIntervals        int
	SteadyCV               float64

	// P50Bps and P95Bps are the 50th and 95th percentiles (linear
	// interpolation between ranks) of the active window's interval rates,
	// bit/s.
	P50Bps, P95Bps float64

	// WholeRunBps is TotalBytes*8 / (runEnd − runStart) in bit/s, with the
	// run start and end given to ComputeWindows (not the intervals' span).
	// It is 0 when the run has no positive length.
	WholeRunBps float64

	// TotalBytes is the sum of Bytes over the counted intervals; Intervals
	// is their number. Points with IntervalNs <= 0 are not counted.
	TotalBytes uint64
	Intervals  int
}

// HasActive reports whether w has an active window (at least one interval
// with a positive rate).
func (w Windows) HasActive() bool { return w.ActiveIntervals > 0 }

// ActiveLength returns ActiveEnd − ActiveStart (0 without an active window).
func (w Windows) ActiveLength() time.Duration { return w.ActiveEnd.Sub(w.ActiveStart) }

// ComputeWindows computes the throughput windows of points over a run from
// runStart to runEnd. Points are ordered by End (the input is not modified);
// points with IntervalNs <= 0 are skipped entirely (their bytes are not in
// TotalBytes). Each interval's rate divides by its own IntervalNs, so
// irregular intervals are handled. Empty input gives a zero Windows.
//
// The final interval, cut short when the run stopped, takes part by its
// length against the usual one (the median of the others): under 1/10 it
// counts in TotalBytes and WholeRunBps only (a sliver's rate is noise);
// from 1/10 it can be the peak, extends the active window and is in
// P50/P95; from 1/2 it is also a steady-state sample. So the peak is never
// a sliver, yet a fast final second of a short run is not lost from it.
// (Any interval under 1/10 of the usual length is treated like a sliver.)
//
// If runStart or runEnd is zero, the start of the first or the end of the
// last counted interval is used instead.
func ComputeWindows(points []Point, runStart, runEnd time.Time) Windows {
	pts := validPoints(points)
	if len(pts) == 0 {
		return Windows{}
	}
	var w Windows
	w.Intervals = len(pts)
	for _, p := range pts {
		w.TotalBytes += p.Bytes
	}
	w.WholeRunBps = wholeRun(w.TotalBytes, pts, runStart, runEnd)
	// The run's final interval is cut short when the run stops (the
	// recorder keeps at least 10 ms). A sliver's rate is noisy (the
	// samplers' few-ms spread is a large share of its length): intervals
	// shorter than a tenth of the usual length count in the totals and the
	// whole-run rate only. A longer final interval (a tenth to a half of
	// the usual length) gives a meaningful rate: it can be the peak and
	// extend the active window, but it is left out of the steady state,
	// which it could otherwise dominate in a short run.
	usual := usualLength(pts)
	pts = minLength(pts, usual/10)
	rates := make([]float64, len(pts))
	for i, p := range pts {
		rates[i] = p.RateBps()
		if rates[i] > w.PeakBps {
			w.PeakBps, w.PeakAt = rates[i], p.End
		}
	}
	first, last, ok := activeRange(rates, w.PeakBps)
	if !ok {
		return w
	}
	w.ActiveStart, w.ActiveEnd = pts[first].Start(), pts[last].End
	w.ActiveIntervals = last - first + 1
	active := rates[first : last+1]
	sLast := last
	if last > first && last == len(pts)-1 && float64(pts[last].IntervalNs) < usual/2 {
		sLast = last - 1 // a short final interval: not a steady-state sample
	}
	w.SteadyBps, w.SteadyApprox = steady(rates[first : sLast+1])
	w.P50Bps, w.P95Bps = Percentile(active, 0.50), Percentile(active, 0.95)
	lo, hi := first, sLast
	if !w.SteadyApprox {
		lo, hi = first+1, sLast-1
	}
	w.SteadyStart, w.SteadyEnd = pts[lo].Start(), pts[hi].End
	w.SteadyIntervals = hi - lo + 1
	w.SteadyCV = cv(rates[lo : hi+1])
	return w
}

// InSteady reports whether the interval ending at end (of intervalNs) has
// its midpoint inside the steady-state intervals.
func (w Windows) InSteady(end time.Time, intervalNs int64) bool {
	return w.SteadyIntervals > 0 && inWindow(end, intervalNs, w.SteadyStart, w.SteadyEnd)
}

// Percentile returns the q-quantile (0..1) of xs with linear interpolation
// between the closest ranks (so q=0.5 is the median); 0 for no values. xs
// is not modified.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// cv returns the population standard deviation of xs over their mean; 0
// for fewer than two values or a zero mean.
func cv(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	if mean == 0 {
		return 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(len(xs))) / mean
}

// usualLength returns the median interval length in ns of pts (sorted by
// End), leaving out the final interval, the only one a stop cuts short,
// when there are others.
func usualLength(pts []Point) float64 {
	if len(pts) > 1 {
		pts = pts[:len(pts)-1]
	}
	ns := make([]float64, len(pts))
	for i, p := range pts {
		ns[i] = float64(p.IntervalNs)
	}
	return Percentile(ns, 0.5)
}

// minLength returns the points at least minNs long.
func minLength(pts []Point, minNs float64) []Point {
	out := make([]Point, 0, len(pts))
	for _, p := range pts {
		if float64(p.IntervalNs) >= minNs {
			out = append(out, p)
		}
	}
	return out
}

// validPoints returns the points with IntervalNs > 0, sorted by End.
func validPoints(points []Point) []Point {
	pts := make([]Point, 0, len(points))
	for _, p := range points {
		if p.IntervalNs > 0 {
			pts = append(pts, p)
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].End.Before(pts[j].End) })
	return pts
}

// activeRange returns the indexes of the first and last rate >=
// ActiveThreshold × peak; ok is false when peak is not positive.
func activeRange(rates []float64, peak float64) (first, last int, ok bool) {
	if peak <= 0 {
		return 0, 0, false
	}
	thr := ActiveThreshold * peak
	first, last = -1, -1
	for i, r := range rates {
		if r >= thr {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	return first, last, first >= 0
}

// steady returns the median of active after dropping its first and last
// rate, or of all of active (approx=true) when it has fewer than 3 rates.
func steady(active []float64) (bps float64, approx bool) {
	if len(active) < 3 {
		return median(active), true
	}
	return median(active[1 : len(active)-1]), false
}

// median returns the median of xs (mean of the two middle values for an
// even count; 0 for none). xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// wholeRun returns total*8 / (end − start) in bit/s, substituting the
// intervals' span for a zero start or end; 0 if the length is not positive.
func wholeRun(total uint64, pts []Point, start, end time.Time) float64 {
	if start.IsZero() {
		start = pts[0].Start()
	}
	if end.IsZero() {
		end = pts[len(pts)-1].End
	}
	d := end.Sub(start)
	if d <= 0 {
		return 0
	}
	return float64(total) * 8 / d.Seconds()
}
