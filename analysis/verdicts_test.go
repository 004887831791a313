package analysis

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// scen builds a Report from a synthetic scenario.
func scen(t *testing.T, s analysistest.Scenario, opts Options, blob ...BlobRow) *Report {
	t.Helper()
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic, Blob: blob}, opts)
	if err != nil {
		t.Fatalf("BuildTables: %v", err)
	}
	return r
}

// wantVerdict checks rule's status and that its text mentions each of subs.
func wantVerdict(t *testing.T, r *Report, rule string, status VerdictStatus, subs ...string) {
	t.Helper()
	v := r.Verdict(rule)
	if v.Status != status {
		t.Errorf("%s: status %q (%s; evidence %q), want %q", rule, v.Status, v.Summary, v.Evidence, status)
		return
	}
	all := v.Summary + "\n" + strings.Join(v.Evidence, "\n") + "\n" + strings.Join(v.Thresholds, "\n")
	for _, s := range subs {
		if !strings.Contains(all, s) {
			t.Errorf("%s: text lacks %q:\n%s", rule, s, all)
		}
	}
}

// hot puts CPU 0 at share in every interval.
func hot(share float64) func(int, int) float64 {
	return func(_, c int) float64 {
		if c == 0 {
			return share
		}
		return 0.1
	}
}

func TestRuleSoftirq(t *testing.T) {
	// CPU 0 at 95% NET_RX, 20 Gbit/s on a 100 Gbit/s link: fires.
	r := scen(t, analysistest.Scenario{Softirq: hot(0.95), RatedMbps: 100_000, RateBps: flat(20e9)}, Options{})
	wantVerdict(t, r, RuleSoftirq, Fired, "CPU 0 at 95.0%", ">= 90.0%")
	// 50%: no saturated core.
	r = scen(t, analysistest.Scenario{Softirq: hot(0.5), RatedMbps: 100_000, RateBps: flat(20e9)}, Options{})
	wantVerdict(t, r, RuleSoftirq, NotFired, "no CPU saturated")
	// Saturated core but the link at 95% of rated: wire-bound, not softirq.
	r = scen(t, analysistest.Scenario{Softirq: hot(0.95), RatedMbps: 10_000, RateBps: flat(9.2e9)}, Options{})
	wantVerdict(t, r, RuleSoftirq, NotFired, "wire-bound")
	// NAPI exhausting its budget in 70% of polls at 60% share: fires.
	r = scen(t, analysistest.Scenario{Softirq: hot(0.6), NapiExhausted: 0.7, RateBps: flat(20e9)}, Options{})
	wantVerdict(t, r, RuleSoftirq, Fired, "NAPI", "rated speed unknown")
	// No cpus rows: skipped.
	ifaces, _, flows, traffic := analysistest.Scenario{}.Tables()
	r, _ = BuildTables(analysistest.Scenario{}.Manifest(), Tables{Ifaces: ifaces, Flows: flows, Traffic: traffic}, Options{})
	wantVerdict(t, r, RuleSoftirq, Skipped, "probes off")
}

func flat(bps float64) func(int) float64 { return func(int) float64 { return bps } }

func TestRuleWire(t *testing.T) {
	// 9.3 Gbit/s payload on a 10 Gbit/s link: the wire estimate adds
	// ~6% of headers and framing → ~9.9 Gbit/s >= 90%.
	r := scen(t, analysistest.Scenario{RatedMbps: 10_000, RateBps: flat(9.3e9)}, Options{})
	wantVerdict(t, r, RuleWire, Fired, "wire estimate rx", "% of the rated 10.00 Gbit/s")
	r = scen(t, analysistest.Scenario{RatedMbps: 10_000, RateBps: flat(5e9)}, Options{})
	wantVerdict(t, r, RuleWire, NotFired, "link at")
	r = scen(t, analysistest.Scenario{RateBps: flat(9.3e9)}, Options{})
	wantVerdict(t, r, RuleWire, Skipped, "--link-speed")
	// --link-speed supplies the missing rated speed.
	r = scen(t, analysistest.Scenario{RateBps: flat(9.3e9)}, Options{LinkSpeedBps: 10e9})
	wantVerdict(t, r, RuleWire, Fired, "(--link-speed)")
}

