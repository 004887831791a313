package analysis

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// The one-screen report fits 40 lines of 100 columns whatever the run
// (many CPUs, long names, binary units, nothing measured), answers first
// with the rule that fired, and gives one hot-core figure: the report's.
func TestSummaryOneScreen(t *testing.T) {
	hot := func(_, c int) float64 {
		if c == 5 {
			return 0.97
		}
		return 0.05
	}
	for name, c := range map[string]struct {
		s    analysistest.Scenario
		opts Options
		rule string
	}{
		"default":     {analysistest.Scenario{}, Options{}, RuleInconclusive},
		"softirq 64":  {analysistest.Scenario{CPUs: 64, PossibleCPUs: 240, Softirq: hot, RateBps: flat(9e9)}, Options{}, RuleSoftirq},
		"wire binary": {analysistest.Scenario{RatedMbps: 10000, RateBps: flat(9.3e9)}, Options{Units: Binary}, RuleWire},
		"retransmits": {analysistest.Scenario{RetxFraction: 0.01, Streams: 64}, Options{}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			r := scen(t, c.s, c.opts)
			r.Dir = "/var/lib/netprof/runs/" + strings.Repeat("a-very-long-run-directory-name-", 4)
			var b strings.Builder
			if err := r.WriteSummary(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) > SummaryLines {
				t.Errorf("%d lines, want at most %d:\n%s", len(lines), SummaryLines, out)
			}
			for i, l := range lines {
				if n := utf8.RuneCountInString(l); n > SummaryWidth {
					t.Errorf("line %d has %d columns: %q", i+1, n, l)
				}
			}
			var ceiling string
			for _, l := range lines {
				if strings.HasPrefix(l, "ceiling: ") {
					ceiling = l
					break
				}
			}
			if ceiling == "" || (c.rule != "" && !strings.HasPrefix(ceiling, "ceiling: "+c.rule+" — ")) {
				t.Errorf("ceiling line %q, want %q first:\n%s", ceiling, c.rule, out)
			}
			// Every verdict carries its evidence, inconclusive included.
			if !regexp.MustCompile(`(?m)^ceiling: .*\n(         .*\n)*  evidence: \S`).MatchString(out) {
				t.Errorf("no evidence line under the ceiling:\n%s", out)
			}
			for _, cs := range r.CPUs {
				if cs.CPU == r.BusiestCPU {
					want := fmt.Sprintf("hot core     cpu%d: %s ", cs.CPU, pct(r.HotShare(cs)))
					if !strings.Contains(out, want) || strings.Count(out, "hot core") != 1 {
						t.Errorf("hot core: want one line starting %q:\n%s", want, out)
					}
				}
			}
			if strings.Count(out, "throughput, ") != 1 || !strings.Contains(out, r.Units.RateUnitLong()) {
				t.Errorf("throughput table missing or not in %s:\n%s", r.Units.RateUnitLong(), out)
			}
		})
	}
}

// The hot core names the receive interrupts and RPS queues the manifest's
// queue map delivers to it; transmit interrupts and other CPUs' are not
// named.
func TestHotCoreFeeds(t *testing.T) {
	hot := func(_, c int) float64 { return map[bool]float64{true: 0.97, false: 0.05}[c == 1] }
	q0, q1 := 0, 1
	r := buildScenario(t, analysistest.Scenario{Softirq: hot, RateBps: flat(9e9)}, func(m *trace.Manifest) {
		m.Interfaces[1].Queues = &trace.QueueMap{
			RxQueues: []trace.Queue{{Index: 0}, {Index: 1, CPUs: "1,3"}},
			IRQs: []trace.IRQ{
				{IRQ: 38, Name: "virtio2-input.0", Direction: "rx", Queue: &q0, Affinity: "0-1", Effective: "1"},
				{IRQ: 39, Name: "virtio2-output.0", Direction: "tx", Queue: &q0, Affinity: "0-1", Effective: "1"},
				{IRQ: 40, Name: "virtio2-input.1", Direction: "rx", Queue: &q1, Affinity: "0-1", Effective: "0"},
			}}
	})
	var b strings.Builder
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	want := "fed by veth-b IRQ 38 virtio2-input.0 (rx queue 0, delivered to CPU 1); veth-b rx queue 1 by RPS (rps_cpus 1,3)"
	if got := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(got, want) || strings.Contains(got, "IRQ 39") ||
		strings.Contains(got, "IRQ 40") {
		t.Errorf("summary lacks %q or names other IRQs:\n%s", want, b.String())
	}
	if ev := strings.Join(r.Verdict(RuleSoftirq).Evidence, " "); !strings.Contains(ev, "IRQ 38 virtio2-input.0") {
		t.Errorf("softirq-bound evidence does not name IRQ 38: %s", ev)
	}
}

