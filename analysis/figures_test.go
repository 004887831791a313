package analysis

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// A counter that went backwards shows as a huge unsigned delta: the
// interval is excluded and noted, never a huge or negative rate.
func TestImplausibleDeltaExcluded(t *testing.T) {
	s := analysistest.Scenario{RatedMbps: 10_000, RateBps: flat(5e9)}
	ifaces, cpus, flows, traffic := s.Tables()
	for i := range ifaces {
		if ifaces[i].Ifname == "veth-b" && ifaces[i].Time.Equal(s.Manifest().Start.Add(4e9)) {
			ifaces[i].RxBytes = math.MaxUint64 - 1000 // went back by 1001 bytes
		}
	}
	r, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := r.Rx.Rate(CounterNetlink).W
	if w.Intervals != 9 || w.PeakBps > 5.1e9 {
		t.Errorf("netlink rx: %d intervals, peak %g; want 9 intervals (one excluded), peak ~5e9", w.Intervals, w.PeakBps)
	}
	if !hasNote(r, "ifaces.rx_bytes of veth-b: 1 interval(s) excluded") || !hasNote(r, "10 x the rated 10.00 Gbit/s") {
		t.Errorf("notes %q lack the exclusion", r.Notes)
	}
}

// Each interval's rate divides by its own interval_ns.
func TestOwnIntervalLength(t *testing.T) {
	pts := []Point{{at(1), sec(1), 125_000_000}, {at(3), sec(2), 250_000_000}, {at(3.5), sec(0.5), 62_500_000}}
	for _, p := range pts {
		checkF(t, "rate", p.RateBps(), 1e9)
	}
	w := ComputeWindows(pts, t0, at(3.5))
	checkF(t, "p50", w.P50Bps, 1e9)
	checkF(t, "p95", w.P95Bps, 1e9)
}

// The wire estimate adds 24 B per segment to bpf wire bytes; the gap to
// the payload matches the headers at MTU 1500 / MSS 1448.
func TestWireEstimateAndGap(t *testing.T) {
	r := scen(t, analysistest.Scenario{RateBps: flat(8e9)}, Options{})
	// Per interval: 1e9 B payload in 4 streams of 250e6 B = 172,652
	// segments each (ceil(250e6/1448)); wire = payload + segs × 66 +
	// 24 × segs.
	segs := 4.0 * math.Ceil(250e6/1448)
	checkF(t, "wire steady", r.Rx.Rate(CounterWire).W.SteadyBps, (1e9+segs*90)*8)
	g := r.Rx.Gap
	if g == nil || g.MTU != 1500 || g.MSS != 1448 {
		t.Fatalf("gap = %+v", g)
	}
	checkF(t, "expected gap", g.ExpectedPct, (1-1448.0/1538)*100)
	if math.Abs(g.Pct-g.ExpectedPct) > 0.01 {
		t.Errorf("gap %.3f%%, expected %.3f%%", g.Pct, g.ExpectedPct)
	}
	out := text(t, r)
	if !strings.Contains(out, "5.85% expected") || !strings.Contains(out, "52 B IP+TCP") {
		t.Errorf("report lacks the gap's cause:\n%s", out)
	}
}

