package bench

import (
	"bufio"
	"context"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/trace"
)

// userHZTick is one /proc/stat tick: USER_HZ is 100 on every architecture
// netprof builds for (x86, arm64), whatever the kernel's CONFIG_HZ.
const userHZTick = 10 * time.Millisecond

// statTicks is one CPU's softirq and total (user..steal) USER_HZ ticks.
type statTicks struct{ softirq, total int64 }

// stat is the test's own reading of /proc/stat (its own parser, not
// cpustat's), with when it was taken.
type stat struct {
	at   time.Time
	cpus map[int]statTicks
}

func readStat(t *testing.T) stat {
	t.Helper()
	f, err := os.Open("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := stat{cpus: map[int]statTicks{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 9 || !strings.HasPrefix(fs[0], "cpu") || fs[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(fs[0][3:])
		if err != nil {
			t.Fatalf("/proc/stat line %q", fs[0])
		}
		var v statTicks
		for i, x := range fs[1:9] { // user nice system idle iowait irq softirq steal
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				t.Fatalf("/proc/stat %s field %d: %v", fs[0], i+1, err)
			}
			v.total += n
			if i == 6 {
				v.softirq = n
			}
		}
		s.cpus[cpu] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	s.at = time.Now()
	return s
}

// ns converts ticks to nanoseconds.
func ns(ticks int64) int64 { return ticks * userHZTick.Nanoseconds() }

// A recorded run's proc_* columns against the test's own /proc/stat
// readings: each of the sampler's readings is bracketed by two of the
// test's, so since the counters only grow, every interval's proc_softirq_ns
// and proc_total_ns lie exactly between the bracket's inner and outer
// deltas, with no tolerance. Then the run sums against wall clock and
// against readings taken before and after the whole run, and
// proc_softirq_ns (every vector) against BPF's NET_RX time.
func TestBenchProcStatColumns(t *testing.T) {
	requireBench(t, true)
	type bracket struct{ pre, post stat }
	var brackets []bracket
	orig := readCPU
	readCPU = func() (cpustat.Sample, error) {
		pre := readStat(t)
		s, err := orig()
		brackets = append(brackets, bracket{pre, readStat(t)})
		return s, err
	}
	t.Cleanup(func() { readCPU = orig })

	cfg := DefaultConfig()
	cfg.Duration = 3 * time.Second
	cfg.Out = filepath.Join(t.TempDir(), "run")
	before := readStat(t)
	res, err := Run(context.Background(), cfg, "test", nil)
	after := readStat(t)
	if err != nil || res.Status != "ok" {
		t.Fatalf("bench: %v (status %v)", err, res)
	}
	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	ivs := byInterval(t, rows)
	if len(brackets) != len(ivs)+1 {
		t.Fatalf("%d /proc/stat readings for %d intervals, want one more", len(brackets), len(ivs))
	}
	sums := map[int32]*cpuSums{}
	for k, iv := range ivs {
		for _, r := range iv {
			checkProcRow(t, r, brackets[k].pre, brackets[k].post, brackets[k+1].pre, brackets[k+1].post)
			s := sums[r.CPU]
			if s == nil {
				s = &cpuSums{}
				sums[r.CPU] = s
			}
			s.add(r)
		}
	}
	checkProcRun(t, sums, ivs, run.Manifest.Start, before, after)
}

