package analysis

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

func ptr[T any](v T) *T { return &v }

// fixture is a 5 s run of 1 s intervals ending at t0+1..t0+5 s.
//
// Receiver app_bytes per interval (two streams summed): 50e6, 1000e6,
// 1100e6, 1200e6, 40e6 → 0.4, 8.0, 8.8, 9.6, 0.32 Gbit/s. Peak 9.6e9 at
// 4 s; threshold 0.96e9 → active window i2..i4 = 1 s..4 s; steady = i3
// alone after dropping i2 and i4 = 8.8e9; whole run = 3390e6*8/5 =
// 5.424e9. Sender rows carry more bytes, so using them would show.
type fixture struct {
	m       trace.Manifest
	ifaces  []trace.IfaceRow
	cpus    []trace.CPURow
	flows   []trace.FlowRow
	traffic []trace.TrafficRow
}

var recvMB = []uint64{50, 1000, 1100, 1200, 40}

// eth0 rx_bytes = receiver payload + 4%: 52, 1040, 1144, 1248, 41.6 MB.
var eth0RxB = []uint64{52_000_000, 1_040_000_000, 1_144_000_000, 1_248_000_000, 41_600_000}

func newFixture(bpf bool) fixture {
	f := fixture{m: trace.Manifest{
		SchemaVersion: 1, ToolVersion: "v0.1.0", Start: t0, End: at(5), Host: "h1",
		Kernel: "6.8.0", CPUCount: 2, Status: "ok",
		Interfaces: []trace.Interface{
			{Name: "eth1", Netns: 1}, // busier, but not the receiver
			{Name: "eth0", Netns: 1, Role: trace.RoleReceiver},
		},
	}}
	for i := range 5 {
		end, iv := at(float64(i+1)), sec(1)
		half := recvMB[i] * 500_000
		for s := range int32(2) {
			f.traffic = append(f.traffic,
				trace.TrafficRow{Time: end, IntervalNs: iv, Stream: s, Role: trace.RoleReceiver, AppBytes: half},
				trace.TrafficRow{Time: end, IntervalNs: iv, Stream: s, Role: trace.RoleSender, AppBytes: 2 * half,
					TCPRetransmits: retx(i, s)})
		}
		r0 := trace.IfaceRow{Time: end, IntervalNs: iv, Netns: 1, Ifname: "eth0", RxBytes: eth0RxB[i]}
		r1 := trace.IfaceRow{Time: end, IntervalNs: iv, Netns: 1, Ifname: "eth1", RxBytes: 5e9}
		if bpf {
			r0.BpfRxBytes = ptr(eth0RxB[i] - 1_000_000)
			r1.BpfRxBytes = ptr(uint64(5e9))
		}
		f.ifaces = append(f.ifaces, r0, r1)
	}
	f.cpus = cpuRows()
	f.flows = flowRows()
	return f
}

// retx: stream 0 retransmits i+1 segments in intervals 0..2 (1+2+3), stream
// 1 has 6 in interval 4 and null elsewhere: sender total 12.
func retx(i int, s int32) *uint64 {
	switch {
	case s == 0 && i < 3:
		return ptr(uint64(i + 1))
	case s == 1 && i == 4:
		return ptr(uint64(6))
	}
	return nil
}

// cpuRows: net_rx_softirq_ms per 1 s interval (i1..i5):
//
//	cpu0: 900, 500, 600, 700, 100 → active window i2..i4: 1800/3000 = 60%,
//	      max 70% (i1's 90% is outside the window)
//	cpu1:   0, 200, 300, 100,   0 → 600/3000 = 20%, max 30%
//
// cpu1 rows come first: output must be sorted by cpu.
func cpuRows() []trace.CPURow {
	ms := map[int32][]uint64{1: {0, 200, 300, 100, 0}, 0: {900, 500, 600, 700, 100}}
	var rows []trace.CPURow
	for _, cpu := range []int32{1, 0} {
		for i, v := range ms[cpu] {
			rows = append(rows, trace.CPURow{Time: at(float64(i + 1)), IntervalNs: sec(1), CPU: cpu,
				NetRxSoftirqNs: ptr(v * 1_000_000)})
		}
	}
	return rows
}

