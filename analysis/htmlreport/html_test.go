package htmlreport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// report builds a report with every plot's data from a synthetic run.
func report(t *testing.T) *analysis.Report {
	t.Helper()
	s := analysistest.Scenario{Intervals: 20, RatedMbps: 10_000, RetxFraction: 0.001,
		RateBps: func(i int) float64 { return float64(1+min(i, 5)) * 1e9 }}
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := analysis.BuildTables(s.Manifest(), analysis.Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Dir = "/runs/synthetic"
	return r
}

func renderPage(t *testing.T, r *analysis.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, r, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The embedded library is the npm release it claims to be.
func TestEmbeddedEcharts(t *testing.T) {
	sum := sha256.Sum256([]byte(echartsJS))
	if got := hex.EncodeToString(sum[:]); got != echartsSHA256 {
		t.Errorf("assets/echarts.min.js sha256 %s, want %s (echarts@%s dist/echarts.min.js)", got, echartsSHA256, EchartsVersion)
	}
}

// The page is self-contained: no script, style or image is fetched.
func TestSelfContained(t *testing.T) {
	out := renderPage(t, report(t))
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(out); m != "" {
		t.Errorf("page loads %q from the network", m)
	}
	for _, want := range []string{"echarts.init", "np_throughput", "np_cpu_heat", "np_rtt_hist", "np_retx",
		`"name":"whole run"`, "wire-bound", "Throughput rx, interface veth-b"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The fixture's rate is flat: peak and steady state share one line.
	if !strings.Contains(out, `"name":"peak ≈ steady state"`) &&
		!(strings.Contains(out, `"name":"peak"`) && strings.Contains(out, `"name":"steady state"`)) {
		t.Error("page lacks the peak and steady-state lines")
	}
	if !strings.Contains(out, echartsJS[:200]) {
		t.Error("echarts library not inlined")
	}
}

// Plots without data say why instead of drawing an empty chart.
func TestMissingPlots(t *testing.T) {
	r, err := analysis.Build(analysistest.Scenario{}.Manifest(), nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := renderPage(t, r)
	for _, want := range []string{"n/a (no throughput measured)", "n/a (no cpus rows with softirq time (probes off, no /proc/stat columns))", "n/a (no RTT samples)"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// chromium returns the headless browser, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const reason = "chromium not installed (Debian package chromium): HTML not rendered"
	if os.Getenv("NETPROF_REQUIRE_CHROMIUM") == "1" {
		t.Fatalf("%s, but NETPROF_REQUIRE_CHROMIUM=1", reason)
	}
	t.Skip(reason)
	return ""
}

// The page renders in a real browser: every chart draws a canvas and the
// console shows no script error.
func TestRendersInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(renderPage(t, report(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=5000", "--dump-dom", "file://"+file)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.String()))
	}
	dom := stdout.String()
	for _, id := range []string{"np_throughput", "np_cpu_heat", "np_rtt_hist", "np_retx"} {
		re := regexp.MustCompile(`id="` + id + `"[^>]*>\s*<div[^>]*>\s*<canvas`)
		if !re.MatchString(dom) {
			t.Errorf("chart %s drew no canvas", id)
		}
	}
	for _, bad := range []string{"Uncaught", "ERROR:CONSOLE", "SyntaxError", "ReferenceError", "TypeError"} {
		if strings.Contains(stderr.String(), bad) {
			t.Errorf("browser console reports %q:\n%s", bad, tail(stderr.String()))
		}
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

// The RTT plot says what it is (per-interval percentiles weighted by
// samples, not a histogram of samples) with the min and max beside it, and
// plots the p99s too; the per-CPU table has the /proc/stat columns of the
// text report and the host line.
func TestRTTPlotAndProcColumns(t *testing.T) {
	s := analysistest.Scenario{RatedMbps: 10_000, ProcStat: func(_, c int) (float64, float64) { return 0.25, 0.5 + 0.25*float64(c) }}
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := analysis.BuildTables(s.Manifest(), analysis.Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := renderPage(t, r)
	for _, want := range []string{
		"per-interval p50 and p99 of the flows, weighted by samples (not a histogram of samples)",
		fmt.Sprintf("min %d µs, max %d µs", r.RTT.MinUs, r.RTT.MaxUs), `"name":"per-interval p99"`,
		"<th>all softirq % (/proc/stat)</th><th>busy % (/proc/stat)</th>",
		"<td>25.0</td><td>50.0</td>", "<td>25.0</td><td>75.0</td>",
		"host, all 2 CPUs (/proc/stat): busy 62.5%",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(out, "RTT histogram") {
		t.Error("page still calls the RTT plot a histogram")
	}
}

// With the softirq probe off its columns hold 0: the heat map is left out
// with the reason, not drawn as all zeros.
func TestHeatMapSoftirqOff(t *testing.T) {
	r := report(t)
	if r.Heat == nil {
		t.Fatal("scenario has no heat map")
	}
	r.SoftirqOff = "np_si_entry not attached: not selected (--probes)"
	out := renderPage(t, r)
	if !strings.Contains(out, "n/a (NET_RX softirq time not recorded (np_si_entry not attached: not selected (--probes)) and no /proc/stat columns)") {
		t.Error("page lacks the heat map's n/a")
	}
	if strings.Contains(out, `"type":"heatmap"`) {
		t.Error("page still draws the heat map")
	}
}

// With the softirq probe off and /proc/stat columns recorded (the default
// probes), the heat map shows /proc/stat's softirq share of every vector,
// titled so, with each CPU's figure from its columns.
func TestHeatMapFromProcStat(t *testing.T) {
	s := analysistest.Scenario{ProcStat: func(_, c int) (float64, float64) { return 0.1 + 0.5*float64(c), 0.9 }}
	m := s.Manifest()
	m.Probes = append(m.Probes, trace.Probe{Name: "np_si_entry", Hook: "irq:softirq_entry", Reason: trace.ReasonNotSelected})
	ifaces, cpus, flows, traffic := s.Tables()
	for i := range cpus {
		cpus[i].NetRxSoftirqNs, cpus[i].NetTxSoftirqNs = nil, nil
	}
	r, err := analysis.BuildTables(m, analysis.Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.SoftirqOff == "" || r.Heat == nil || r.Heat.Source != analysis.HotAllSoftirq {
		t.Fatalf("softirq off %q, heat %+v", r.SoftirqOff, r.Heat)
	}
	for ci, cpu := range r.Heat.CPUs {
		want := 0.1 + 0.5*float64(cpu)
		for b, v := range r.Heat.Share[ci] {
			if !math.IsNaN(v) && math.Abs(v-want) > 1e-9 {
				t.Errorf("CPU %d bin %d: share %v, want %v (proc_softirq_ns / proc_total_ns)", cpu, b, v, want)
			}
		}
	}
	out := renderPage(t, r)
	if !strings.Contains(out, `"type":"heatmap"`) || !strings.Contains(out, "softirq of every vector, % of each CPU's time") ||
		!strings.Contains(out, "cpus.proc_softirq_ns / proc_total_ns (/proc/stat") {
		t.Error("page lacks the /proc/stat heat map")
	}
}

// Per-queue packet counters draw the queue heat map, a row per queue (the
// scenario's veth-b is a veth: its queues count in rx_queue_N_xdp_packets);
// without them the chart says where they would come from.
func TestQueueHeatMap(t *testing.T) {
	s := analysistest.Scenario{}
	ifaces, cpus, flows, traffic := s.Tables()
	rx := "rx"
	var nics []trace.NICStatRow
	for _, x := range ifaces {
		for q := range int32(4) {
			if x.Ifname == "veth-b" {
				nics = append(nics, trace.NICStatRow{Time: x.Time, IntervalNs: x.IntervalNs, Netns: x.Netns, Ifname: x.Ifname,
					Stat: fmt.Sprintf("rx_queue_%d_xdp_packets", q), Direction: &rx, Queue: &q, Value: uint64(100 * (q + 1))})
			}
		}
	}
	r, err := analysis.BuildTables(s.Manifest(), analysis.Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic, NICs: nics}, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := renderPage(t, r)
	for _, want := range []string{"packets per second per queue", "per-queue packet counters (ethtool -S, e.g. rx_queue_0_xdp_packets)",
		`"veth-b rx 0"`, `"veth-b rx 3"`, `"np_queue_heat"`} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	r, _ = analysis.BuildTables(s.Manifest(), analysis.Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, analysis.Options{})
	if out := renderPage(t, r); !strings.Contains(out, "n/a (no per-queue packet counters (nics table") {
		t.Error("page without nics rows lacks the queue chart's n/a")
	}
}