// Binary units print Gibit/s and GiB/s, and no decimal rate unit in the
// throughput tables.
func TestBinaryUnits(t *testing.T) {
	r := scen(t, analysistest.Scenario{RateBps: flat(171 * (1 << 30))}, Options{Units: Binary})
	out := text(t, r)
	if !regexp.MustCompile(`throughput rx, receiving interface veth-b \(Gibit/s = 2\^30 bit/s\)`).MatchString(out) ||
		!regexp.MustCompile(`application \(receiver payload\)\s+171\.00\s+171\.00`).MatchString(out) ||
		!regexp.MustCompile(`throughput rx in GiB/s \(2\^30 byte/s\)[^\n]*\napplication \(receiver payload\)\s+21\.38`).MatchString(out) {
		t.Errorf("binary report:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Gibit/s") && strings.Contains(line, "Gbit/s") {
			t.Errorf("line mixes units: %q", line)
		}
	}
	// 171 Gibit/s = 183.6 Gbit/s in decimal.
	if !regexp.MustCompile(`application \(receiver payload\)\s+183\.61`).MatchString(text(t, scen(t,
		analysistest.Scenario{RateBps: flat(171 * (1 << 30))}, Options{}))) {
		t.Error("decimal report lacks 183.61")
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"80Gbit": 80e9, "10Gbit/s": 10e9, "25G": 25e9, "100Mbit": 100e6,
		"171Gibit": 171 * (1 << 30), "1.5Tbit": 1.5e12, "10000Mbit": 10e9, "10gbps": 10e9} {
		got, err := ParseRate(in)
		if err != nil || !approxEq(got, want) {
			t.Errorf("ParseRate(%q) = %g, %v; want %g", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-1Gbit", "0"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

// Retransmits: total, per GB sent, share of segments, and the trend.
func TestRetransmitTrend(t *testing.T) {
	s := analysistest.Scenario{RateBps: flat(8e9), RetxFraction: 0.01}
	ifaces, cpus, flows, traffic := s.Tables()
	// Triple the sender's retransmits in the second half (intervals 5..9).
	for i := range traffic {
		if traffic[i].Role == trace.RoleSender && traffic[i].Time.After(s.Manifest().Start.Add(5e9)) {
			v := *traffic[i].TCPRetransmits * 3
			traffic[i].TCPRetransmits = &v
		}
	}
	r, _ := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	x := r.Retx
	if x.SecondHalf != 3*x.FirstHalf || x.FirstHalf == 0 {
		t.Errorf("halves %d, %d; want second = 3 x first", x.FirstHalf, x.SecondHalf)
	}
	checkF(t, "trend", x.SecondPerGB/x.FirstPerGB, 3)
	// 1% of segments in the first half: 1726 per interval per stream of
	// 250e6 B → per GB 1726×4/1e9×1e9.
	checkF(t, "first per GB", x.FirstPerGB, 4*1726/1.0)
	if !strings.Contains(text(t, r), ": x3.00 per GB") {
		t.Error("report lacks the x3.00 trend")
	}
}

// Per flow and peer: RTT, window-limited rate, generator match.
func TestFlowsAndPeers(t *testing.T) {
	r := scen(t, analysistest.Scenario{RateBps: flat(4e9), WindowRatio: 0.5, RTTMinUs: 100,
		RTTP50Us: func(int) uint32 { return 200 }}, Options{})
	if len(r.Flows) != 8 || len(r.Peers) != 2 {
		t.Fatalf("%d flows, %d peers; want 8, 2", len(r.Flows), len(r.Peers))
	}
	var send int
	for _, f := range r.Flows {
		if !f.Generator {
			t.Errorf("flow %s -> %s not matched to a generator stream", f.Src, f.Dst)
		}
		if f.Sending {
			send++
			if f.RTT == nil || f.RTT.MinUs != 100 || f.RTT.P50Us != 200 || f.MSS != 1448 {
				t.Errorf("sending flow %+v", f)
			}
			if math.Abs(f.WindowRatio()-0.5) > 0.01 {
				t.Errorf("flow ratio %.3f, want 0.5", f.WindowRatio())
			}
		}
	}
	if send != 4 {
		t.Errorf("%d sending flows, want 4", send)
	}
	p := r.Peers[0]
	if p.RTT == nil && r.Peers[1].RTT != nil {
		p = r.Peers[1]
	}
	if p.Peer != analysistest.ReceiverAddr || p.RTT.FloorUs() != 100 || p.Flows != 4 {
		t.Errorf("peer %+v", p)
	}
}

// Analyze reads a run directory through trace.Scan and gives the same
// report as Build on the rows; blob columns absent from the file read as
// null.
func TestAnalyzeRunDir(t *testing.T) {
	s := analysistest.Scenario{Intervals: 8, RatedMbps: 10_000}
	dir := filepath.Join(t.TempDir(), "run")
	if err := s.Write(dir); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Analyze(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := scen(t, s, Options{})
	if got.Blob != nil || got.Verdict(RuleStorage).Status != Skipped {
		t.Errorf("blob = %+v, storage %v; want none, skipped", got.Blob, got.Verdict(RuleStorage))
	}
	got.Dir = ""
	a, b := jsonOf(t, got), jsonOf(t, want)
	if a != b {
		t.Errorf("report from the run directory differs from the in-memory one:\n%s\n%s", a, b)
	}
}

func jsonOf(t *testing.T, r *Report) string {
	t.Helper()
	b, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// JSON never fails on NaN (unknown per-GB figures) and keeps units in keys.
func TestJSONUnknowns(t *testing.T) {
	r := scen(t, analysistest.Scenario{}, Options{})
	r.Retx.FirstPerGB = math.NaN()
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(r.JSON()); err != nil {
		t.Fatalf("encode: %v", err)
	}
	for _, k := range []string{`"first_half_per_gb_sent":null`, `"net_rx_ns_per_packet":`, `"wire_estimate":{`,
		`"streams_needed":null`, `"fired_verdicts":[`} {
		if !strings.Contains(buf.String(), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}
}

// A failing consumer stops a pipelined scan and its error is returned.
func TestPipelinedError(t *testing.T) {
	src := pipelined(func(fn func([]int) error) error {
		for i := range 100 {
			if err := fn([]int{i}); err != nil {
				return err
			}
		}
		return nil
	})
	n := 0
	err := src(func(b []int) error {
		n++
		if b[0] == 3 {
			return errStopped
		}
		return nil
	})
	if err != errStopped || n != 4 {
		t.Errorf("err %v after %d batches; want errStopped after 4", err, n)
	}
}

// RTT values stay exact below 1 ms and keep 3 significant digits above,
// so per-flow distributions stay small.
func TestQuantUs(t *testing.T) {
	for in, want := range map[uint32]uint32{0: 0, 60: 60, 999: 999, 1000: 1000, 1234: 1230, 20612: 20600, 20650: 20700,
		4_000_000_000: 4_000_000_000} {
		if got := quantUs(in); got != want {
			t.Errorf("quantUs(%d) = %d, want %d", in, got, want)
		}
	}
}

// The heat map has one bin per interval (at most HeatBins) with each
// CPU's NET_RX share.
func TestCPUHeat(t *testing.T) {
	r := scen(t, analysistest.Scenario{Softirq: hot(0.8)}, Options{})
	h := r.Heat
	if h == nil || len(h.BinEnds) != 10 || len(h.CPUs) != 2 || h.CPUs[0] != 0 {
		t.Fatalf("heat = %+v", h)
	}
	checkF(t, "cpu0 bin 3", h.Share[0][3], 0.8)
	checkF(t, "cpu1 bin 3", h.Share[1][3], 0.1)
	long := scen(t, analysistest.Scenario{Intervals: 1500, Streams: 1}, Options{})
	if n := len(long.Heat.BinEnds); n > HeatBins || n < HeatBins/2 {
		t.Errorf("1500 intervals: %d bins, want <= %d", n, HeatBins)
	}
}

// The tcp probe's rows (RTT, cwnd; no interface) and the netdev probe's
// rows (bytes; ifindex set) of one socket make one flow.
func TestFlowRowsMerge(t *testing.T) {
	s := analysistest.Scenario{WindowRatio: 0.5}
	ifaces, cpus, flows, traffic := s.Tables()
	var split []trace.FlowRow
	for _, x := range flows {
		if x.RTTSamples == 0 {
			split = append(split, x)
			continue
		}
		bytesRow, rttRow := x, x
		bytesRow.RTTSamples, bytesRow.RTTMinUs, bytesRow.RTTP50Us, bytesRow.RTTP99Us = 0, nil, nil, nil
		bytesRow.SrttUs, bytesRow.SndCwnd, bytesRow.MSS, bytesRow.MinRttUs = nil, nil, nil, nil
		rttRow.Ifindex, rttRow.Ifname, rttRow.TxBytes, rttRow.TxPackets, rttRow.RxBytes, rttRow.Retransmits = 0, "", 0, 0, 0, 0
		split = append(split, bytesRow, rttRow)
	}
	r, err := BuildTables(s.Manifest(), Tables{Ifaces: ifaces, CPUs: cpus, Flows: split, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Flows) != 8 {
		t.Fatalf("%d flows, want 8", len(r.Flows))
	}
	for _, f := range r.Flows {
		if f.Sending && (f.Ifindex != 2 || f.RTT == nil || math.Abs(f.WindowRatio()-0.5) > 0.01) {
			t.Errorf("merged flow %+v: want ifindex 2, RTT and window ratio 0.5", f)
		}
	}
}