// flowRows: RTT rows (samples, p50, p99, min, max µs):
//
//	A: 100, 50, 200, 30, 300
//	B: 300, 80, 150, 40, 250
//	C:   0, no RTT (retransmits 2)
//	D: 600, 60, 1000, 35, 1200
//
// p50: sorted 50(100) 60(600) 80(300); half of 1000 reached at 60.
// p99: sorted 150(300) 200(100) 1000(600); 990 reached at 1000.
// min 30, max 1200, samples 1000 in 3 rows. Retransmits 1+0+2+4 = 7.
func flowRows() []trace.FlowRow {
	row := func(s uint64, p50, p99, lo, hi uint32, retx uint64) trace.FlowRow {
		r := trace.FlowRow{Time: at(2), IntervalNs: sec(1), Proto: 6, RTTSamples: s, Retransmits: retx}
		if s > 0 {
			r.RTTP50Us, r.RTTP99Us, r.RTTMinUs, r.RTTMaxUs = &p50, &p99, &lo, &hi
		}
		return r
	}
	return []trace.FlowRow{
		row(100, 50, 200, 30, 300, 1),
		row(300, 80, 150, 40, 250, 0),
		row(0, 0, 0, 0, 0, 2),
		row(600, 60, 1000, 35, 1200, 4),
	}
}

func (f fixture) build(t *testing.T) *Report {
	t.Helper()
	r, err := Build(f.m, f.ifaces, f.cpus, f.flows, f.traffic)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return r
}

func TestBuildApp(t *testing.T) {
	r := newFixture(true).build(t)
	app := r.Rx.Rate(CounterApp).W
	if app == nil || r.Primary == nil || r.Primary.Counter != CounterApp || r.PrimaryDir != "rx" {
		t.Fatalf("rx app = %v, primary %+v; want receiver windows as primary", app, r.Primary)
	}
	checkF(t, "App.PeakBps", app.PeakBps, 9.6e9)
	checkT(t, "App.PeakAt", app.PeakAt, at(4))
	checkT(t, "App.ActiveStart", app.ActiveStart, at(1))
	checkT(t, "App.ActiveEnd", app.ActiveEnd, at(4))
	checkF(t, "App.SteadyBps", app.SteadyBps, 8.8e9)
	checkF(t, "App.WholeRunBps", app.WholeRunBps, 5.424e9)
	// Sender app bytes are twice the receiver's: tx app peak 19.2e9.
	checkF(t, "tx App.PeakBps", r.Tx.Rate(CounterApp).W.PeakBps, 19.2e9)
}

func TestBuildIface(t *testing.T) {
	r := newFixture(true).build(t)
	nl, bpf := r.Rx.Rate(CounterNetlink).W, r.Rx.Rate(CounterBPF).W
	if r.Rx.Iface != "eth0" || nl == nil || bpf == nil {
		t.Fatalf("iface = %q, %v, %v; want eth0 with netlink and bpf windows", r.Rx.Iface, nl, bpf)
	}
	// Peak 1248e6*8 = 9.984e9; steady i3 = 1144e6*8 = 9.152e9; whole run
	// 3525.6e6*8/5 = 5.64096e9.
	checkF(t, "Iface.PeakBps", nl.PeakBps, 9.984e9)
	checkF(t, "Iface.SteadyBps", nl.SteadyBps, 9.152e9)
	checkF(t, "Iface.WholeRunBps", nl.WholeRunBps, 5.64096e9)
	// bpf = rx - 1e6 per interval: peak 1247e6*8 = 9.976e9.
	checkF(t, "BpfIface.PeakBps", bpf.PeakBps, 9.976e9)
}