// summaryText builds the one-screen report of r.
func summaryText(t *testing.T, r *Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// summaryLine returns the one-screen line starting with prefix and its
// continuation lines, joined by single spaces; "" when there is none.
func summaryLine(out, prefix string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		got := l
		for _, c := range lines[i+1:] {
			if !strings.HasPrefix(c, "  ") || strings.TrimSpace(c) == "" || !strings.HasPrefix(c, strings.Repeat(" ", len(prefix))) {
				break
			}
			got += " " + strings.TrimSpace(c)
		}
		return got
	}
	return ""
}

// The RTT floor names the source it came from: with the socket iterator
// alone, the kernel's min_rtt_us (the scenario's RTTMinUs, 40 µs) is below
// every last-RTT sample (srtt = p50 = 80 µs), so the floor is min_rtt_us,
// not a sample; with tcp_probe samples reaching the same minimum, the
// floor is the lowest sample.
func TestSummaryRTTFloorSource(t *testing.T) {
	s := analysistest.Scenario{RTTMinUs: 40, RTTP50Us: func(int) uint32 { return 80 }}
	m, tabs, _ := iteratorOnly(t, s)
	r, err := BuildTables(m, tabs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "RTT floor    40 µs (kernel min_rtt_us, flows.min_rtt_us: its minimum over every ACK, whole run); " +
		"p50 80 µs (socket iterator's last RTT per flow-interval; their lowest 80 µs)"
	if got := summaryLine(summaryText(t, r), "RTT floor    "); got != want {
		t.Errorf("RTT floor line\n got %q\nwant %q", got, want)
	}
	r = scen(t, s, Options{})
	want = "RTT floor    40 µs (lowest sample: tcp_probe samples, all flows, whole run; kernel min_rtt_us the same); p50 80 µs"
	if got := summaryLine(summaryText(t, r), "RTT floor    "); got != want {
		t.Errorf("RTT floor line\n got %q\nwant %q", got, want)
	}
}

// A steady state above the rated speed is impossible: the one screen says
// so under the rated speed, with the rate the rule compared (the wire
// estimate: payload + 66 B of headers and 24 B of framing per 1448 B
// segment) and its share of the rated speed; a plausible one gets no
// warning.
func TestSummaryRatedTooLow(t *testing.T) {
	const streams, payloadBps = 4, 19.29e9
	per := uint64(payloadBps/8) / streams
	segs := (per + 1447) / 1448
	wireBps := float64(streams*(per+segs*(66+24))) * 8
	r := scen(t, analysistest.Scenario{Streams: streams, RatedMbps: 10_000, RateBps: flat(payloadBps)}, Options{})
	out := summaryText(t, r)
	want := fmt.Sprintf("rated link speed 10.00 Gbit/s (manifest rated_speed_mbps of veth-b)\n"+
		"  warning: steady state (rx wire estimate) %.2f Gbit/s is %.1f%% of it: the rated speed is too low\n",
		wireBps/1e9, 100*wireBps/10e9)
	if !strings.Contains(out, want) {
		t.Errorf("summary lacks\n%s\n%s", want, out)
	}
	out = summaryText(t, scen(t, analysistest.Scenario{RatedMbps: 10_000, RateBps: flat(9.3e9)}, Options{}))
	if strings.Contains(out, "warning:") {
		t.Errorf("warning at 9.3 Gbit/s of payload on a 10 Gbit/s link:\n%s", out)
	}
}

// No rule fires on a host whose CPUs are 99.2% busy behind a delay line
// that released 70% of its packets late (sending flows at ~62% of their
// window: neither window- nor sender-limited). The one screen says what
// the run shows — host busy share, busiest core, steady state and its
// flatness, window use, the late releases — and what would tell the
// causes apart; the figures are computed here from the scenario's inputs.
func TestSummaryInconclusiveCPUBusy(t *testing.T) {
	const streams, rateBps, p50Us, ratio, mss = 4, 10e9, 80, 0.6, 1448
	s := analysistest.Scenario{Streams: streams, RateBps: flat(rateBps), WindowRatio: ratio, RTTMinUs: 40,
		RTTP50Us: func(int) uint32 { return p50Us }, ProcStat: func(int, int) (float64, float64) { return 0.2, 0.992 }}
	r := buildWith(t, s, Options{}, func(m *trace.Manifest, _ []trace.CPURow) {
		m.Config["rtt_ns"] = float64(5e6)
		m.Config["delay_line"] = map[string]any{
			"a_to_b": map[string]any{"packets": float64(1000), "late_packets": float64(700), "max_late_ns": float64(75e6)},
			"b_to_a": map[string]any{"packets": float64(500), "late_packets": float64(350), "max_late_ns": float64(20e6)},
		}
	})
	if got := r.FiredVerdicts(); len(got) != 1 || got[0] != RuleInconclusive {
		t.Fatalf("fired %v, want inconclusive alone", got)
	}
	// rx interface (netlink): payload + 66 B of headers per 40-segment skb.
	per := uint64(rateBps/8) / streams
	skbs := ((per+mss-1)/mss + 39) / 40
	netlinkBps := float64(streams*(per+skbs*66)) * 8
	// Each stream's cwnd is what the scenario derives from its window ratio.
	cwnd := math.Floor(rateBps / streams / 8 * p50Us / 1e6 / (ratio * mss))
	used := rateBps / streams / (cwnd * mss * 8 / (p50Us / 1e6))
	out := summaryText(t, r)
	for prefix, want := range map[string]string{
		"ceiling: ": "ceiling: inconclusive — no rule's conditions hold, but the host's CPUs were 99.2% busy " +
			"(/proc/stat, steady state): they may be the ceiling, or the delay line (70.0% of packets released late)",
		"  evidence: ": fmt.Sprintf("  evidence: host CPUs 99.2%% busy (/proc/stat, steady state); busiest core CPU 0: "+
			"30.0%% in NET_RX softirq (BPF), 99.2%% busy (/proc/stat); steady state %.2f Gbit/s (rx interface) flat: "+
			"CV 0.0%% <= 5.0%% over 8 intervals; sending flows at a median %.1f%% of window / srtt; delay line: 70.0%% "+
			"of 1500 packets released late, up to 75.00 ms", netlinkBps/1e9, 100*used),
		"  next: ": "  next: twice the streams, then netprof analyze --compare of both runs: a window limit grows with " +
			"the streams, a CPU limit stays flat; a run without --rtt: a much faster veth pair on the same CPUs " +
			"means the user-space delay line is the ceiling",
	} {
		if got := summaryLine(out, prefix); got != want {
			t.Errorf("line %q\n got %q\nwant %q\n%s", prefix, got, want, out)
		}
	}
	// A run too short for the rate-limited rule says how long one must be.
	s.Intervals = 4
	out = summaryText(t, scen(t, s, Options{}))
	if got := summaryLine(out, "  next: "); !strings.HasSuffix(got, "; >= 5 intervals let the rate-limited rule judge flatness") ||
		strings.Contains(got, "--rtt") {
		t.Errorf("4 intervals, no delay line: next %q", got)
	}
}

// The header names the run's direction or mode (bidir, reverse, --rtt
// delay line, --peer) and its streams as they ran (a bidir run's streams
// go each way), and wraps between its parts, never inside one.
func TestSummaryHeader(t *testing.T) {
	const when, host = "10.0 s from 2026-01-01 00:00:00 UTC", "host vm (kernel 6.18.44-fc-v1045, 2 CPUs) · status ok"
	for name, c := range map[string]struct {
		config map[string]any
		want   string
	}{
		"send":    {nil, "netprof bench · 4 streams · " + when + "\n  " + host},
		"bidir":   {map[string]any{"direction": "bidir"}, "netprof bench · bidir, 4 streams each way (8 in all) · " + when + "\n  " + host},
		"reverse": {map[string]any{"direction": "reverse", "streams": float64(1)}, "netprof bench · reverse (the far end sends), 1 stream · " + when + "\n  " + host},
		"rtt":     {map[string]any{"rtt_ns": float64(5e6)}, "netprof bench · 4 streams · 5 ms delay line (--rtt) · " + when + "\n  " + host},
		"peer": {map[string]any{"peer": "10.0.0.5:5000", "direction": "bidir", "streams": float64(16)},
			"netprof bench · bidir, 16 streams each way (32 in all) · --peer 10.0.0.5:5000\n  " + when + " · " + host},
	} {
		t.Run(name, func(t *testing.T) {
			r := buildWith(t, analysistest.Scenario{}, Options{}, func(m *trace.Manifest, _ []trace.CPURow) {
				m.Host, m.Kernel = "vm", "6.18.44-fc-v1045"
				for k, v := range c.config {
					m.Config[k] = v
				}
			})
			if out := summaryText(t, r); !strings.HasPrefix(out, c.want+"\nrated link speed ") {
				t.Errorf("header is not\n%s\n%s", c.want, out)
			}
		})
	}
}

// A bidir run's application rows add both directions' payload (here 4
// streams each way, each direction 5 Gbit/s: the scenario's 10 Gbit/s of
// receiver rows), while an interface counts one direction: the rows say
// so, on the first screen and in the full report.
func TestSummaryBidirRows(t *testing.T) {
	r := buildWith(t, analysistest.Scenario{}, Options{}, func(m *trace.Manifest, _ []trace.CPURow) {
		m.Config["direction"] = "bidir"
	})
	out := summaryText(t, r)
	for _, want := range []string{
		"  rx application (receiver payload, both directions)",
		"  tx application (sender payload, both directions)",
		"  bidir: the application rows add both directions' payload (4 streams each way); each interface row\n" +
			"         counts one direction's data: rx what veth-b received, tx what veth-a sent\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if full := text(t, r); !strings.Contains(full, "\napplication (receiver payload, both directions)  ") ||
		!strings.Contains(full, "\n  bidir: the application rows add both directions' payload") {
		t.Errorf("full report lacks the bidir labels:\n%s", full)
	}
	// Other runs keep the plain labels and no bidir line.
	if out := summaryText(t, scen(t, analysistest.Scenario{}, Options{})); strings.Contains(out, "both directions") ||
		strings.Contains(out, "bidir") {
		t.Errorf("a one-way run mentions bidir:\n%s", out)
	}
}

// The last line names the run directory to pass to --full (shell-quoted
// when it needs it; RUN_DIR when unknown), and counts read in the singular
// where there is one: a note, a CPU, a stream, a dropped packet, one more
// drop reason or loss counter, a retransmitted segment.
func TestSummaryDetailsAndPlurals(t *testing.T) {
	r := buildWith(t, analysistest.Scenario{CPUs: 1, Streams: 1}, Options{}, nil)
	r.Notes = []string{"one note"}
	for dir, want := range map[string]string{
		"":              "details      netprof analyze --full RUN_DIR: per-CPU and per-flow tables, every verdict's evidence, 1 note",
		"/tmp/a1":       "details      netprof analyze --full /tmp/a1: per-CPU and per-flow tables, every verdict's evidence, 1 note",
		"/tmp/my run's": `details      netprof analyze --full '/tmp/my run'\''s': per-CPU and per-flow tables, every verdict's evidence, 1 note`,
	} {
		r.Dir = dir
		out := summaryText(t, r)
		if got := summaryLine(out, "details      "); got != want {
			t.Errorf("dir %q: details\n got %q\nwant %q", dir, got, want)
		}
		for _, want := range []string{"· 1 stream ·", "(kernel 6.18, 1 CPU)", "1 CPU online)"} {
			if !strings.Contains(out, want) {
				t.Errorf("summary lacks %q:\n%s", want, out)
			}
		}
	}
	r.Retx.Segments = 1
	if got := r.retxText(); !strings.HasPrefix(got, "1 segment sent again (") {
		t.Errorf("retransmits %q", got)
	}
	r.Drops = []DropReason{{Reason: "NO_SOCKET", Packets: 1, Class: DropLost}}
	if got := r.DropsLine(); !strings.HasPrefix(got, "1 lost (NO_SOCKET 1) (packets, skb:kfree_skb") {
		t.Errorf("drops %q", got)
	}
	for i := range 4 {
		r.Drops = append(r.Drops, DropReason{Reason: fmt.Sprint("R", i), Packets: 1, Class: DropLost})
		r.NICLoss = append(r.NICLoss, NICLoss{Ifname: "eth0", Counter: fmt.Sprint("c", i), Source: "netlink", Value: 1})
	}
	r.NICLoss = append(r.NICLoss, NICLoss{Ifname: "eth0", Counter: "c4", Source: "netlink", Value: 1})
	if got := r.DropsLine(); !strings.Contains(got, ", and 1 more reason)") {
		t.Errorf("drops %q", got)
	}
	if got := r.NICLossLine(); !strings.HasSuffix(got, " and 1 more counter") {
		t.Errorf("NIC loss %q", got)
	}
}
