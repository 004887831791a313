package analysis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// Problems a first user found; one test each.

// buildWith builds a scenario's report after edit changes its manifest and
// rows.
func buildWith(t *testing.T, s analysistest.Scenario, opts Options,
	edit func(m *trace.Manifest, cpus []trace.CPURow)) *Report {
	t.Helper()
	ifaces, cpus, flows, traffic := s.Tables()
	m := s.Manifest()
	if edit != nil {
		edit(&m, cpus)
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, opts)
	if err != nil {
		t.Fatalf("BuildTables: %v", err)
	}
	return r
}

// The window evidence multiplies out: the figures printed for the
// per-stream window are one flow's steady-state window, srtt and rate, so
// window x 8 / srtt = rate, even when srtt moves during the run (here
// 400 µs and 1200 µs in turns) and the last sample differs from the
// steady state. Before, the window was a median of time averages, the
// srtt a median of last samples: 1.05 MB at 47 µs printed as 14 Gbit/s.
func TestWindowEvidenceMultipliesOut(t *testing.T) {
	s := analysistest.Scenario{RateBps: flat(4e9), WindowRatio: 0.95, RTTMinUs: 300,
		RTTP50Us: func(i int) uint32 { return []uint32{400, 1200}[i%2] }}
	r := scen(t, s, Options{TargetBps: 80e9})
	d := r.BDP
	if d.PerStreamFlow == "" || d.SrttUs == 0 {
		t.Fatalf("no per-stream flow: %+v", d)
	}
	if got := d.PerStreamWindow * 8 / (d.SrttUs / 1e6); math.Abs(got/d.PerStreamBps-1) > 0.001 {
		t.Errorf("window %.0f B x 8 / srtt %.1f µs = %.4g bit/s, but per-stream rate %.4g bit/s", d.PerStreamWindow, d.SrttUs, got, d.PerStreamBps)
	}
	// Each stream: 1 Gbit/s at 95% of its window-limited rate (cwnd
	// rounding to whole segments aside).
	if got := d.PerStreamBps / 1e9; math.Abs(got*0.95-1) > 0.01 {
		t.Errorf("per-stream window-limited rate %.4f Gbit/s, want ~%.4f", got, 1/0.95)
	}
	wantVerdict(t, r, RuleWindow, Fired, "median flow by window-limited rate, 198.18.0.1:", "(steady state) = 1.05 Gbit/s per stream")
	for _, f := range r.Flows {
		if f.WindowBps > 0 && math.Abs(f.WindowBytes*8/(f.SteadySrttUs/1e6)/f.WindowBps-1) > 0.001 {
			t.Errorf("flow %s: window %.0f B / srtt %.1f µs does not give %.4g bit/s", f.Src, f.WindowBytes, f.SteadySrttUs, f.WindowBps)
		}
	}
	out := text(t, r)
	for _, want := range []string{"window (steady avg)", "srtt (steady)", "window x 8 / srtt", "last cwnd", "last srtt",
		"are the flow's last sample, not steady-state figures"} {
		if !strings.Contains(out, want) {
			t.Errorf("flows table lacks %q", want)
		}
	}
	b, _ := json.Marshal(r.JSON())
	for _, want := range []string{`"steady_state_srtt_us":`, `"per_stream_srtt_us":`, `"per_stream_flow":"198.18.0.1:`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
}

// busyHost puts every CPU at busy share (/proc/stat).
func busyHost(busy float64) func(int, int) (float64, float64) {
	return func(int, int) (float64, float64) { return 0.3, busy }
}

// On a host whose CPUs are >= 90% busy, cwnd follows what a CPU-bound
// sender sends: window/BDP-limited does not fire, unless a --window socket
// buffer holds the flows (that cap is real).
func TestRuleWindowCPUBound(t *testing.T) {
	s := analysistest.Scenario{RateBps: flat(4e9), WindowRatio: 0.95, RTTMinUs: 200, ProcStat: busyHost(0.97)}
	wantVerdict(t, scen(t, s, Options{}), RuleWindow, NotFired, "CPUs were 97.0% busy", "CPU is the limit", "host CPUs < 90.0% busy")
	s.ProcStat = busyHost(0.5)
	wantVerdict(t, scen(t, s, Options{}), RuleWindow, Fired)

	// The socket-buffer case of TestRuleWindowSocketBuffer on a busy host.
	sb := analysistest.Scenario{Streams: 2, RateBps: flat(0.454e9), WindowRatio: 0.34, RTTMinUs: 10040,
		RTTP50Us: func(int) uint32 { return 10600 }, ProcStat: busyHost(0.97)}
	r := buildWith(t, sb, Options{TargetBps: 1e9}, func(m *trace.Manifest, _ []trace.CPURow) {
		m.Config["socket_options"] = map[string]any{"window_bytes": float64(256 << 10)}
	})
	wantVerdict(t, r, RuleWindow, Fired, "2 of 2 sending flows", "(--window)")
}

// Flows at 163% of snd_cwnd x mss / srtt are not held by that window.
func TestRuleWindowAboveMax(t *testing.T) {
	s := analysistest.Scenario{RateBps: flat(4e9), WindowRatio: 1.63, RTTMinUs: 200}
	wantVerdict(t, scen(t, s, Options{}), RuleWindow, NotFired, "does not bind", "<= 130.0% of it", "4 above 130.0%")
	s.WindowRatio = 1.2
	wantVerdict(t, scen(t, s, Options{}), RuleWindow, Fired, "4 of 4 sending flows")
}

// The expected header share uses the family's IP+TCP header when the MSS
// is not MTU - 52 (bench --mss 1000 gave MSS 988: 512 B "IP+TCP" and
// 35.76% expected), and no Ethernet header or framing on a TUN device.
func TestExpectedHeaderGap(t *testing.T) {
	cases := []struct {
		mtu, mss, hdr int
		src           string
		pct           float64
	}{
		{1500, 1448, 52, "MTU - MSS", (1 - 1448.0/1538) * 100},
		{1500, 988, 52, "IPv4 20 + TCP 20 + 12 timestamps (MSS not derived from the MTU)", (1 - 988.0/1078) * 100},
		{65536, 65483, 52, "IPv4 20 + TCP 20 + 12 timestamps", (1 - 65483.0/65573) * 100},
	}
	for _, c := range cases {
		r := scen(t, analysistest.Scenario{MTU: c.mtu, MSS: c.mss}, Options{})
		g := r.Rx.Gap
		if g == nil {
			t.Fatalf("MTU %d MSS %d: no gap", c.mtu, c.mss)
		}
		if g.HeaderBytes != c.hdr || !strings.Contains(g.HeaderSource, c.src) || math.Abs(g.ExpectedPct-c.pct) > 0.005 {
			t.Errorf("MTU %d MSS %d: header %d B (%s), expected %.2f%%; want %d B (%s), %.2f%%",
				c.mtu, c.mss, g.HeaderBytes, g.HeaderSource, g.ExpectedPct, c.hdr, c.src, c.pct)
		}
		if !strings.Contains(g.Cause(), "52 B IP+TCP ("+c.src) {
			t.Errorf("cause %q", g.Cause())
		}
	}
	if c := scen(t, analysistest.Scenario{MSS: 988}, Options{}).Rx.Gap.Cause(); !strings.Contains(c, "= 8.35% expected") {
		t.Errorf("MSS 988 cause %q, want 8.35%% expected", c)
	}

	// A TUN device (bench --rtt's delay line): no L2 header, no framing.
	s := analysistest.Scenario{}
	r := buildWith(t, s, Options{}, func(m *trace.Manifest, _ []trace.CPURow) {
		for i := range m.Interfaces {
			m.Interfaces[i].Driver = "tuntap"
		}
	})
	g := r.Rx.Gap
	if !r.Rx.NoL2 || g == nil || !g.NoL2 || g.L2Bytes != 0 || g.FramingBytes != 0 {
		t.Fatalf("TUN: NoL2 %v, gap %+v", r.Rx.NoL2, g)
	}
	checkF(t, "TUN expected gap %", g.ExpectedPct, (1-1448.0/1500)*100)
	if !strings.Contains(g.Cause(), "no Ethernet header or framing (TUN device)") {
		t.Errorf("TUN cause %q", g.Cause())
	}
	for _, rt := range r.Rx.Rates {
		if strings.Contains(rt.Label, "incl. L2") || strings.Contains(rt.Label, "24 B") {
			t.Errorf("TUN row labelled %q", rt.Label)
		}
	}
	// Without framing the wire estimate is the bpf wire bytes alone.
	eth := scen(t, s, Options{})
	segs := float64(eth.Rx.Rate(CounterWire).W.TotalBytes-r.Rx.Rate(CounterWire).W.TotalBytes) / EthernetOverheadBytes
	if segs <= 0 {
		t.Errorf("TUN wire estimate %d B not below the Ethernet one %d B", r.Rx.Rate(CounterWire).W.TotalBytes, eth.Rx.Rate(CounterWire).W.TotalBytes)
	}
}

// Figures the run did not record are n/a with the reason, not 0: the
// busiest softirq core without the softirq probe, NAPI exhaustion without
// the napi probe, and the CV of a one-interval steady state in JSON.
func TestMissingNotZero(t *testing.T) {
	off := func(m *trace.Manifest, cpus []trace.CPURow) {
		m.Probes = []trace.Probe{
			{Name: "np_si_entry", Hook: "irq:softirq_entry", Reason: trace.ReasonNotSelected},
			{Name: "np_nd_napi", Hook: "napi:napi_poll", Reason: trace.ReasonNotSelected},
		}
		for i := range cpus {
			cpus[i].NetRxSoftirqNs, cpus[i].NetTxSoftirqNs, cpus[i].NapiPolls, cpus[i].NapiBudgetExhausted = nil, nil, nil, nil
		}
	}
	r := buildWith(t, analysistest.Scenario{WindowRatio: 0.1, RatedMbps: 100_000}, Options{}, off)
	want := "busiest softirq core: n/a (NET_RX softirq time not recorded: np_si_entry not attached: not selected (--probes))"
	wantVerdict(t, r, RuleSender, Fired, want)
	rl := buildWith(t, analysistest.Scenario{Intervals: 12, RatedMbps: 100_000, RateBps: flat(5e9), RetxFraction: 0.02}, Options{}, off)
	wantVerdict(t, rl, RuleRateLimited, Fired, want)
	out := text(t, r)
	if !strings.Contains(out, "n/a (np_nd_napi not attached: not selected (--probes))") {
		t.Errorf("NAPI cell does not name the unselected probe:\n%s", out)
	}
	if strings.Contains(out, "at 0.0% NET_RX") {
		t.Errorf("report prints an unrecorded NET_RX share as 0.0%%")
	}

	for _, c := range []struct {
		intervals int
		null      bool
	}{{3, true}, {10, false}} {
		b, _ := json.Marshal(scen(t, analysistest.Scenario{Intervals: c.intervals}, Options{}).JSON())
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		app := m["throughput"].(map[string]any)["rx"].(map[string]any)["application"].(map[string]any)
		if cv, ok := app["steady_state_cv_pct"]; !ok || (cv == nil) != c.null {
			t.Errorf("%d intervals (%v steady): steady_state_cv_pct = %v, want null %v", c.intervals, app["steady_state_intervals"], cv, c.null)
		}
	}
}

// A steady state above the rated speed means the rated speed is wrong:
// `analyze --link-speed 36Gbit` on a 37 Gbit/s run says so, and wire-bound
// is skipped (cannot be judged) instead of firing.
func TestRatedSpeedTooLow(t *testing.T) {
	s := analysistest.Scenario{RateBps: flat(35e9)} // wire estimate ~37.2 Gbit/s
	r := scen(t, s, Options{LinkSpeedBps: 36e9})
	wantVerdict(t, r, RuleWire, Skipped, "the rated 36.00 Gbit/s (--link-speed) is below the measured 37.",
		"cannot be judged", "looks wrong (too low)")
	if !strings.Contains(strings.Join(r.Notes, "\n"), "rated link speed looks wrong") {
		t.Errorf("no note on the rated speed: %q", r.Notes)
	}
	// At 95% of a right rated speed: no warning.
	r = scen(t, s, Options{LinkSpeedBps: 39e9})
	wantVerdict(t, r, RuleWire, Fired, "the wire is the ceiling")
	if strings.Contains(strings.Join(r.Notes, "\n"), "looks wrong") {
		t.Errorf("warning at 95%% of rated: %q", r.Notes)
	}

	// The user's veth run: --link-speed 10Gbit at ~370% of it on a
	// 97%-busy host. Wire-bound is skipped and the other rules judge as if
	// no rated speed were known: the sender verdict fires, and the BDP
	// target is not the too-low rated speed.
	s = analysistest.Scenario{RateBps: flat(35e9), WindowRatio: 0.1, Softirq: hot(0.08), ProcStat: procStat(0.97, 0.35, 0.2)}
	r = scen(t, s, Options{LinkSpeedBps: 10e9})
	wantVerdict(t, r, RuleWire, Skipped, "the rated 10.00 Gbit/s (--link-speed) is below the measured")
	wantVerdict(t, r, RuleSender, Fired, "the sender is CPU-bound on this host")
	wantVerdict(t, r, RuleSoftirq, NotFired, "the rated speed is too low, utilisation not checked")
	if fired := r.FiredVerdicts(); len(fired) != 1 || fired[0] != RuleSender {
		t.Errorf("fired %v, want only %s", fired, RuleSender)
	}
	if r.BDP.TargetBps != 0 {
		t.Errorf("BDP target %g (%s) from a rated speed below the measured rate", r.BDP.TargetBps, r.BDP.TargetSource)
	}
}

// The RTT distribution covers the tail: its bins reach the max RTT and
// carry the per-interval p99s, not only the p50s.
func TestRTTHistTail(t *testing.T) {
	r := scen(t, analysistest.Scenario{RTTMinUs: 40, RTTP50Us: func(i int) uint32 { return 100 + uint32(i) }}, Options{})
	h := r.RTTHist
	if len(h) == 0 || r.RTT == nil {
		t.Fatal("no RTT histogram")
	}
	if last := h[len(h)-1]; last.HiUs <= r.RTT.MaxUs || h[0].LoUs > r.RTT.MinUs {
		t.Errorf("bins %d-%d µs do not span min %d to max %d µs", h[0].LoUs, last.HiUs, r.RTT.MinUs, r.RTT.MaxUs)
	}
	var p50, p99 uint64
	for _, b := range h {
		p50, p99 = p50+b.Samples, p99+b.P99Samples
	}
	if p50 != r.RTT.Samples || p99 != r.RTT.Samples {
		t.Errorf("binned p50 samples %d, p99 samples %d, want %d each", p50, p99, r.RTT.Samples)
	}
}

// Loopback (blob runs against a local server) has no wire: no framing is
// added to its wire estimate, its netlink counter is labelled as IP packets
// (lo counts after eth_type_trans), and the expected gap keeps the 14 B
// Ethernet header its skbs carry. Found by the manifest's driver
// "loopback" or, failing that, the name "lo".
func TestLoopbackFraming(t *testing.T) {
	s := analysistest.Scenario{MTU: 65536, MSS: 65483}
	byName := func() *Report { // bench's manifest: driver "device"
		ifaces, cpus, flows, traffic := s.Tables()
		for i := range ifaces {
			ifaces[i].Ifname, ifaces[i].Driver = "lo", "device"
		}
		m := s.Manifest()
		for i := range m.Interfaces {
			m.Interfaces[i].Name, m.Interfaces[i].Driver = "lo", "device"
		}
		r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	byDriver := buildWith(t, s, Options{}, func(m *trace.Manifest, _ []trace.CPURow) {
		for i := range m.Interfaces {
			m.Interfaces[i].Driver = "loopback"
		}
	})
	eth := scen(t, s, Options{})
	for name, r := range map[string]*Report{"name lo": byName(), "driver loopback": byDriver} {
		g := r.Rx.Gap
		if !r.Rx.Loopback || r.Rx.NoL2 || g == nil || !g.Loopback || g.L2Bytes != EthernetHeaderBytes || g.FramingBytes != 0 {
			t.Fatalf("%s: Loopback %v NoL2 %v, gap %+v", name, r.Rx.Loopback, r.Rx.NoL2, g)
		}
		checkF(t, name+" expected gap %", g.ExpectedPct, (1-65483.0/(65483+52+14))*100)
		if c := g.Cause(); !strings.Contains(c, "+ 14 B Ethernet header per full segment, no framing (loopback)") || strings.Contains(c, "preamble") {
			t.Errorf("%s: cause %q", name, c)
		}
		for _, rt := range r.Rx.Rates {
			if strings.Contains(rt.Label, "incl. L2") || strings.Contains(rt.Label, "24 B") {
				t.Errorf("%s: row labelled %q", name, rt.Label)
			}
		}
		if got, want := r.Rx.Rate(CounterWire).Label, "wire estimate rx (lo, loopback: no framing)"; name == "name lo" && got != want {
			t.Errorf("%s: wire row %q, want %q", name, got, want)
		}
		if r.Rx.Rate(CounterWire).W.TotalBytes >= eth.Rx.Rate(CounterWire).W.TotalBytes {
			t.Errorf("%s: wire estimate %d B not below the Ethernet one %d B", name, r.Rx.Rate(CounterWire).W.TotalBytes, eth.Rx.Rate(CounterWire).W.TotalBytes)
		}
	}
}

// The streams-needed figure says "1 stream", not "1 streams".
func TestStreamsNeededSingular(t *testing.T) {
	r := scen(t, analysistest.Scenario{}, Options{TargetBps: 1e9})
	ev := strings.Join(bdpEvidence(r), "\n")
	if r.BDP.Streams != 1 || !strings.Contains(ev, ": 1 stream at ") {
		t.Errorf("streams %d, evidence %q; want \": 1 stream at \"", r.BDP.Streams, ev)
	}
	if got := streamsText(4); got != "4 streams" {
		t.Errorf("streamsText(4) = %q", got)
	}
	// The text says what the RTT samples are against srtt, and what
	// /proc/stat's resolution is.
	var buf strings.Builder
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 stream at ", "the samples are tp->rack.rtt_us at tcp_probe", "(tp->srtt_us) is smoothed",
		"tick-sampled, reported in 10 ms units (USER_HZ)",
		"a final partial interval counts in peak, active window and p50/p95 if >= 1/10 of the usual interval"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
}