func TestBuildIfaceFallbackLargest(t *testing.T) {
	f := newFixture(true)
	f.m.Interfaces = nil
	r := f.build(t)
	// eth1: 5e9 B per 1 s interval = 40e9 bit/s.
	if r.Rx.Iface != "eth1" {
		t.Fatalf("rx iface = %q, want eth1 (largest rx_bytes)", r.Rx.Iface)
	}
	checkF(t, "Iface.PeakBps", r.Rx.Rate(CounterNetlink).W.PeakBps, 40e9)
	if !hasNote(r, "no interface marked receiver") {
		t.Errorf("notes %q lack the fallback note", r.Notes)
	}
}

func TestBuildCPUs(t *testing.T) {
	r := newFixture(true).build(t)
	if len(r.CPUs) != 2 || r.CPUs[0].CPU != 0 || r.CPUs[1].CPU != 1 {
		t.Fatalf("CPUs = %+v, want cpu 0 and 1 in order", r.CPUs)
	}
	// Steady state = i3 alone (active i2..i4 without first and last):
	// cpu0 600 ms, cpu1 300 ms of 1 s.
	checkF(t, "cpu0 share", r.CPUs[0].Share, 0.6)
	checkF(t, "cpu0 max", r.CPUs[0].MaxShare, 0.6)
	checkF(t, "cpu1 share", r.CPUs[1].Share, 0.3)
	checkF(t, "cpu1 max", r.CPUs[1].MaxShare, 0.3)
	if r.BusiestCPU != 0 || r.CPUWindow != WindowSteady || r.CPUs[0].Intervals != 1 || r.CPUs[0].BusiestIntervals != 1 {
		t.Errorf("busiest %d, window %q, cpu0 intervals %d busiest %d; want 0, steady state, 1, 1",
			r.BusiestCPU, r.CPUWindow, r.CPUs[0].Intervals, r.CPUs[0].BusiestIntervals)
	}
}

func TestBuildCPUsWholeRunWithoutApp(t *testing.T) {
	f := newFixture(true)
	f.traffic, f.ifaces = nil, nil
	r := f.build(t)
	// Whole run: cpu0 2800/5000 = 56%, max 90%; cpu1 600/5000 = 12%.
	if r.Primary != nil || r.CPUWindow != WindowWholeRun {
		t.Fatalf("Primary = %v, window %q; want nil, whole run", r.Primary, r.CPUWindow)
	}
	checkF(t, "cpu0 share", r.CPUs[0].Share, 0.56)
	checkF(t, "cpu0 max", r.CPUs[0].MaxShare, 0.9)
	checkF(t, "cpu1 share", r.CPUs[1].Share, 0.12)
}

func TestBuildRTTAndRetransmits(t *testing.T) {
	r := newFixture(true).build(t)
	want := RTTSummary{P50Us: 60, P99Us: 1000, MinUs: 30, MaxUs: 1200, Samples: 1000, Rows: 3}
	if r.RTT == nil || *r.RTT != want {
		t.Errorf("RTT = %+v, want %+v", r.RTT, want)
	}
	if r.SenderRetransmits == nil || *r.SenderRetransmits != 12 {
		t.Errorf("SenderRetransmits = %v, want 12", r.SenderRetransmits)
	}
	if r.FlowRetransmits == nil || *r.FlowRetransmits != 7 {
		t.Errorf("FlowRetransmits = %v, want 7", r.FlowRetransmits)
	}
}

func TestBuildProbesOff(t *testing.T) {
	f := newFixture(false)
	f.cpus, f.flows = nil, nil
	r := f.build(t)
	bpf := r.Rx.Rate(CounterBPF).W
	if bpf != nil || r.CPUs != nil || r.BusiestCPU != -1 || r.RTT != nil || r.FlowRetransmits != nil {
		t.Errorf("probes off: bpf %v, cpus %v, busiest %d, rtt %v, flow retx %v; want nil/-1",
			bpf, r.CPUs, r.BusiestCPU, r.RTT, r.FlowRetransmits)
	}
	if r.Rx.Rate(CounterNetlink).W == nil || r.Rx.Rate(CounterApp).W == nil {
		t.Error("netlink and app figures must not need probes")
	}
	if !hasNote(r, "probes off: no softirq/RTT figures") {
		t.Errorf("notes %q lack the probes-off note", r.Notes)
	}
}

