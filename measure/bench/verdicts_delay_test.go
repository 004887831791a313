package bench

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// reanalyze analyses run again with opts, as `netprof analyze` with flags
// does.
func reanalyze(t *testing.T, run *trace.Run, opts analysis.Options) *analysis.Report {
	t.Helper()
	r, err := analysis.Analyze(run, opts)
	if err != nil {
		t.Fatalf("analyze: %v", err)
	}
	return r
}

// senderRates returns each sending stream's rate by the generator's own
// count (traffic.app_bytes of the sender rows), bit/s: the median interval
// without the first and the last, keyed by the stream's local address.
func senderRates(t *testing.T, run *trace.Run) map[string]float64 {
	t.Helper()
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]float64{}
	for _, r := range rows {
		if r.Role == trace.RoleSender && r.IntervalNs > 0 {
			per[r.LocalAddr] = append(per[r.LocalAddr], float64(r.AppBytes)*8e9/float64(r.IntervalNs))
		}
	}
	out := map[string]float64{}
	for addr, v := range per {
		if len(v) < 3 {
			t.Fatalf("stream %s has %d intervals, want at least 3", addr, len(v))
		}
		v = slices.Sorted(slices.Values(v[1 : len(v)-1]))
		out[addr] = v[len(v)/2]
	}
	return out
}

// minConnect returns the smallest of n TCP connect times from A to B: one
// round trip through the bed's path, measured by the test itself.
func minConnect(t *testing.T, bed *testbed.Bed, n int) time.Duration {
	t.Helper()
	return dialTimes(t, bed, n)[0]
}

// Ground truth: the socket buffer the run set (256 KiB, bench --window), the
// round trip the test measures itself through the same delay line (TCP
// connect time) and the generator's own byte counts. Over a 10 ms delay
// line (bench --rtt 10ms) each stream is capped at about window / RTT
// (~0.2 Gbit/s), far below what the line carries: window/BDP-limited fires
// and its streams-needed figure (for --target 1Gbit) agrees with window /
// RTT; each generator stream runs at 0.7–2× window / connect RTT (the
// kernel doubles the buffer for its overhead, so at most 2× can be in
// flight; the line adds RTT when the machine is loaded, hence 0.7); the
// report's per-flow rates match the generator's. The RTT was
// asked for, so hairpin suspected must not fire.
func TestVerdictWindowLimited(t *testing.T) {
	requireBench(t, true)
	const window = 256 << 10
	cfg, r, run, ct := windowRun(t, window)

	expect := window * 8 / ct.Seconds() // bit/s per stream
	gen := senderRates(t, run)
	t.Logf("connect RTT %v; window / RTT %.0f Mbit/s; generator per stream %v bit/s; report min RTT %d µs, per-stream window rate %.0f Mbit/s, %d streams for 1 Gbit/s",
		ct, expect/1e6, gen, r.BDP.MinRTTUs, r.BDP.PerStreamBps/1e6, r.BDP.Streams)
	v := wantVerdict(t, r, analysis.RuleWindow, analysis.Fired)
	t.Logf("%s: %s: %s\n  %s", v.Rule, v.Status, v.Summary, strings.Join(v.Evidence, "\n  "))
	checkWindowEvidence(t, v, r, expect)
	if len(gen) != cfg.Streams {
		t.Fatalf("%d sending streams in the traffic rows, want %d", len(gen), cfg.Streams)
	}
	for addr, g := range gen {
		if g < 0.7*expect || g > 2*expect {
			t.Errorf("stream %s: generator rate %.0f Mbit/s, want 0.7–2× window / RTT = %.0f Mbit/s", addr, g/1e6, expect/1e6)
		}
		checkFlowRate(t, r, run, addr)
	}
	if floor := float64(r.BDP.MinRTTUs); floor < float64(cfg.RTT.Microseconds()) || floor > 1.1*float64(ct.Microseconds()) {
		t.Errorf("report min RTT %.0f µs: want between the line's %v and 1.1× the connect time %v", floor, cfg.RTT, ct)
	}
	h := wantVerdict(t, r, analysis.RuleHairpin, analysis.NotFired)
	if !strings.Contains(strings.Join(h.Thresholds, " "), "10.00 ms expected") {
		t.Errorf("hairpin thresholds %q do not expect the asked-for 10 ms", h.Thresholds)
	}
}