func TestRuleRateLimited(t *testing.T) {
	base := analysistest.Scenario{Intervals: 12, RatedMbps: 100_000, RateBps: flat(5e9), RetxFraction: 0.02}
	wantVerdict(t, scen(t, base, Options{}), RuleRateLimited, Fired, "suspected", "2.000% of", "--compare")
	low := base
	low.RetxFraction = 0.0001
	wantVerdict(t, scen(t, low, Options{}), RuleRateLimited, NotFired, "retransmits not high")
	wavy := base
	wavy.RateBps = func(i int) float64 { return 5e9 * (1 + 0.3*float64(i%2)) }
	wantVerdict(t, scen(t, wavy, Options{}), RuleRateLimited, NotFired, "not flat")
	sat := base
	sat.Softirq = hot(0.97)
	wantVerdict(t, scen(t, sat, Options{}), RuleRateLimited, NotFired, "saturated")
	short := base
	short.Intervals = 3
	wantVerdict(t, scen(t, short, Options{}), RuleRateLimited, Skipped, "fewer than 3")
}

func TestRuleWindow(t *testing.T) {
	// Streams at 95% of cwnd × mss / srtt over 20 ms: window-limited.
	// 4 streams × 1 Gbit/s; window rate per stream 1/0.95 Gbit/s →
	// 80 Gbit/s needs ceil(80 / 1.0526) = 77 streams (cwnd rounding aside).
	s := analysistest.Scenario{RateBps: flat(4e9), WindowRatio: 0.95, RTTMinUs: 20000,
		RTTP50Us: func(int) uint32 { return 20600 }}
	r := scen(t, s, Options{TargetBps: 80e9})
	wantVerdict(t, r, RuleWindow, Fired, "4 of 4 sending flows", "streams at", "80.00 Gbit/s (--target)")
	if r.BDP.Streams < 75 || r.BDP.Streams > 78 {
		t.Errorf("streams needed = %d, want ~77", r.BDP.Streams)
	}
	// BDP = 4 Gbit/s (steady, receiver payload) × 20 ms = 10 MB.
	checkF(t, "BDP bytes", r.BDP.Bytes, 4e9/8*0.020)
	s.WindowRatio = 0.3
	r = scen(t, s, Options{})
	wantVerdict(t, r, RuleWindow, NotFired, "below their window")
	// In flight: the sending flows' steady windows summed (here ~3.4x the
	// BDP: windows allow 3.3x the rate at srtt 20.6 ms vs min RTT 20 ms).
	var sum float64
	var n int
	for _, f := range sendingFlows(r.Flows) {
		sum += f.WindowBytes
		n++
	}
	checkF(t, "in flight", r.BDP.InFlightBytes, sum)
	if r.BDP.InFlightFlows != n || n != 4 {
		t.Errorf("in-flight flows %d, want the %d sending flows (4)", r.BDP.InFlightFlows, n)
	}
	ev := strings.Join(bdpEvidence(r), "\n")
	for _, want := range []string{"what the path holds without queueing", "in flight: 4 sending flows kept " + r.Units.FormatBytes(sum),
		"3.4x the BDP", "or awaiting ACKs", "hence srtt 20.60 ms (median flow) over min RTT 20.00 ms"} {
		if !strings.Contains(ev, want) {
			t.Errorf("BDP evidence %q: want %q", ev, want)
		}
	}
	// A rated speed below the measured rate is no target, and the reason
	// says so rather than asking for the --link-speed that was given.
	s.RatedMbps = 1_000
	if r := scen(t, s, Options{}); r.BDP.Streams != 0 || !strings.Contains(r.BDP.Missing, "is below the measured rate; give --target") {
		t.Errorf("rated 1 Gbit/s under a 4 Gbit/s run: streams %d, missing %q", r.BDP.Streams, r.BDP.Missing)
	}
}