func TestBuildSenderFallback(t *testing.T) {
	f := newFixture(true)
	var snd []trace.TrafficRow
	for _, x := range f.traffic {
		if x.Role == trace.RoleSender {
			snd = append(snd, x)
		}
	}
	f.traffic = snd
	r := f.build(t)
	// No receiver rows: the primary rate is the rx interface (eth0);
	// the sender's app bytes are the tx direction: peak 2 × 9.6e9.
	if r.Rx.Rate(CounterApp).W != nil || r.Primary.Counter != CounterNetlink || r.PrimaryDir != "rx" {
		t.Fatalf("rx app %v, primary %s %s; want nil, rx interface", r.Rx.Rate(CounterApp).W, r.PrimaryDir, r.Primary.Counter)
	}
	checkF(t, "tx App.PeakBps", r.Tx.Rate(CounterApp).W.PeakBps, 19.2e9)
	f.ifaces = nil
	r = f.build(t)
	if r.Primary.Counter != CounterApp || r.PrimaryDir != "tx" {
		t.Fatalf("primary %s %s; want tx application", r.PrimaryDir, r.Primary.Counter)
	}
}

func TestBuildRunEndFallback(t *testing.T) {
	f := newFixture(true)
	f.m.End = time.Time{}
	r := f.build(t)
	// Last row ends at 5 s; the fixture's End was 5 s too, so the whole
	// run rate is unchanged, and the fallback is noted.
	checkT(t, "RunEnd", r.RunEnd, at(5))
	checkF(t, "App.WholeRunBps", r.Rx.Rate(CounterApp).W.WholeRunBps, 5.424e9)
	if !hasNote(r, "manifest has no end time") {
		t.Errorf("notes %q lack the end-time note", r.Notes)
	}
}

func TestBuildNewerSchema(t *testing.T) {
	f := newFixture(true)
	f.m.SchemaVersion = trace.SchemaVersion + 1
	if _, err := Build(f.m, nil, nil, nil, nil); err == nil {
		t.Error("Build accepted a newer schema_version")
	}
}

func TestBuildEmpty(t *testing.T) {
	r, err := Build(trace.Manifest{}, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Primary != nil || r.Rx.Rate(CounterNetlink).W != nil || r.BusiestCPU != -1 || r.SenderRetransmits != nil {
		t.Errorf("empty build: %+v", r)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "0.00") {
		t.Errorf("empty report prints a 0.00 rate:\n%s", buf.String())
	}
}

func TestWriteText(t *testing.T) {
	r := newFixture(true).build(t)
	r.Dir = "/runs/r1"
	out := text(t, r)
	for _, re := range []string{
		`throughput rx, receiving interface eth0 \(Gbit/s = 10\^9 bit/s\)\s+peak\s+steady state\s+whole run\s+p50\s+p95`,
		// p50 of the active window 8.0, 8.8, 9.6 = 8.8; p95 = 8.8 + 0.9 × 0.8 = 9.52.
		`application \(receiver payload\)\s+9\.60\s+8\.80\s+5\.42\s+8\.80\s+9\.52\n`,
		`interface rx \(netlink, eth0, incl\. L2 headers\)\s+9\.98\s+9\.15\s+5\.64\s`,
		`interface rx \(bpf, eth0\)\s+9\.98\s+9\.14\s+5\.63\s`,
		`run directory\s+/runs/r1`,
		`active window \(application \(receiver payload\), intervals >= 10% of peak\): 2025-03-01T12:00:01\.000Z to 2025-03-01T12:00:04\.000Z, length 3\.000 s \(3 intervals\)`,
		// rx_packets and napi_* are null in every row: n/a, not 0, with why.
		`\n\s+0\s+60\.0\s+n/a \(not recorded\)\s+n/a \(not recorded\)\s+0\.0\s+60\.0\s+n/a\s+n/a\s+n/a\s+1/1\n\s+1\s+30\.0\s`,
		`rx packets, ns/packet: n/a \(cpus\.rx_packets null in every row \(the netdev probe did not run\)\)`,
		`NAPI budget exhausted %: n/a \(cpus\.napi_polls null in every row \(the napi probe did not run\)\)`,
		`busiest CPU: 0 \(NET_RX softirq 60\.0% of the steady state\)`,
		`all softirq % and busy %: n/a \(no /proc/stat columns`,
		`p50 \(of per-interval p50s\)\s+60 µs`, `p99 \(of per-interval p99s\)\s+1000 µs`, `min\s+30 µs`, `max\s+\d+ µs`, `samples\s+1000`,
		`sender \(traffic\.tcp_retransmits, TCP_INFO\)\s+12\n`,
		`BPF tcp_retransmit_skb\)\s+7\n`,
		`receiver\s+n/a \(counted on the sender\)`,
		`verdict: \[`,
		`inconclusive: yes`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("report lacks %q:\n%s", re, out)
		}
	}
}

