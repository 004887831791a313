package analysis

import (
	"bytes"
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
