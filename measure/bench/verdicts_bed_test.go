package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
)

// verdictBed creates a test bed (routed when ro is not nil) that
// t.Cleanup closes, namespaces included, also when the test fails.
func verdictBed(t *testing.T, ro *testbed.RoutedOptions) *testbed.Bed {
	t.Helper()
	var bed *testbed.Bed
	var err error
	if ro != nil {
		bed, err = testbed.NewRouted(context.Background(), *ro)
	} else {
		bed, err = testbed.New(context.Background(), testbed.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bed.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return bed
}

// bedRun runs cfg over bed and returns the run's report and trace.
func bedRun(t *testing.T, cfg Config, bed *testbed.Bed) (*analysis.Report, *trace.Run) {
	t.Helper()
	res, run := mustRun(t, cfg, bed, "")
	if res.Report == nil {
		t.Fatal("no report")
	}
	return res.Report, run
}

// hostRun runs a command inside h's namespace and fails t on error.
func hostRun(t *testing.T, h *testbed.Host, name string, args ...string) string {
	t.Helper()
	out, err := h.Exec(context.Background(), name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %s %s: %v: %s", h.Name, name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// verdictConfig is a short run: 1 s warm-up, dur measured, 500 ms
// intervals.
func verdictConfig(streams int, dur time.Duration) Config {
	cfg := DefaultConfig()
	cfg.Streams, cfg.Duration, cfg.Warmup, cfg.Interval = streams, dur, time.Second, 500*time.Millisecond
	cfg.Probes = probeset.Default // what `netprof bench` attaches unless told otherwise
	return cfg
}

// wantVerdict fails t unless rule's verdict has status want; it returns
// the verdict.
func wantVerdict(t *testing.T, r *analysis.Report, rule string, want analysis.VerdictStatus) analysis.Verdict {
	t.Helper()
	v := r.Verdict(rule)
	if v.Status != want {
		t.Errorf("%s: %q (%s), want %q; evidence:\n  %s", rule, v.Status, v.Summary, want, strings.Join(v.Evidence, "\n  "))
	}
	return v
}

// wantEvidence fails t unless some evidence line of v contains every one of
// parts.
func wantEvidence(t *testing.T, v analysis.Verdict, parts ...string) {
	t.Helper()
	for _, e := range v.Evidence {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(e, p)
		}
		if ok {
			return
		}
	}
	t.Errorf("%s: no evidence line with %q:\n  %s", v.Rule, parts, strings.Join(v.Evidence, "\n  "))
}

// softirqFilters is the length of the receive-side u32 chain of
// TestVerdictSoftirqBound: 0.1-0.2 ms per packet here, so one CPU handles
// only 5-10k packets/s.
const softirqFilters = 10000

// steerReceive sends all of h's receive processing to cpu with RPS and
// makes every packet walk n non-matching u32 filters on an ingress qdisc
// of h's veth, in NET_RX softirq.
func steerReceive(t *testing.T, h *testbed.Host, cpu, n int) {
	t.Helper()
	setRPS(t, h, cpu)
	hostRun(t, h, "tc", "qdisc", "add", "dev", h.Link, "ingress")
	var b strings.Builder
	for i := range n {
		// 10.255.x.y never matches the bed's 198.18/15 sources.
		fmt.Fprintf(&b, "filter add dev %s parent ffff: protocol ip prio 1 u32 match ip src 10.255.%d.%d/32 flowid 1:1\n",
			h.Link, i/256, i%256)
	}
	batch := filepath.Join(t.TempDir(), "filters.tc")
	if err := os.WriteFile(batch, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	hostRun(t, h, "tc", "-batch", batch)
}

// setRPS steers h's receive processing to cpu (RPS on its veth's queue).
func setRPS(t *testing.T, h *testbed.Host, cpu int) {
	t.Helper()
	mask := strconv.FormatUint(1<<cpu, 16)
	rps := fmt.Sprintf("/sys/class/net/%s/queues/rx-0/rps_cpus", h.Link)
	hostRun(t, h, "sh", "-c", fmt.Sprintf("echo %s > %s", mask, rps))
	if got := strings.TrimLeft(strings.TrimSpace(hostRun(t, h, "cat", rps)), "0,"); got != mask {
		t.Fatalf("%s: rps_cpus %q, want %q", h.Name, got, mask)
	}
}

// quieterCPU returns whichever of CPUs 0 and 1 tasks (user, nice, system
// in /proc/stat) used less over 300 ms, 1 on a tie.
func quieterCPU(t *testing.T) int {
	t.Helper()
	a := procStatCPUs(t)
	time.Sleep(300 * time.Millisecond)
	d := cpuDelta(a, procStatCPUs(t))
	if len(d) < 2 {
		t.Fatalf("/proc/stat lists %d CPUs", len(d))
	}
	cpu := 1
	if d[0].othersShare() < d[1].othersShare() {
		cpu = 0
	}
	t.Logf("tasks used CPU 0 %.1f%%, CPU 1 %.1f%% over 300 ms: steering receive work to CPU %d, the generator to the other",
		100*d[0].othersShare(), 100*d[1].othersShare(), cpu)
	return cpu
}

// noGSO makes h's veth send one segment per packet (gso_max_segs 1), so
// the receiver pays its per-packet cost for every MSS.
func noGSO(t *testing.T, h *testbed.Host) {
	t.Helper()
	nh, err := h.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	l, err := nh.LinkByName(h.Link)
	if err != nil {
		t.Fatal(err)
	}
	if err := nh.LinkSetGSOMaxSegs(l, 1); err != nil {
		t.Fatalf("%s: gso_max_segs: %v", h.Name, err)
	}
}

// TestVerdictSoftirqBound: receive processing steered to one CPU of the
// receiver (RPS) and made expensive (u32 filters walked per packet, one
// segment per packet) must give softirq-bound, naming that CPU the busiest
// while the mean over CPUs stays below the threshold. Ground truth: the
// kernel's own per-CPU softirq time (/proc/stat) puts the load on the
// steered CPU, not the other. Each attempt steers to whichever of CPUs 0
// and 1 other tasks used less just before it (a CPU hog pinned to one of
// them would take the steered CPU's time from its softirq thread) and
// pins the generator to the other, so that only other processes on the
// machine compete with the steered CPU's softirq; when they took a share
// of it and the verdict missed, the run is repeated once (logged).
func TestVerdictSoftirqBound(t *testing.T) {
	requireBench(t, true)
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil || !all.IsSet(0) || !all.IsSet(1) {
		kerneltest.Skip(t, fmt.Sprintf("needs CPUs 0 and 1 (affinity %v: %v)", all, err))
	}
	bed := verdictBed(t, nil)
	steerReceive(t, bed.B(), 1, softirqFilters)
	noGSO(t, bed.A())
	// The default probes judge /proc/stat softirq of every vector; deep
	// ones the NET_RX time the softirq probe measures.
	for _, mode := range []struct {
		name   string
		probes []string
	}{{"default", probeset.Default}, {"deep", nil}} {
		t.Run(mode.name, func(t *testing.T) {
			cfg := verdictConfig(8, 4*time.Second)
			cfg.Probes = mode.probes
			cfg.SockOpts.Congestion = "cubic" // fills the receiver's backlog until loss
			kerneltest.Retry(t, func(t *testing.T) { softirqBoundRun(t, cfg, bed) })
		})
	}
}

// softirqBoundRun is one attempt of TestVerdictSoftirqBound: a run whose
// verdict missed while other tasks took a share of the steered CPU was
// disturbed by them (tried once more).
func softirqBoundRun(t *testing.T, cfg Config, bed *testbed.Bed) {
	steered := quieterCPU(t)
	pinProcess(t, 1-steered)
	setRPS(t, bed.B(), steered)
	before, snBefore := procStatCPUs(t), softnetSqueezes(t)
	r, _ := bedRun(t, cfg, bed)
	st, snAfter := cpuDelta(before, procStatCPUs(t)), softnetSqueezes(t)
	if v := r.Verdict(analysis.RuleSoftirq); !v.Fired() && st[steered].othersShare() >= 0.05 {
		kerneltest.Disturbed(t, "softirq-bound %q (%s) while other tasks took %.1f%% of CPU %d (/proc/stat user+system)",
			v.Status, v.Summary, 100*st[steered].othersShare(), steered)
	}
	checkSoftirqVerdict(t, r, steered)
	for cpu, c := range st {
		t.Logf("/proc/stat CPU %d: softirq %.1f%%, user+system %.1f%%, idle %.1f%% of %d ticks", cpu,
			100*c.softirqShare(), 100*c.othersShare(), 100*float64(c.idle)/float64(c.total()), c.total())
	}
	if len(st) <= steered || st[steered].softirqShare() < 0.5 || st[1-steered].softirqShare() > 0.25 {
		t.Errorf("/proc/stat: softirq not on the steered CPU %d (%+v)", steered, st)
	}
	// The saturated core's net_rx_action kept stopping with work left:
	// its time squeezes rose over the run (the test's own reading of
	// /proc/net/softnet_stat), and the verdict cites that CPU's squeezes
	// over its steady state, a part of the run.
	squeezed := snAfter[steered] - snBefore[steered]
	var cited uint64
	for _, e := range r.Verdict(analysis.RuleSoftirq).Evidence {
		if _, err := fmt.Sscanf(e, "CPU "+strconv.Itoa(steered)+" softnet_stat over the steady state: %d skbs processed, %d time squeezes", new(uint64), &cited); err == nil {
			break
		}
	}
	t.Logf("softnet_stat time squeezes of CPU %d over the run: %d (test's reading); cited over the steady state: %d", steered, squeezed, cited)
	if squeezed == 0 || cited == 0 || cited > squeezed {
		t.Errorf("CPU %d time squeezes: %d over the run, %d cited in the evidence: want 0 < cited <= run", steered, squeezed, cited)
	}
	// The queue that fed the core: B's veth's rx-0, whose RPS mask this
	// attempt wrote (setRPS, through `ip netns exec`), read from B's
	// namespace into the manifest when the run started.
	feed := fmt.Sprintf("CPU %d is fed by %s rx queue 0 by RPS (rps_cpus %d)", steered, bed.B().Link, steered)
	if !slices.ContainsFunc(r.Verdict(analysis.RuleSoftirq).Evidence, func(e string) bool { return strings.HasPrefix(e, feed) }) {
		t.Errorf("softirq-bound evidence does not name the queue feeding CPU %d (want %q):\n  %s", steered, feed,
			strings.Join(r.Verdict(analysis.RuleSoftirq).Evidence, "\n  "))
	}
}

// softnetSqueezes is the test's own reading of /proc/net/softnet_stat's
// time_squeeze column (the third, hex) by CPU (the 13th column, Linux >=
// 5.10; else the row's position).
func softnetSqueezes(t *testing.T) map[int]uint64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]uint64{}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		cpu := i
		if len(f) >= 13 {
			c, err := strconv.ParseUint(f[12], 16, 32)
			if err != nil {
				t.Fatalf("softnet_stat row %q: %v", line, err)
			}
			cpu = int(c)
		}
		v, err := strconv.ParseUint(f[2], 16, 32)
		if err != nil {
			t.Fatalf("softnet_stat row %q: %v", line, err)
		}
		out[cpu] = v
	}
	return out
}

// checkSoftirqVerdict checks the softirq-bound verdict and its evidence:
// fired, busiest CPU steered, mean over CPUs below the threshold.
func checkSoftirqVerdict(t *testing.T, r *analysis.Report, steered int) {
	t.Helper()
	v := wantVerdict(t, r, analysis.RuleSoftirq, analysis.Fired)
	t.Logf("%s: %s\n  %s", v.Rule, v.Summary, strings.Join(v.Evidence, "\n  "))
	if r.BusiestCPU != steered {
		t.Errorf("busiest CPU %d, want the steered CPU %d", r.BusiestCPU, steered)
	}
	th, sum := analysis.DefaultThresholds().SoftirqShare, 0.0
	what := "NET_RX softirq"
	if r.HotSource == analysis.HotAllSoftirq {
		what = "softirq of every vector"
	}
	for _, c := range r.CPUs {
		sum += r.HotShare(c)
		if c.CPU == steered {
			wantEvidence(t, v, fmt.Sprintf("busiest CPU %d: %s %.1f%%", steered, what, 100*r.HotShare(c)))
		}
	}
	mean := sum / float64(len(r.CPUs))
	if len(r.CPUs) < 2 || mean >= th {
		t.Errorf("mean %s share over %d CPUs %.1f%%: want several CPUs averaging below %.0f%%", what, len(r.CPUs), 100*mean, 100*th)
	}
	wantEvidence(t, v, fmt.Sprintf("mean over the %d CPUs: %s %.1f%%", len(r.CPUs), what, 100*mean))
	// Every stream's receive ran where the test steered it
	// (SO_INCOMING_CPU of the generator's receiving sockets).
	if len(r.Steering) == 0 {
		t.Error("no receive steering recorded (traffic.incoming_cpu)")
	}
	for _, s := range r.Steering {
		if s.CPU != int32(steered) {
			t.Errorf("stream %d (%s): received on CPU %d, steered to %d", s.Stream, s.Local, s.CPU, steered)
		}
	}
	wantEvidence(t, v, fmt.Sprintf("were received on CPU %d", steered))
}

// cpuTime is one CPU's /proc/stat ticks.
type cpuTime struct{ busy, softirq, idle uint64 }

func (c cpuTime) total() uint64 { return c.busy + c.softirq + c.idle }

// softirqShare and othersShare are the fractions of the CPU's ticks in
// softirq and in tasks (user, nice, system).
func (c cpuTime) softirqShare() float64 { return float64(c.softirq) / float64(max(c.total(), 1)) }
func (c cpuTime) othersShare() float64  { return float64(c.busy) / float64(max(c.total(), 1)) }

// procStatCPUs reads each CPU's ticks from /proc/stat.
func procStatCPUs(t *testing.T) []cpuTime {
	t.Helper()
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []cpuTime
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n := make([]uint64, 8) // user nice system idle iowait irq softirq steal
		for i := range n {
			n[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		out = append(out, cpuTime{busy: n[0] + n[1] + n[2], softirq: n[6], idle: n[3] + n[4]})
	}
	return out
}

// cpuDelta returns after - before per CPU.
func cpuDelta(before, after []cpuTime) []cpuTime {
	out := make([]cpuTime, min(len(before), len(after)))
	for i := range out {
		out[i] = cpuTime{after[i].busy - before[i].busy, after[i].softirq - before[i].softirq, after[i].idle - before[i].idle}
	}
	return out
}

// pinProcess restricts every thread of this process (and so the threads it
// creates later) to cpu until the test ends, so the traffic generator stays
// off the other CPUs.
func pinProcess(t *testing.T, cpu int) {
	t.Helper()
	var one, all unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	setAll := func(set *unix.CPUSet) error {
		// Twice: a thread created while the first pass ran may have
		// inherited the old mask.
		for range 2 {
			ents, err := os.ReadDir("/proc/self/task")
			if err != nil {
				return err
			}
			for _, e := range ents {
				tid, _ := strconv.Atoi(e.Name())
				if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
					return fmt.Errorf("affinity of thread %d: %w", tid, err)
				}
			}
		}
		return nil
	}
	t.Cleanup(func() {
		if err := setAll(&all); err != nil {
			t.Errorf("restore affinity: %v", err)
		}
	})
	if err := setAll(&one); err != nil {
		t.Fatal(err)
	}
}

// TestVerdictWireBound: HTB on a router at 2 Gbit/s, far below what the
// host sends, given as bench's --link-speed: wire-bound fires with the
// rated rate in its evidence, taken from the manifest (and an analysis
// override of the rated speed turns it off). Ground truth: the shaper
// dropped (demand exceeded the rate) and B's interface carried the rate.
//
// A run whose shaped path fell short of 90% of the rate while the host's
// CPUs were saturated (other load) was disturbed: tried once more.
func TestVerdictWireBound(t *testing.T) {
	requireBench(t, true)
	kerneltest.Retry(t, testWireBound)
}

func testWireBound(t *testing.T) {
	const rate = 2e9
	bed := verdictBed(t, &testbed.RoutedOptions{RateBps: rate})
	cfg := verdictConfig(4, 4*time.Second)
	cfg.LinkSpeedBps = rate
	cpu0 := procStatCPUs(t)
	r, run := bedRun(t, cfg, bed)
	shaperStarved(t, r, rate, cpuDelta(cpu0, procStatCPUs(t)), analysis.DefaultThresholds().WireFraction)
	drops, err := bed.QdiscDrops()
	if err != nil {
		t.Fatal(err)
	}
	v := wantVerdict(t, r, analysis.RuleWire, analysis.Fired)
	t.Logf("%s: %s\n  %s (HTB drops %d)", v.Rule, v.Summary, strings.Join(v.Evidence, "\n  "), drops)
	wantEvidence(t, v, "of the rated 2.00 Gbit/s", analysis.ConfigLinkSpeed)
	wantVerdict(t, r, analysis.RuleSoftirq, analysis.NotFired)
	wantVerdict(t, r, analysis.RuleRateLimited, analysis.NotFired)
	if drops == 0 {
		t.Errorf("HTB dropped nothing: the sender never exceeded %g bit/s", rate)
	}
	// B's interface counter (L2 bytes, what HTB counts) carried the rate.
	if rt := r.Rx.Rate(analysis.CounterNetlink); rt == nil || rt.W == nil || rt.W.SteadyBps < 0.85*rate || rt.W.SteadyBps > 1.02*rate {
		t.Errorf("B's interface steady rate %+v, want 85-102%% of the HTB's %g bit/s", rt, rate)
	} else {
		t.Logf("B's interface (netlink) steady state %.3f Gbit/s", rt.W.SteadyBps/1e9)
	}
	// Another rated speed given to analyze overrides the run's own.
	r2, err := analysis.Analyze(run, analysis.Options{LinkSpeedBps: 10 * rate})
	if err != nil {
		t.Fatal(err)
	}
	if v := r2.Verdict(analysis.RuleWire); v.Status != analysis.NotFired || r2.RatedSource != "--link-speed" {
		t.Errorf("analysed with --link-speed %g: wire-bound %q (%s), rated from %q", 10*rate, v.Status, v.Summary, r2.RatedSource)
	}
}

// streamRuns records one run of base per stream count over bed and returns
// their reports in that order. With a shaper rate (shaped > 0: the bed's
// HTB), each run's retransmit count must be within 2% of the kernel's
// TcpRetransSegs delta in A and appear in the rate-limited verdict's
// evidence, and a run whose shaped path fell short of its rate while the
// host's CPUs were saturated was disturbed (shaperStarved).
func streamRuns(t *testing.T, bed *testbed.Bed, base Config, shaped float64, streams ...int) []*analysis.Report {
	t.Helper()
	check := shaped > 0
	var out []*analysis.Report
	for _, n := range streams {
		before, cpu0 := retransSegs(t, bed.A()), procStatCPUs(t)
		base.Streams = n
		r, _ := bedRun(t, base, bed)
		kernel := retransSegs(t, bed.A()) - before
		if check {
			shaperStarved(t, r, shaped, cpuDelta(cpu0, procStatCPUs(t)), 0.85)
		}
		out = append(out, r)
		v := r.Verdict(analysis.RuleRateLimited)
		t.Logf("%d streams: %s %q: %s\n  %s\n  kernel TcpRetransSegs delta %d", n, v.Rule, v.Status, v.Summary,
			strings.Join(v.Evidence, "\n  "), kernel)
		if check {
			wantEvidence(t, v, fmt.Sprintf("retransmits %d segments", r.Retx.Segments))
			if kernel == 0 || offBy(float64(r.Retx.Segments), float64(kernel)) > 0.02 {
				t.Errorf("%d streams: report's %d retransmits, kernel's %d", n, r.Retx.Segments, kernel)
			}
		}
	}
	return out
}

// shaperStarved calls a run disturbed when its shaped path (B's interface,
// netlink, steady state) moved less than min of the HTB's rate while the
// host's CPUs were >= 95% busy over the run (/proc/stat, every CPU): the
// machine's other load, not the shaper, then set the rate. On a machine
// with CPU to spare a path short of its rate is a failure of the test's
// own checks.
func shaperStarved(t *testing.T, r *analysis.Report, rate float64, st []cpuTime, min float64) {
	t.Helper()
	rt := r.Rx.Rate(analysis.CounterNetlink)
	if rt == nil || rt.W == nil || rt.W.SteadyBps >= min*rate {
		return
	}
	var busy, total uint64
	for _, c := range st {
		busy += c.busy + c.softirq
		total += c.total()
	}
	if share := float64(busy) / float64(max(total, 1)); share >= 0.95 {
		kerneltest.Disturbed(t, "the shaped path moved %.3f Gbit/s, %.1f%% of the HTB's %.1f Gbit/s, while the host's CPUs were %.1f%% busy (/proc/stat)",
			rt.W.SteadyBps/1e9, 100*rt.W.SteadyBps/rate, rate/1e9, 100*share)
	}
}

// compareReports is `netprof analyze --compare` over the reports.
func compareReports(t *testing.T, rs ...*analysis.Report) *analysis.Comparison {
	t.Helper()
	var rows []analysis.CompareRow
	for _, r := range rs {
		rows = append(rows, analysis.CompareRowOf(r))
	}
	c := analysis.Compare(rows, analysis.Thresholds{}, analysis.Decimal)
	var b strings.Builder
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("compare:\n%s", b.String())
	return c
}

// TestVerdictRateLimited: a 1 Gbit/s HTB with a 128 KiB byte queue on a
// router, no rated speed known: rate-limited fires on a single run (8
// streams, then 16), and compare of the two flags the limiter signature;
// compare of 4 and 8 streams over a direct veth pair (nothing limits) must
// not.
// Ground truth: the HTB's own drops and the kernel's TcpRetransSegs in the
// sender's namespace.
//
// A run during which this process's goroutines were held off the CPU for
// more than a quarter interval (other load on the machine; kerneltest.Lag),
// or whose shaped path moved less than 85% of the HTB's rate while the
// host's CPUs were saturated (shaperStarved), was disturbed: the test is
// tried once more.
func TestVerdictRateLimited(t *testing.T) {
	requireBench(t, true)
	kerneltest.Retry(t, testRateLimited)
}

func testRateLimited(t *testing.T) {
	lag := kerneltest.StartLag(t, 10*time.Millisecond)
	bed := verdictBed(t, &testbed.RoutedOptions{RateBps: 1e9, QueueBytes: 128 << 10})
	// No warm-up, so the kernel's count covers what the report counts; 1 s
	// intervals, so the flatness is the limiter's, not the shared
	// machine's hiccups; 9 of them, so one interval whose counters were
	// read tens of ms off its end (the recorder's goroutine preempted by
	// the 8 streams on 2 CPUs) cannot alone make it "not flat" (6 s runs:
	// CV 6.0% over 4 steady intervals once in about 8 CI runs). 8 streams
	// and 16, not fewer: few streams' losses at a 128 KiB queue come in
	// step often enough to dent the total (2 streams under the CI's CPU
	// hog: CV 7.4% over 7 intervals at 0.95 Gbit/s; 8 streams: 1.4%), and
	// 4 streams fill less of the rate than 8 (a clean-clone CI: 0.89 vs
	// 0.94 Gbit/s, 5.6% apart, so compare rightly saw throughput move).
	cfg := verdictConfig(0, 9*time.Second)
	cfg.Warmup, cfg.Interval = 0, time.Second
	limited := streamRuns(t, bed, cfg, 1e9, 8, 16)
	lag.Check(t, cfg.Interval/4)
	for _, r := range limited {
		wantVerdict(t, r, analysis.RuleRateLimited, analysis.Fired)
		wantVerdict(t, r, analysis.RuleWire, analysis.Skipped) // no rated speed
	}
	if drops, err := bed.QdiscDrops(); err != nil || drops == 0 {
		t.Errorf("HTB drops %d (%v): the limiter never dropped", drops, err)
	}
	c := compareReports(t, limited...)
	if len(c.Flags) != 1 || !strings.Contains(c.Flags[0].Summary, "streams 8 -> 16 did not move throughput: rate-limited path confirmed") {
		t.Errorf("compare of the rate-limited runs: flags %+v, want the limiter confirmed", c.Flags)
	}
	direct := streamRuns(t, verdictBed(t, nil), cfg, 0, 4, 8)
	lag.Check(t, cfg.Interval/4)
	if c := compareReports(t, direct...); len(c.Flags) != 0 {
		t.Errorf("compare of direct veth runs: flags %+v, want none", c.Flags)
	}
}