// windowRun runs 2 streams for 4 s over a 10 ms delay line with --window
// window and the default probes, and returns the config, the report (for
// a 1 Gbit/s target), the run and the test's own connect-time RTT.
func windowRun(t *testing.T, window int) (Config, *analysis.Report, *trace.Run, time.Duration) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Probes = probeset.Default
	cfg.RTT, cfg.Streams, cfg.Duration = 10*time.Millisecond, 2, 4*time.Second
	cfg.SockOpts.Window = window
	bed := rttBed(t, cfg)
	ct := minConnect(t, bed, 10)
	_, run := mustRun(t, cfg, bed, "")
	return cfg, reanalyze(t, run, analysis.Options{TargetBps: 1e9}), run, ct
}

// checkWindowEvidence checks the window verdict names both flows, the
// socket buffer and the streams needed for the target, and that the
// per-stream window rate it used is window / RTT.
func checkWindowEvidence(t *testing.T, v analysis.Verdict, r *analysis.Report, expect float64) {
	t.Helper()
	ev := strings.Join(v.Evidence, "\n")
	d := r.BDP
	want := []string{"2 of 2 sending flows", "(--window)", fmt.Sprintf("needs %s in flight: %d streams at",
		r.Units.FormatBytes(d.TargetBytes), d.Streams)}
	for _, w := range want {
		if !strings.Contains(ev, w) {
			t.Errorf("window evidence lacks %q:\n%s", w, ev)
		}
	}
	// The rule divides by srtt: at least the path's RTT, and a line
	// starved of CPU adds a few ms (seen: 14.6 ms srtt at 10.1 ms min),
	// so the rate it expects is 0.5–1.1× window / connect RTT.
	if d.PerStreamBps < 0.5*expect || d.PerStreamBps > 1.1*expect {
		t.Errorf("per-stream window rate %.0f Mbit/s, want 0.5–1.1× window / RTT = %.0f Mbit/s", d.PerStreamBps/1e6, expect/1e6)
	}
	if want := int(math.Ceil(1e9 / d.PerStreamBps)); d.Streams != want {
		t.Errorf("streams needed %d, want ceil(1 Gbit/s / %.0f Mbit/s) = %d", d.Streams, d.PerStreamBps/1e6, want)
	}
}

// checkFlowRate compares the report's steady rate of the sending flow from
// addr (default probes: the socket's tcp_bytes_acked over the steady-state
// intervals, payload; deep: BPF tx bytes, L2 frames, whose GSO skb headers
// count once, ~0.1% of 64 KB) with the generator's own payload over exactly
// the same intervals (traffic rows whose interval the steady state
// covers). The writes may run ahead of the acks by up to the 256 KiB
// socket buffer (~5% of a 1 s interval at 200 Mbit/s): within 5%.
func checkFlowRate(t *testing.T, r *analysis.Report, run *trace.Run, addr string) {
	t.Helper()
	w := r.Primary.W
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	var app uint64
	var ns int64
	for _, row := range rows {
		if row.Role == trace.RoleSender && row.LocalAddr == addr && w.InSteady(row.Time, row.IntervalNs) {
			app, ns = app+row.AppBytes, ns+row.IntervalNs
		}
	}
	if ns == 0 {
		t.Fatalf("stream %s: no traffic rows in the steady state %v to %v", addr, w.SteadyStart, w.SteadyEnd)
	}
	gen := float64(app) * 8e9 / float64(ns)
	for _, f := range r.Flows {
		if f.Sending && f.Src == addr {
			if q := f.SteadyBps / gen; q < 0.95 || q > 1.05 {
				t.Errorf("flow %s: report steady rate %.1f Mbit/s = %.3f× the generator's payload %.1f Mbit/s over the same intervals, want 0.95–1.05×",
					addr, f.SteadyBps/1e6, q, gen/1e6)
			}
			return
		}
	}
	t.Errorf("no sending flow from %s in the report", addr)
}

var hairpinPeer = regexp.MustCompile(`^peer (\S+): min RTT ([0-9.]+) (ms|µs)`)

