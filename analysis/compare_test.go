package analysis

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
)

// A sweep where streams double, throughput stays within 1% and
// retransmits per GB multiply is flagged as a rate limiter; a sweep where
// throughput moves is not.
func TestCompareRateLimiter(t *testing.T) {
	row := func(streams int, bps, retx float64) CompareRow {
		r := scen(t, analysistest.Scenario{Streams: streams, RateBps: flat(bps), RetxFraction: retx}, Options{})
		r.Dir = "run" + string(rune('0'+streams/4))
		return CompareRowOf(r)
	}
	rows := []CompareRow{row(4, 9.60e9, 0.001), row(8, 9.61e9, 0.003), row(16, 9.62e9, 0.0031)}
	c := Compare(rows, Thresholds{}, Decimal)
	if len(c.Flags) != 1 || c.Flags[0].From != 0 || c.Flags[0].To != 1 {
		t.Fatalf("flags %+v, want one for runs 0 -> 1", c.Flags)
	}
	if rows[0].Streams != 4 || rows[0].BlockSize != 131072 || rows[0].BusiestCPU != 0 {
		t.Errorf("row %+v", rows[0])
	}
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rate-limiter signature", "streams 4 -> 8 did not move throughput: rate-limited path confirmed",
		"x3.0", "128 KiB"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("compare lacks %q:\n%s", want, b.String())
		}
	}
	moved := []CompareRow{row(4, 5e9, 0.001), row(8, 9e9, 0.003)}
	if c := Compare(moved, Thresholds{}, Decimal); len(c.Flags) != 0 {
		t.Errorf("throughput +80%% flagged: %+v", c.Flags)
	}
}

// A real limiter (measured: 1 Gbit/s HTB, 128 KiB queue, 2 -> 8 streams)
// keeps throughput flat with retransmits high in both runs but per GB only
// x1.3: flagged. Low retransmits that barely grow, or a flat rate explained
// by a core saturated in NET_RX softirq, are not.
func TestCompareLimiterHighRetx(t *testing.T) {
	row := func(streams int, retx float64, softirq func(i, cpu int) float64) CompareRow {
		r := scen(t, analysistest.Scenario{Streams: streams, RateBps: flat(0.95e9), RetxFraction: retx, Softirq: softirq}, Options{})
		return CompareRowOf(r)
	}
	c := Compare([]CompareRow{row(2, 0.22, nil), row(8, 0.29, nil)}, Thresholds{}, Decimal)
	if len(c.Flags) != 1 || !strings.Contains(c.Flags[0].Summary, "retransmits stayed high (22.0% -> 29.0%") ||
		!strings.Contains(c.Flags[0].Summary, "rate-limited path confirmed") {
		t.Errorf("flags %+v, want the limiter confirmed with retransmits stayed high", c.Flags)
	}
	if c := Compare([]CompareRow{row(2, 0.001, nil), row(8, 0.0012, nil)}, Thresholds{}, Decimal); len(c.Flags) != 0 {
		t.Errorf("low retransmits flagged: %+v", c.Flags)
	}
	if c := Compare([]CompareRow{row(8, 0.29, nil), row(2, 0.30, nil)}, Thresholds{}, Decimal); len(c.Flags) != 0 {
		t.Errorf("fewer streams flagged without retransmits multiplying: %+v", c.Flags)
	}
	hot := func(_, cpu int) float64 { return map[bool]float64{true: 0.95, false: 0.1}[cpu == 0] }
	if c := Compare([]CompareRow{row(2, 0.01, hot), row(8, 0.05, hot)}, Thresholds{}, Decimal); len(c.Flags) != 0 {
		t.Errorf("saturated core flagged as a limiter: %+v", c.Flags)
	}
}

// The busiest CPU column says what it counts: NET_RX time when the softirq
// probe ran, /proc/stat's softirq of every vector when it did not (bench's
// default probes); runs of both kinds side by side name the source per
// cell, and the JSON keeps the two shares under their own keys.
func TestCompareHotSource(t *testing.T) {
	netRx := func(dir string) CompareRow { // NET_RX 30% on CPU 0 (analysistest's default)
		r := scen(t, analysistest.Scenario{}, Options{})
		r.Dir = dir
		return CompareRowOf(r)
	}
	procStat := func(dir string) CompareRow { // every vector: 62% on CPU 1, 5% elsewhere
		r := scen(t, analysistest.Scenario{NoSoftirqProbe: true, ProcStat: func(_, c int) (float64, float64) {
			if c == 1 {
				return 0.62, 0.9
			}
			return 0.05, 0.3
		}}, Options{})
		r.Dir = dir
		return CompareRowOf(r)
	}
	text := func(rows ...CompareRow) string {
		var b strings.Builder
		if err := Compare(rows, Thresholds{}, Decimal).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tc := range []struct {
		name      string
		rows      []CompareRow
		want, not []string
	}{
		{"bpf", []CompareRow{netRx("a"), netRx("b")},
			[]string{"busiest CPU NET_RX %", "30.0 (CPU 0)", "NET_RX = " + HotNetRx},
			[]string{"all-vector", "/proc/stat", "measured it differently"}},
		{"proc", []CompareRow{procStat("a"), procStat("b")},
			[]string{"busiest CPU all-vector softirq %", "62.0 (CPU 1)", "all-vector softirq = " + HotAllSoftirq},
			[]string{"NET_RX %", "NET_RX =", "30.0", "measured it differently"}},
		{"mixed", []CompareRow{netRx("a"), procStat("b")},
			[]string{"busiest CPU softirq %", "30.0 (CPU 0, NET_RX)", "62.0 (CPU 1, all-vector softirq)",
				"NET_RX = " + HotNetRx, "all-vector softirq = " + HotAllSoftirq, "measured it differently"},
			[]string{"busiest CPU NET_RX %"}},
	} {
		out := text(tc.rows...)
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: compare lacks %q:\n%s", tc.name, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("%s: compare has %q:\n%s", tc.name, n, out)
			}
		}
	}
	j := Compare([]CompareRow{netRx("a"), procStat("b")}, Thresholds{}, Decimal).JSON()
	a, b := j.Runs[0], j.Runs[1]
	if a.BusiestNetRxPct == nil || math.Abs(*a.BusiestNetRxPct-30) > 1e-6 || a.BusiestAllSoftirqPct != nil || a.BusiestCounts != HotNetRx {
		t.Errorf("bpf run JSON: net_rx %v all %v counts %q, want 30%% NET_RX only", a.BusiestNetRxPct, a.BusiestAllSoftirqPct, a.BusiestCounts)
	}
	if b.BusiestAllSoftirqPct == nil || math.Abs(*b.BusiestAllSoftirqPct-62) > 1e-6 || b.BusiestNetRxPct != nil ||
		b.BusiestCounts != HotAllSoftirq || b.BusiestCPU == nil || *b.BusiestCPU != 1 {
		t.Errorf("proc run JSON: net_rx %v all %v counts %q cpu %v, want 62%% all-vector on CPU 1 only",
			b.BusiestNetRxPct, b.BusiestAllSoftirqPct, b.BusiestCounts, b.BusiestCPU)
	}
}