// A stream capped by its socket buffer (bench --window) under BBR: snd_cwnd
// is ~3x what it keeps in flight, so only the buffer explains the rate.
// 2 streams x 227 Mbit/s at srtt 10.6 ms; 256 KiB allows 198 Mbit/s each.
func TestRuleWindowSocketBuffer(t *testing.T) {
	s := analysistest.Scenario{Streams: 2, RateBps: flat(0.454e9), WindowRatio: 0.34, RTTMinUs: 10040,
		RTTP50Us: func(int) uint32 { return 10600 }}
	withWindow := func(w float64) *Report {
		t.Helper()
		m := s.Manifest()
		m.Config["socket_options"] = map[string]any{"window_bytes": w}
		ifaces, cpus, flows, traffic := s.Tables()
		r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{TargetBps: 1e9})
		if err != nil {
			t.Fatalf("BuildTables: %v", err)
		}
		return r
	}
	r := withWindow(256 << 10)
	wantVerdict(t, r, RuleWindow, Fired, "2 of 2 sending flows", "window 256 KiB (the socket buffer (--window), smaller than its snd_cwnd x mss)", "6 streams")
	wantVerdict(t, r, RuleSender, NotFired, "fill their window")
	checkF(t, "per-stream window", r.BDP.PerStreamWindow, 256<<10)
	// In flight: each flow's window is the 256 KiB buffer; 512 KiB is
	// (524.29 KB, decimal) below twice the BDP (570 KB), so nothing is
	// said to be queued.
	checkF(t, "in flight", r.BDP.InFlightBytes, 2*256<<10)
	if ev := strings.Join(bdpEvidence(r), "\n"); !strings.Contains(ev, "in flight: 2 sending flows kept 524.29 KB") || strings.Contains(ev, "queued") {
		t.Errorf("BDP evidence %q: want 2 flows, 512 KiB, nothing queued", ev)
	}
	// Without the buffer, or with one larger than snd_cwnd x mss, only
	// the congestion window counts: not window-limited.
	wantVerdict(t, scen(t, s, Options{}), RuleWindow, NotFired, "below their window")
	wantVerdict(t, withWindow(64<<20), RuleWindow, NotFired, "below their window")

	// 64 MiB asked, 256 KiB given by the kernel (rmem_max; the ends read
	// back, as bench records them): the window is the one it gave.
	m := s.Manifest()
	m.Config["socket_options"] = map[string]any{"window_bytes": float64(64 << 20)}
	m.Config["summary"] = map[string]any{"socket_options": map[string]any{"ends": []any{
		map[string]any{"so_sndbuf_usable_bytes": float64(4 << 20), "so_rcvbuf_usable_bytes": float64(256 << 10)},
		map[string]any{"so_sndbuf_usable_bytes": float64(4 << 20), "so_rcvbuf_usable_bytes": float64(256 << 10)}}}}
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{TargetBps: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, r, RuleWindow, Fired, "window 256 KiB (the socket buffer (--window as the kernel gave it)", "net.core.rmem_max and wmem_max")
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.Contains(n, "--window asked 64.0 MiB per socket, the kernel gave 256 KiB")
	}) {
		t.Errorf("notes lack the granted window: %q", r.Notes)
	}
}

func TestRuleStorage(t *testing.T) {
	s := analysistest.Scenario{Intervals: 6}
	m := s.Manifest()
	var blob []BlobRow
	for i := range 6 {
		n := uint64(0)
		if i >= 3 {
			n = 5
		}
		req := uint64(100)
		blob = append(blob, BlobRow{Time: m.Start.Add(time.Duration(i+1) * time.Second), IntervalNs: 1e9,
			Role: "receiver", Requests: &req, HTTP503: &n})
	}
	r := scen(t, analysistest.Scenario{Intervals: 6, RateBps: func(i int) float64 {
		if i >= 3 {
			return 5e9
		}
		return 10e9
	}}, Options{}, blob...)
	wantVerdict(t, r, RuleStorage, Fired, "15 of 600 requests answered 503, in 3 of 6 intervals", "without (-50.0%)")
	for i := range blob {
		z := uint64(0)
		blob[i].HTTP503 = &z
	}
	wantVerdict(t, scen(t, s, Options{}, blob...), RuleStorage, NotFired, "no 503s")
	wantVerdict(t, scen(t, s, Options{}), RuleStorage, Skipped, "no blob rows")
}

func TestRuleHairpin(t *testing.T) {
	far := analysistest.Scenario{RTTMinUs: 2000}
	wantVerdict(t, scen(t, far, Options{}), RuleHairpin, Fired, "peer 198.18.0.2: min RTT 2.00 ms", "on-link peer")
	// Judged on min RTT: a loaded p50 of 5 ms over a 40 µs floor is fine.
	loaded := analysistest.Scenario{RTTMinUs: 40, RTTP50Us: func(int) uint32 { return 5000 }}
	wantVerdict(t, scen(t, loaded, Options{}), RuleHairpin, NotFired, "min RTT <= 300 µs")
	// A remote peer with --expect-rtt 5ms: 2 ms is expected.
	wantVerdict(t, scen(t, far, Options{Thresholds: Thresholds{HairpinExpectRTT: 5 * time.Millisecond}}),
		RuleHairpin, NotFired)
	// A bench --rtt 2ms run asked for that RTT: not a hairpin.
	ifaces, cpus, flows, traffic := far.Tables()
	m := far.Manifest()
	m.Config = map[string]any{"rtt_ns": float64(2e6)}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantVerdict(t, r, RuleHairpin, NotFired)
}

