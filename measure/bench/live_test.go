package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/control"
)

// The live line: full intervals print as "0.0-1.0 s"; the recorder's short
// final interval prints only when payload moved in it (with its end to the
// millisecond), never as "2.0-2.0 s sent 0.000 Gbit/s"; a peer report is
// shown once, not repeated on every later line.
func TestLiveLine(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tl := &timeline{t0: t0}
	var b strings.Builder
	var reports []control.Interval
	l := &live{w: &b, period: time.Second, peer: func() (control.Interval, bool) {
		if len(reports) == 0 {
			return control.Interval{}, false
		}
		return reports[len(reports)-1], true
	}}
	add := func(end, ns time.Duration, sent uint64) {
		tl.ivs = append(tl.ivs, localInterval{end: t0.Add(end), ns: ns.Nanoseconds(), phase: trace.PhaseMeasure, sent: sent})
		l.line(tl, &trace.Interval{})
	}
	reports = append(reports, control.Interval{Index: 0, IntervalNs: 1e9, ReceivedBytes: []uint64{125e6}})
	add(time.Second, time.Second, 125e6)
	reports = append(reports, control.Interval{Index: 1, IntervalNs: 12e6, ReceivedBytes: []uint64{1e6}}) // the peer's short final report
	add(2*time.Second, time.Second, 125e6)
	add(2*time.Second+12*time.Millisecond, 12*time.Millisecond, 0) // nothing moved: no line
	add(3*time.Second, time.Second, 125e6)
	add(3*time.Second+15*time.Millisecond, 15*time.Millisecond, 1875e3)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), b.String())
	}
	for i, want := range []string{"  0.0-1.0 s  sent 1.000 Gbit/s", "  1.0-2.0 s  sent 1.000 Gbit/s", "  2.0-3.0 s  sent 1.000 Gbit/s", "  3.0-3.015 s  sent 1.000 Gbit/s"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d %q, want prefix %q", i, lines[i], want)
		}
	}
	if n := strings.Count(b.String(), "peer:"); n != 2 || !strings.Contains(lines[0], "peer: received 1.000 Gbit/s") ||
		!strings.Contains(lines[1], "peer: received 0.667 Gbit/s") {
		t.Errorf("peer reports shown %d times, want each once:\n%s", n, b.String())
	}
}