// hairpinRun records a short run over bed, paced at 1 Gbit/s per stream to
// spare the shared machine, with no RTT declared; it returns the trace and
// the connect time measured before it.
func hairpinRun(t *testing.T, bed *testbed.Bed) (*trace.Run, time.Duration) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Probes = probeset.Default
	cfg.Streams, cfg.Duration, cfg.SockOpts.PacingRate = 2, 3*time.Second, units.Gbps
	ct := minConnect(t, bed, 10)
	_, run := mustRun(t, cfg, bed, "")
	if _, ok := run.Manifest.Config["rtt_ns"]; ok {
		t.Fatalf("manifest declares an RTT: %v", run.Manifest.Config)
	}
	return run, ct
}

// Ground truth: the path's round trip measured by the test (TCP connect
// time) and the delay line's configured delay.
//
// A direct veth pair: the peer's min RTT is µs (below the 300 µs limit,
// and at most the connect time): hairpin does not fire.
//
// The same run through a 2 ms-each-way delay line the run does not declare
// (no bench --rtt): hairpin fires, naming peer B with a min RTT of at least
// the line's 4 ms round trip and at most 1.1× the connect time, and equal
// to the report's own figure for the peer (judged on min RTT, not the
// loaded p50). Analysed again expecting the line's round trip (analyze
// --expect-rtt 4ms) it does not fire.
func TestVerdictHairpin(t *testing.T) {
	requireBench(t, true)
	t.Run("veth", func(t *testing.T) {
		bed := testbedtest.New(t, testbed.Options{})
		run, ct := hairpinRun(t, bed)
		r := reanalyze(t, run, analysis.Options{})
		floor := peerFloor(t, r, bed.B().Addr.String())
		t.Logf("veth: connect %v, peer min RTT %d µs", ct, floor)
		wantVerdict(t, r, analysis.RuleHairpin, analysis.NotFired)
		if floor >= 300 || time.Duration(floor)*time.Microsecond > ct {
			t.Errorf("peer min RTT %d µs, connect time %v: want under 300 µs and at most the connect time", floor, ct)
		}
	})
	t.Run("undeclared delay", func(t *testing.T) {
		const oneWay = 2 * time.Millisecond
		bed := testbedtest.New(t, testbed.Options{Delay: oneWay, Sysctls: RTTSysctls})
		run, ct := hairpinRun(t, bed)
		r := reanalyze(t, run, analysis.Options{})
		peer := bed.B().Addr.String()
		floor := peerFloor(t, r, peer)
		v := wantVerdict(t, r, analysis.RuleHairpin, analysis.Fired)
		t.Logf("delay %v each way: connect %v, peer min RTT %d µs; evidence %q", oneWay, ct, floor, v.Evidence)
		checkHairpinEvidence(t, v, peer, floor)
		if us := float64(floor); us < float64((2*oneWay).Microseconds()) || us > 1.1*float64(ct.Microseconds()) {
			t.Errorf("peer min RTT %d µs: want between the line's %v and 1.1× the connect time %v", floor, 2*oneWay, ct)
		}
		th := analysis.DefaultThresholds()
		th.HairpinExpectRTT = 2 * oneWay
		wantVerdict(t, reanalyze(t, run, analysis.Options{Thresholds: th}), analysis.RuleHairpin, analysis.NotFired)
	})
}

// peerFloor returns the report's min RTT of peer (µs), failing without
// enough samples to be judged.
func peerFloor(t *testing.T, r *analysis.Report, peer string) uint32 {
	t.Helper()
	for _, p := range r.Peers {
		if p.Peer == peer && analysis.DefaultThresholds().EnoughRTT(p.RTT) {
			return p.RTT.FloorUs()
		}
	}
	t.Fatalf("no peer %s with RTT samples in %+v", peer, r.Peers)
	return 0
}

// checkHairpinEvidence checks that an evidence line names peer with floor
// µs as printed (ms with two decimals). Other lines may name the other end:
// with the socket iterator the receiver's socket has the kernel's min RTT
// too (its own few segments were acknowledged over the same line).
func checkHairpinEvidence(t *testing.T, v analysis.Verdict, peer string, floor uint32) {
	t.Helper()
	if len(v.Evidence) == 0 {
		t.Fatal("hairpin fired without evidence")
	}
	for _, e := range v.Evidence {
		m := hairpinPeer.FindStringSubmatch(e)
		if m == nil || m[1] != peer {
			continue
		}
		ms, err := strconv.ParseFloat(m[2], 64)
		if m[3] != "ms" || err != nil || math.Abs(ms*1000-float64(floor)) > 5 {
			t.Errorf("evidence %q: min RTT %s %s, report floor %d µs", e, m[2], m[3], floor)
		}
		return
	}
	t.Fatalf("no evidence line names peer %s with its min RTT: %q", peer, v.Evidence)
}