func TestRuleSender(t *testing.T) {
	s := analysistest.Scenario{WindowRatio: 0.1, RatedMbps: 100_000}
	wantVerdict(t, scen(t, s, Options{}), RuleSender, Fired, "median 10.0% of their window")
	s.WindowRatio = 0.9
	wantVerdict(t, scen(t, s, Options{}), RuleSender, NotFired, "fill their window")
	s.WindowRatio, s.Softirq = 0.1, hot(0.95)
	wantVerdict(t, scen(t, s, Options{}), RuleSender, NotFired, "another limit")
}

func TestRuleInconclusive(t *testing.T) {
	// Window half used, no rated speed, nothing saturated, low RTT: no
	// rule fires, and inconclusive lists what was missing.
	r := scen(t, analysistest.Scenario{WindowRatio: 0.6}, Options{})
	wantVerdict(t, r, RuleInconclusive, Fired, "wire-bound: skipped, no rated speed", "storage-throttled: skipped")
	if got := r.FiredVerdicts(); len(got) != 1 || got[0] != RuleInconclusive {
		t.Errorf("fired = %v, want only inconclusive", got)
	}
	r = scen(t, analysistest.Scenario{Softirq: hot(0.95)}, Options{})
	wantVerdict(t, r, RuleInconclusive, NotFired)
}

// Flatness is judged on the interface counter when there is one: behind a
// shaper the wire rate is flat while goodput per interval jumps with loss
// recovery (measured on the HTB test bed: application CV 9.5%, netlink
// 1.2% in the same run). Without the interface counter the application
// counter decides.
func TestRuleRateLimitedFlatOnWire(t *testing.T) {
	base := analysistest.Scenario{Intervals: 12, RatedMbps: 100_000, RateBps: flat(5e9), RetxFraction: 0.02}
	r := scen(t, base, Options{})
	app, nl := r.Rx.Rate(CounterApp), r.Rx.Rate(CounterNetlink)
	if r.PrimaryDir != "rx" || r.Primary != app || nl == nil || nl.W == nil {
		t.Fatalf("scenario lacks rx application and netlink rates (primary %s %v)", r.PrimaryDir, r.Primary)
	}
	app.W.SteadyCV = 0.095
	f := newFacts(r, DefaultThresholds())
	if v := ruleRateLimited(f); !v.Fired() || !strings.Contains(strings.Join(v.Evidence, "\n"), "netlink") {
		t.Errorf("jittery goodput over a flat wire: %s %s %q", v.Status, v.Summary, v.Evidence)
	}
	nl.W.SteadyCV = 0.095
	if v := ruleRateLimited(f); v.Status != NotFired || v.Summary != "throughput not flat" {
		t.Errorf("jittery wire: %s %s", v.Status, v.Summary)
	}
	nl.W = nil
	app.W.SteadyCV = 0.01
	if v := ruleRateLimited(newFacts(r, DefaultThresholds())); !v.Fired() {
		t.Errorf("no interface counter, flat goodput: %s %s", v.Status, v.Summary)
	}
}

// With the kernel's chrono accounting the window rule names the window
// that held the streams, and the sender rule does not blame the
// application for it: a flow at 10% of its cwnd window whose sending time
// was 80% receive-window-limited is window-limited (the receiver's
// window), 80% send-buffer-limited likewise (its own buffer), 5% limited
// is the application's pace.
func TestRuleWindowChrono(t *testing.T) {
	s := analysistest.Scenario{WindowRatio: 0.1, RatedMbps: 100_000, Chrono: &[3]float64{0.2, 0.8, 0}}
	r := scen(t, s, Options{})
	wantVerdict(t, r, RuleWindow, Fired, "receiver's window held the streams 80.0% of their sending time",
		"80.0% limited by the receiver's window (tcp_rwnd_limited_us)")
	wantVerdict(t, r, RuleSender, NotFired, "another limit")
	s.Chrono = &[3]float64{0.1, 0.1, 0.8}
	r = scen(t, s, Options{})
	wantVerdict(t, r, RuleWindow, Fired, "own send buffer held them 80.0%", "tcp_wmem")
	wantVerdict(t, r, RuleSender, NotFired, "another limit")
	s.Chrono = &[3]float64{0.95, 0.03, 0.02}
	r = scen(t, s, Options{})
	wantVerdict(t, r, RuleWindow, NotFired)
	wantVerdict(t, r, RuleSender, Fired, "only 5.0% of its sending time, kernel chrono", "application or its CPU")
}