func TestWriteTextMissing(t *testing.T) {
	f := newFixture(false)
	f.cpus, f.flows = nil, nil
	out := text(t, f.build(t))
	for _, re := range []string{
		`interface rx \(bpf, eth0\)\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a \(bpf columns null: probes off\)`,
		`wire estimate rx \(eth0, \+ 24 B/segment\)\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a \(bpf columns null: probes off\)`,
		`\s+n/a \(no cpus rows: probes off\)`,
		`\s+n/a \(no flows rows: probes off\)`,
		`all flows .*\s+n/a \(no flows rows: probes off\)`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("report lacks %q:\n%s", re, out)
		}
	}
	if strings.Contains(out, "busiest") || strings.Contains(out, " 0 µs") {
		t.Errorf("missing data printed as figures:\n%s", out)
	}
}

func text(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	return buf.String()
}

func hasNote(r *Report, substr string) bool {
	for _, n := range r.Notes {
		if strings.Contains(n, substr) {
			return true
		}
	}
	return false
}

func TestBuildCPUsTimeSkew(t *testing.T) {
	// cpus rows stamped 5 µs after the traffic rows of the same interval
	// still fall in the active window by their midpoint: same shares.
	f := newFixture(true)
	for i := range f.cpus {
		f.cpus[i].Time = f.cpus[i].Time.Add(5 * time.Microsecond)
	}
	r := f.build(t)
	checkF(t, "cpu0 share", r.CPUs[0].Share, 0.6)
	checkF(t, "cpu1 share", r.CPUs[1].Share, 0.3)
}

func TestBuildBpfPartlyNull(t *testing.T) {
	// bpf_rx_bytes null in the peak interval (i4) of eth0: the bpf peak
	// is then i3's 1143e6*8 = 9.144e9, and the gap is noted.
	f := newFixture(true)
	for i := range f.ifaces {
		if f.ifaces[i].Ifname == "eth0" && f.ifaces[i].Time.Equal(at(4)) {
			f.ifaces[i].BpfRxBytes = nil
		}
	}
	r := f.build(t)
	bpf := r.Rx.Rate(CounterBPF).W
	if bpf == nil || bpf.Intervals != 4 {
		t.Fatalf("bpf = %+v, want 4 intervals", bpf)
	}
	checkF(t, "BpfIface.PeakBps", bpf.PeakBps, 9.144e9)
	if !hasNote(r, "bpf_rx_bytes null in 1 of 5 intervals of eth0") {
		t.Errorf("notes %q lack the partial-null note", r.Notes)
	}
}