// The window rule names the window that held the streams from the kernel's
// own chrono accounting (socket iterator, default probes). Ground truth:
// the buffer the test itself capped in one namespace over a 10 ms delay
// line — the receiver's tcp_rmem (its advertised window) or the sender's
// tcp_wmem (its send buffer), 64 KiB each — and the generator's own rate,
// which such a window holds near window / RTT.
func TestVerdictWindowNamesTheWindow(t *testing.T) {
	requireBench(t, true)
	for _, c := range []struct {
		name, sysctl, want string
		receiver           bool
	}{
		{"receiver window", "net.ipv4.tcp_rmem", "the receiver's window held the streams", true},
		{"send buffer", "net.ipv4.tcp_wmem", "own send buffer held them", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Probes = probeset.Default
			cfg.RTT, cfg.Streams, cfg.Duration = 10*time.Millisecond, 2, 4*time.Second
			bed := rttBed(t, cfg)
			h := bed.A()
			if c.receiver {
				h = bed.B()
			}
			if err := h.SetSysctl(c.sysctl, "4096 65536 65536"); err != nil {
				t.Fatal(err)
			}
			ct := minConnect(t, bed, 5)
			_, run := mustRun(t, cfg, bed, "")
			r := reanalyze(t, run, analysis.Options{})
			v := wantVerdict(t, r, analysis.RuleWindow, analysis.Fired)
			t.Logf("%s: %s\n  %s", v.Rule, v.Summary, strings.Join(v.Evidence, "\n  "))
			if !strings.Contains(v.Summary, c.want) {
				t.Errorf("window verdict %q does not say %q", v.Summary, c.want)
			}
			wantVerdict(t, r, analysis.RuleSender, analysis.NotFired)
			// 64 KiB over the measured RTT, and the kernel's buffer
			// accounting lets at most ~2x that be in flight.
			limit := float64(64<<10) * 8 / ct.Seconds()
			for addr, g := range senderRates(t, run) {
				if g > 2*limit {
					t.Errorf("stream %s: %.0f Mbit/s, above 2x 64 KiB / %v = %.0f Mbit/s: the capped buffer did not hold it",
						addr, g/1e6, ct, 2*limit/1e6)
				}
			}
		})
	}
}

// --window 4 MiB with net.core.rmem_max and wmem_max at 256 KiB (set by the
// test, restored after): the kernel gives each socket 256 KiB, and the
// window rule judges the streams on that (the usable SO_RCVBUF/SO_SNDBUF
// bench read back), naming the caps to raise; each stream runs at about
// 256 KiB per round trip (the test's own connect time), not 4 MiB's.
func TestVerdictWindowClampedByKernel(t *testing.T) {
	requireBench(t, true)
	const granted, asked = 256 << 10, 4 << 20
	for _, k := range []string{"rmem_max", "wmem_max"} {
		path := "/proc/sys/net/core/" + k
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Errorf("restore %s: %v", k, err)
			}
		})
		if err := os.WriteFile(path, []byte(strconv.Itoa(granted)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, r, run, ct := windowRun(t, asked)
	v := wantVerdict(t, r, analysis.RuleWindow, analysis.Fired)
	t.Logf("%s: %s\n  %s", v.Rule, v.Summary, strings.Join(v.Evidence, "\n  "))
	if !strings.Contains(v.Summary, "net.core.rmem_max and wmem_max") {
		t.Errorf("window verdict %q does not name the caps to raise", v.Summary)
	}
	if r.BDP.SocketWindow != granted || !r.BDP.SocketWindowGranted {
		t.Errorf("socket window %.0f (granted %v), want the %d bytes the kernel gave", r.BDP.SocketWindow, r.BDP.SocketWindowGranted, granted)
	}
	expect := float64(granted) * 8 / ct.Seconds()
	for addr, g := range senderRates(t, run) {
		if g < 0.7*expect || g > 2*expect {
			t.Errorf("stream %s: generator rate %.0f Mbit/s, want 0.7-2x 256 KiB / %v = %.0f Mbit/s", addr, g/1e6, ct, expect/1e6)
		}
	}
}