// With no sending flow on this host (a peer sent to it), the window rule
// judges on the generator streams' own chrono (traffic rows, TCP_INFO of
// each sending stream on either end); rows outside the steady state do not
// count.
func TestRuleWindowStreamChrono(t *testing.T) {
	s := analysistest.Scenario{RatedMbps: 100_000}
	ifaces, cpus, _, traffic := s.Tables()
	w := scen(t, s, Options{}).steady()
	for i := range traffic {
		x := &traffic[i]
		if x.Role != trace.RoleSender {
			continue
		}
		busy, rwnd, sndbuf := uint64(1_000_000), uint64(400_000), uint64(0)
		if !inWindow(x.Time, x.IntervalNs, w.SteadyStart, w.SteadyEnd) {
			rwnd = 0 // outside the steady state: must not count
		}
		x.TCPBusyUs, x.TCPRwndLimitedUs, x.TCPSndbufLimitedUs = &busy, &rwnd, &sndbuf
	}
	r, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.StreamChrono == nil || r.StreamChrono.Streams != 4 {
		t.Fatalf("stream chrono %+v", r.StreamChrono)
	}
	wantVerdict(t, r, RuleWindow, Fired, "receiver's window held the streams 40.0% of their sending time",
		"4 generator sending streams (traffic: TCP_INFO", "no sending flow on this host")
	for i := range traffic {
		if x := &traffic[i]; x.TCPRwndLimitedUs != nil {
			zero := uint64(0)
			x.TCPRwndLimitedUs = &zero
		}
	}
	r, _ = BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Traffic: traffic}, Options{})
	wantVerdict(t, r, RuleWindow, NotFired, "neither the receiver's window nor the send buffer held the streams (0.0% and 0.0%")
	r, _ = BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus}, Options{})
	wantVerdict(t, r, RuleWindow, Skipped)
}

// IPv6 control traffic (an MLD report to ff02::16, a duplicate address
// detection probe from ::) is no data flow: not in Flows or Peers, not
// counted as a sending flow, counted and summed in ControlFlows and
// ControlBytes, and a note says so.
func TestControlFlowsLeftOut(t *testing.T) {
	s := analysistest.Scenario{RateBps: flat(4e9)}
	ifaces, cpus, flows, traffic := s.Tables()
	plain, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := flows[0].Time
	flows = append(flows,
		trace.FlowRow{Time: at, IntervalNs: flows[0].IntervalNs, Netns: analysistest.SenderNetns, Ifindex: 2, Ifname: "veth-a",
			Family: 6, Proto: 58, SrcAddr: "fe80::1", DstAddr: "ff02::16", TxBytes: 110, TxPackets: 1},
		trace.FlowRow{Time: at, IntervalNs: flows[0].IntervalNs, Netns: analysistest.RecvNetns, Ifindex: 2, Ifname: "veth-b",
			Family: 6, Proto: 58, SrcAddr: "::", DstAddr: "ff02::1:ff00:2", TxBytes: 86, TxPackets: 1},
		trace.FlowRow{Time: at, IntervalNs: flows[0].IntervalNs, Netns: analysistest.RecvNetns, Ifindex: 2, Ifname: "veth-b",
			Family: 6, Proto: 58, SrcAddr: "ff02::16", DstAddr: "fe80::1", RxBytes: 110, RxPackets: 1})
	r, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Flows) != len(plain.Flows) || len(r.Peers) != len(plain.Peers) {
		t.Errorf("flows %d peers %d, want the data flows' %d and %d", len(r.Flows), len(r.Peers), len(plain.Flows), len(plain.Peers))
	}
	for _, f := range r.Flows {
		if strings.HasPrefix(f.Dst, "[ff02") || strings.HasPrefix(f.Src, "[ff02") || strings.HasPrefix(f.Src, "[::]") {
			t.Errorf("control flow %s -> %s among the flows", f.Src, f.Dst)
		}
	}
	if len(sendingFlows(r.Flows)) != len(sendingFlows(plain.Flows)) {
		t.Errorf("%d sending flows, want %d", len(sendingFlows(r.Flows)), len(sendingFlows(plain.Flows)))
	}
	if r.ControlFlows != 3 || r.ControlBytes != 306 {
		t.Errorf("control flows %d, %d B; want 3, 306 B", r.ControlFlows, r.ControlBytes)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.HasPrefix(n, "3 control flows with a multicast or unspecified end")
	}) {
		t.Errorf("notes %q: want the control flows' note", r.Notes)
	}
}
