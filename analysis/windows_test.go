package analysis

import (
	"math"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// at returns t0 + s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// sec returns s seconds in ns.
func sec(s float64) int64 { return int64(s * 1e9) }

// approxEq reports |got-want| <= 1e-9 × |want| (or an absolute 1e-9 for 0).
func approxEq(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(math.Abs(want), 1)
}

func checkF(t *testing.T, name string, got, want float64) {
	t.Helper()
	if !approxEq(got, want) {
		t.Errorf("%s = %.6f, want %.6f", name, got, want)
	}
}

func checkT(t *testing.T, name string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

// rampSeries: run from t0 to t0+10 s; peak 10 Gbit/s so the active
// threshold is exactly 1 Gbit/s. Rates (bytes*8/interval s):
//
//	i1 0–1 s     124,999,999 B  →   999,999,992 bit/s  < 10% of peak: excluded
//	i2 1–2 s     125,000,000 B  → 1,000,000,000 bit/s  = 10% of peak: included
//	i3 2–3 s   1,000,000,000 B  → 8.0e9
//	i4 3–4.5 s 1,875,000,000 B  → 1.875e9*8/1.5 = 10.0e9  (peak, 1.5 s interval)
//	i5 4.5–5.5 1,150,000,000 B  → 9.2e9
//	i6 5.5–6.5 1,200,000,000 B  → 9.6e9
//	i7 6.5–7.5   500,000,000 B  → 4.0e9   (tail)
//	i8 7.5–8.5   200,000,000 B  → 1.6e9   (tail, still >= 10%: included)
//	i9 8.5–9.5   100,000,000 B  → 0.8e9   (< 10%: excluded)
func rampSeries() []Point {
	return []Point{
		{at(1), sec(1), 124_999_999},
		{at(2), sec(1), 125_000_000},
		{at(3), sec(1), 1_000_000_000},
		{at(4.5), sec(1.5), 1_875_000_000},
		{at(5.5), sec(1), 1_150_000_000},
		{at(6.5), sec(1), 1_200_000_000},
		{at(7.5), sec(1), 500_000_000},
		{at(8.5), sec(1), 200_000_000},
		{at(9.5), sec(1), 100_000_000},
	}
}

func TestComputeWindowsRamp(t *testing.T) {
	pts := rampSeries()
	slices.Reverse(pts) // order must not matter
	w := ComputeWindows(pts, t0, at(10))

	// Peak: i4, 10 Gbit/s, ending at 4.5 s.
	checkF(t, "PeakBps", w.PeakBps, 10e9)
	checkT(t, "PeakAt", w.PeakAt, at(4.5))
	// Active: i2 (exactly 10%) .. i8 (1.6e9); i1 and i9 are below 1e9.
	checkT(t, "ActiveStart", w.ActiveStart, at(1))
	checkT(t, "ActiveEnd", w.ActiveEnd, at(8.5))
	if w.ActiveIntervals != 7 || w.ActiveLength() != 7500*time.Millisecond {
		t.Errorf("active = %d intervals / %v, want 7 / 7.5s", w.ActiveIntervals, w.ActiveLength())
	}
	// Steady: drop i2 and i8; i3..i7 = 8, 10, 9.2, 9.6, 4 Gbit/s;
	// sorted 4, 8, 9.2, 9.6, 10 → median 9.2e9.
	checkF(t, "SteadyBps", w.SteadyBps, 9.2e9)
	if w.SteadyApprox {
		t.Error("SteadyApprox = true with 7 active intervals")
	}
	// Total: 124,999,999 + 125e6 + 1e9 + 1.875e9 + 1.15e9 + 1.2e9 + 0.5e9
	// + 0.2e9 + 0.1e9 = 6,274,999,999 B; whole run over the 10 s run (not
	// the 9.5 s the intervals span): 6,274,999,999*8/10 = 5,019,999,999.2.
	if w.TotalBytes != 6_274_999_999 || w.Intervals != 9 {
		t.Errorf("total = %d B / %d intervals, want 6274999999 / 9", w.TotalBytes, w.Intervals)
	}
	checkF(t, "WholeRunBps", w.WholeRunBps, 5_019_999_999.2)
}

func TestComputeWindowsThresholdBoundary(t *testing.T) {
	// Peak 10e9 (1.25e9 B in 1 s); the first interval is one byte short of
	// 10% (999,999,992 bit/s) and is excluded, the last exactly 10%
	// (125e6 B in 1 s = 1e9) and is included.
	pts := []Point{
		{at(1), sec(1), 124_999_999},
		{at(2), sec(1), 1_250_000_000},
		{at(3), sec(1), 125_000_000},
	}
	w := ComputeWindows(pts, t0, at(3))
	checkT(t, "ActiveStart", w.ActiveStart, at(1))
	checkT(t, "ActiveEnd", w.ActiveEnd, at(3))
	// Two active intervals → approximate steady state: median of 10e9 and
	// 1e9 = 5.5e9.
	if w.ActiveIntervals != 2 || !w.SteadyApprox {
		t.Errorf("active = %d, approx = %v, want 2, true", w.ActiveIntervals, w.SteadyApprox)
	}
	checkF(t, "SteadyBps", w.SteadyBps, 5.5e9)
}

func TestComputeWindowsEvenMedianAndGap(t *testing.T) {
	// Rates 1, 4, 0.05, 6, 2, 8 (×1e9, 1 s each; 1e9 bit/s = 125e6 B).
	// Peak 8e9, threshold 0.8e9: every interval but the 0.05e9 one is
	// active, and it stays inside the window (first..last). Steady drops
	// 1e9 and 8e9: 4, 0.05, 6, 2 → sorted 0.05, 2, 4, 6 → (2+4)/2 = 3e9.
	rates := []uint64{1, 4, 0, 6, 2, 8}
	var pts []Point
	for i, r := range rates {
		b := r * 125_000_000
		if r == 0 {
			b = 6_250_000 // 0.05e9 bit/s
		}
		pts = append(pts, Point{at(float64(i + 1)), sec(1), b})
	}
	w := ComputeWindows(pts, t0, at(6))
	if w.ActiveIntervals != 6 {
		t.Errorf("ActiveIntervals = %d, want 6", w.ActiveIntervals)
	}
	checkF(t, "SteadyBps", w.SteadyBps, 3e9)
}

func TestComputeWindowsEmpty(t *testing.T) {
	for _, pts := range [][]Point{nil, {}, {{at(1), 0, 1000}}} {
		if w := ComputeWindows(pts, t0, at(1)); w != (Windows{}) {
			t.Errorf("ComputeWindows(%v) = %+v, want zero", pts, w)
		}
	}
}

func TestComputeWindowsSingle(t *testing.T) {
	// One 2 s interval of 1e9 B: 4e9 bit/s for peak, steady (approximate:
	// one active interval) and whole run (2 s run).
	w := ComputeWindows([]Point{{at(2), sec(2), 1_000_000_000}}, t0, at(2))
	checkF(t, "PeakBps", w.PeakBps, 4e9)
	checkF(t, "SteadyBps", w.SteadyBps, 4e9)
	checkF(t, "WholeRunBps", w.WholeRunBps, 4e9)
	checkT(t, "ActiveStart", w.ActiveStart, t0)
	checkT(t, "ActiveEnd", w.ActiveEnd, at(2))
	if !w.SteadyApprox || w.ActiveIntervals != 1 || w.Intervals != 1 {
		t.Errorf("got %+v, want approx steady, 1 active, 1 interval", w)
	}
}

func TestComputeWindowsAllZero(t *testing.T) {
	pts := []Point{{at(1), sec(1), 0}, {at(2), sec(1), 0}, {at(3), sec(1), 0}}
	w := ComputeWindows(pts, t0, at(3))
	if w.HasActive() || w.PeakBps != 0 || !w.PeakAt.IsZero() || w.SteadyBps != 0 || w.WholeRunBps != 0 {
		t.Errorf("all-zero series: got %+v, want no active window and zero rates", w)
	}
	if w.Intervals != 3 {
		t.Errorf("Intervals = %d, want 3", w.Intervals)
	}
}

func TestComputeWindowsSkipsZeroLength(t *testing.T) {
	// The 0 ns and -1 ns intervals would dominate if counted; skipped, the
	// series is 2 × 1e9 B in 1 s = 8e9 bit/s, 2e9 B in total.
	pts := []Point{
		{at(1), sec(1), 1_000_000_000},
		{at(1.5), 0, 9_000_000_000},
		{at(1.6), -1, 9_000_000_000},
		{at(2), sec(1), 1_000_000_000},
	}
	w := ComputeWindows(pts, t0, at(2))
	if w.Intervals != 2 || w.TotalBytes != 2_000_000_000 {
		t.Errorf("counted %d intervals / %d B, want 2 / 2e9", w.Intervals, w.TotalBytes)
	}
	checkF(t, "PeakBps", w.PeakBps, 8e9)
	checkF(t, "WholeRunBps", w.WholeRunBps, 8e9)
}

func TestComputeWindowsRunBounds(t *testing.T) {
	pts := []Point{{at(2), sec(1), 125_000_000}, {at(3), sec(1), 125_000_000}}
	// Zero start/end: the intervals' span 1–3 s; 2.5e8 B*8/2 s = 1e9.
	checkF(t, "span", ComputeWindows(pts, time.Time{}, time.Time{}).WholeRunBps, 1e9)
	// Given bounds win: 0–4 s → 0.5e9.
	checkF(t, "given", ComputeWindows(pts, t0, at(4)).WholeRunBps, 0.5e9)
	// End before start: no run length, 0.
	checkF(t, "inverted", ComputeWindows(pts, at(4), t0).WholeRunBps, 0)
}

func TestFormatGbps(t *testing.T) {
	for bps, want := range map[float64]string{0: "0.00", 183.6e9: "183.60", 9.984e9: "9.98", 1e9: "1.00"} {
		if got := FormatGbps(bps); got != want {
			t.Errorf("FormatGbps(%g) = %q, want %q", bps, got, want)
		}
	}
}

// A final sliver of an interval (10 ms cut when the run stopped) is counted
// in the total and the whole-run rate but cannot be the peak: 20 MB in 10 ms
// would be 16 Gbit/s against 8 Gbit/s in every full interval.
func TestSliverIntervalNotPeak(t *testing.T) {
	pts := []Point{
		{End: at(1), IntervalNs: sec(1), Bytes: 1_000_000_000},
		{End: at(2), IntervalNs: sec(1), Bytes: 1_000_000_000},
		{End: at(3), IntervalNs: sec(1), Bytes: 1_000_000_000},
		{End: at(3.01), IntervalNs: sec(0.01), Bytes: 20_000_000},
	}
	w := ComputeWindows(pts, at(0), at(3.01))
	checkF(t, "PeakBps", w.PeakBps, 8e9)
	checkF(t, "SteadyBps", w.SteadyBps, 8e9)
	if w.TotalBytes != 3_020_000_000 || w.Intervals != 4 {
		t.Errorf("total %d bytes in %d intervals, want 3020000000 in 4", w.TotalBytes, w.Intervals)
	}
	checkF(t, "WholeRunBps", w.WholeRunBps, 3_020_000_000*8/3.01)
}

// A final interval long enough for a meaningful rate (here 0.4 s of 1 s) is
// the peak and ends the active window when it is the fastest (blob push on
// lo: the last 0.4 s ran at 2.5x the first seconds); under half the usual
// length it is not a steady-state sample, so steady state is the full
// intervals' median.
func TestFastFinalIntervalIsPeak(t *testing.T) {
	pts := []Point{
		{End: at(1), IntervalNs: sec(1), Bytes: 150_000_000},
		{End: at(2), IntervalNs: sec(1), Bytes: 160_000_000},
		{End: at(2.4), IntervalNs: sec(0.4), Bytes: 160_000_000},
	}
	w := ComputeWindows(pts, at(0), at(2.4))
	checkF(t, "PeakBps", w.PeakBps, 3.2e9)
	if !w.PeakAt.Equal(at(2.4)) || w.ActiveIntervals != 3 || !w.ActiveEnd.Equal(at(2.4)) {
		t.Errorf("peak at %v, active %d intervals to %v; want the final interval in both", w.PeakAt, w.ActiveIntervals, w.ActiveEnd)
	}
	if w.PeakBps < w.WholeRunBps {
		t.Errorf("peak %g below whole run %g", w.PeakBps, w.WholeRunBps)
	}
	checkF(t, "SteadyBps", w.SteadyBps, 1.24e9)
	if !w.SteadyApprox || w.SteadyIntervals != 2 || !w.SteadyEnd.Equal(at(2)) {
		t.Errorf("steady approx %v, %d intervals to %v; want approx over the 2 full ones", w.SteadyApprox, w.SteadyIntervals, w.SteadyEnd)
	}
	checkF(t, "P95Bps", w.P95Bps, Percentile([]float64{1.2e9, 1.28e9, 3.2e9}, 0.95))

	// The user's two-interval run: 1 s at 1.2 Gbit/s, then 0.3 s at 3.2.
	two := []Point{
		{End: at(1), IntervalNs: sec(1), Bytes: 150_000_000},
		{End: at(1.3), IntervalNs: sec(0.3), Bytes: 120_000_000},
	}
	w = ComputeWindows(two, at(0), at(1.3))
	checkF(t, "two PeakBps", w.PeakBps, 3.2e9)
	checkF(t, "two SteadyBps", w.SteadyBps, 1.2e9)
	if w.ActiveIntervals != 2 {
		t.Errorf("two: active %d intervals, want 2", w.ActiveIntervals)
	}
}