// byInterval groups rows by interval, in time order.
func byInterval(t *testing.T, rows []trace.CPURow) [][]trace.CPURow {
	t.Helper()
	m := map[int64][]trace.CPURow{}
	for _, r := range rows {
		m[r.Time.UnixNano()] = append(m[r.Time.UnixNano()], r)
	}
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([][]trace.CPURow, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	if len(out) < 3 {
		t.Fatalf("%d intervals of cpus rows, want >= 3", len(out))
	}
	return out
}

// checkProcRow checks one row against the test's readings around the
// sampler's reading at its interval's start (a0, a1) and end (b0, b1).
func checkProcRow(t *testing.T, r trace.CPURow, a0, a1, b0, b1 stat) {
	t.Helper()
	if r.ProcSoftirqNs == nil || r.ProcBusyNs == nil || r.ProcTotalNs == nil {
		t.Fatalf("cpu %d at %v: proc_* null (%v %v %v)", r.CPU, r.Time, r.ProcSoftirqNs, r.ProcBusyNs, r.ProcTotalNs)
	}
	soft, busy, total := int64(*r.ProcSoftirqNs), int64(*r.ProcBusyNs), int64(*r.ProcTotalNs)
	if soft > busy || busy > total {
		t.Errorf("cpu %d at %v: softirq %d > busy %d or busy > total %d ns", r.CPU, r.Time, soft, busy, total)
	}
	c := int(r.CPU)
	within := func(what string, got int64, f func(statTicks) int64) {
		lo, hi := ns(f(b0.cpus[c])-f(a1.cpus[c])), ns(f(b1.cpus[c])-f(a0.cpus[c]))
		if got < lo || got > hi {
			t.Errorf("cpu %d at %v: %s %d ns, outside the test's own readings [%d, %d]", c, r.Time, what, got, lo, hi)
		}
	}
	within("proc_softirq_ns", soft, func(s statTicks) int64 { return s.softirq })
	within("proc_total_ns", total, func(s statTicks) int64 { return s.total })
}

// cpuSums adds one CPU's rows over the run.
type cpuSums struct{ procSoft, procTotal, netRx, intervalNs int64 }

func (s *cpuSums) add(r trace.CPURow) {
	s.procSoft += int64(*r.ProcSoftirqNs)
	s.procTotal += int64(*r.ProcTotalNs)
	if r.NetRxSoftirqNs != nil {
		s.netRx += int64(*r.NetRxSoftirqNs)
	}
	s.intervalNs += r.IntervalNs
}

// checkProcRun checks the run's sums per CPU: proc_total_ns against wall
// clock, proc_softirq_ns against the test's readings before and after the
// whole run, and against BPF's NET_RX time.
func checkProcRun(t *testing.T, sums map[int32]*cpuSums, ivs [][]trace.CPURow, start time.Time, before, after stat) {
	t.Helper()
	tick := userHZTick.Nanoseconds()
	n := int64(len(ivs))
	last := ivs[len(ivs)-1][0]
	gap := start.Sub(before.at) + after.at.Sub(last.Time) // outside the recorded intervals
	for cpu, s := range sums {
		c := int(cpu)
		// Wall clock: each interval's reading is a few µs off its
		// boundaries and rounded to a tick, and the kernel's accounting is
		// only about wall time: with tick accounting it charges one
		// TICK_NSEC per tick of a busy CPU, so ticks a hypervisor delays
		// are lost (here a saturated vCPU's total runs 1-3% short per
		// interval). Allowed: a tick per interval plus 3% of the run.
		lim := n*tick + s.intervalNs*3/100
		if d := s.procTotal - s.intervalNs; d < -lim || d > lim {
			t.Errorf("cpu %d: proc_total_ns sums to %d over %d ns of intervals: off by %d ns, more than %d ns (%d ticks + 3%%)",
				cpu, s.procTotal, s.intervalNs, d, lim, n)
		}
		// The test's readings bracket the run: the columns miss only the
		// softirq time between them and the run's first and last readings
		// (at most that wall time, plus a kernel tick charged whole and a
		// tick of rounding at each end).
		whole := ns(after.cpus[c].softirq - before.cpus[c].softirq)
		slack := gap.Nanoseconds() + 4*tick
		if miss := whole - s.procSoft; miss < 0 || miss > slack {
			t.Errorf("cpu %d: proc_softirq_ns sums to %d, /proc/stat moved %d around the run: missing %d ns, allowed [0, %d]",
				cpu, s.procSoft, whole, miss, slack)
		}
		// Every vector includes NET_RX: the sampled figure is at least
		// the exact one, less a tick of rounding and 3 sigma of tick
		// sampling (a count of ~netRx/tick samples).
		if lim := s.netRx - tick - int64(3*math.Sqrt(float64(s.netRx)*float64(tick))); s.procSoft < lim {
			t.Errorf("cpu %d: proc_softirq_ns %d < BPF net_rx_softirq_ns %d less sampling error (limit %d)", cpu, s.procSoft, s.netRx, lim)
		}
		t.Logf("cpu %d: %d intervals, %.3f s: proc_total %.3f s (%+.1f ms), proc_softirq %.3f s (around the run %.3f s, gap %v), BPF NET_RX %.3f s",
			cpu, n, float64(s.intervalNs)/1e9, float64(s.procTotal)/1e9, float64(s.procTotal-s.intervalNs)/1e6,
			float64(s.procSoft)/1e9, float64(whole)/1e9, gap.Round(time.Millisecond), float64(s.netRx)/1e9)
	}
}
