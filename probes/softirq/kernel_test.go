package softirq_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/probes/softirq"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/bedload"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// Softirq vectors (include/linux/interrupt.h).
const (
	vecNetTx = 2
	vecNetRx = 3
)

// Tolerances of the softirq comparison: 5% of the tracefs figure, or
// softirqFloorNs for CPUs with little softirq time, where the few µs each
// end of the window and each reader's own overhead are a large share.
const (
	softirqTolerance = 0.05
	// softirqEmulatedTolerance is the bound under TCG emulation
	// (NETPROF_EMULATED, set by tools/vmtest).
	softirqEmulatedTolerance = 0.25
	softirqFloorNs           = 2e6
)

// load attaches the softirq probe (closed when the test ends), failing
// unless both programs attached.
func load(t *testing.T) *loader.Loaded {
	t.Helper()
	spec, err := softirq.Spec()
	l := kerneltest.Load(t, spec, err)
	if l.Attached() != 2 {
		t.Fatalf("attached %d of 2 softirq programs: %+v", l.Attached(), l.Status)
	}
	return l
}

// softirqTotals is per-vector time and completed count.
type softirqTotals struct{ ns, count [vecNetRx + 1]uint64 }

// totals sums, for one CPU, the NET_RX and NET_TX softirq time inside
// [w0, w1] (CLOCK_MONOTONIC ns) from entry→exit pairs, clipping softirqs
// that straddle an end as the probe does; count is the pairs whose exit
// falls inside. The text trace has µs timestamps: truncating both ends of
// a pair is unbiased, so over thousands of pairs the error is a few µs.
func tracefsTotals(t *testing.T, tf *kerneltest.Tracefs, cpu int, w0, w1 int64) softirqTotals {
	t.Helper()
	var tot softirqTotals
	var open [vecNetRx + 1]int64 // entry time per vector, 0 = none
	tf.Lines(t, cpu, func(line string) {
		ts, vec, entry, ok := parseSoftirqLine(line)
		if !ok || (vec != vecNetRx && vec != vecNetTx) {
			return
		}
		if entry {
			open[vec] = ts
			return
		}
		if open[vec] == 0 {
			return // exit of a softirq that began before tracing
		}
		if lo, hi := max(open[vec], w0), min(ts, w1); hi > lo {
			tot.ns[vec] += uint64(hi - lo)
		}
		if ts >= w0 && ts <= w1 {
			tot.count[vec]++
		}
		open[vec] = 0
	})
	for vec, s := range open { // still running when tracing stopped
		if s != 0 && s < w1 {
			tot.ns[vec] += uint64(w1 - max(s, w0))
		}
	}
	return tot
}

// parseSoftirqLine parses "comm-pid [001] ..s1. 1407.841588: softirq_entry:
// vec=3 [action=NET_RX]" into a timestamp in ns, the vector and whether it
// is an entry. Fields are taken from the end: a task name may hold spaces.
func parseSoftirqLine(line string) (ts int64, vec int, entry, ok bool) {
	f := strings.Fields(line)
	n := len(f)
	if n < 5 || (f[n-3] != "softirq_entry:" && f[n-3] != "softirq_exit:") {
		return 0, 0, false, false
	}
	v, err := strconv.Atoi(strings.TrimPrefix(f[n-2], "vec="))
	sec, us, found := strings.Cut(strings.TrimSuffix(f[n-4], ":"), ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	u, err2 := strconv.ParseInt(us, 10, 64)
	if err != nil || err1 != nil || err2 != nil || !found || len(us) != 6 {
		return 0, 0, false, false
	}
	return s*1e9 + u*1e3, v, f[n-3] == "softirq_entry:", true
}

// monoOffset returns CLOCK_REALTIME − CLOCK_MONOTONIC in ns, from the
// tightest of several back-to-back readings.
func monoOffset(t *testing.T) int64 {
	t.Helper()
	best, off := int64(math.MaxInt64), int64(0)
	for range 20 {
		var r0, m, r1 unix.Timespec
		if unix.ClockGettime(unix.CLOCK_REALTIME, &r0) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC, &m) != nil ||
			unix.ClockGettime(unix.CLOCK_REALTIME, &r1) != nil {
			t.Fatal("clock_gettime failed")
		}
		if d := r1.Nano() - r0.Nano(); d < best {
			best, off = d, (r0.Nano()+r1.Nano())/2-m.Nano()
		}
	}
	return off
}

// TestSoftirqVsTracefs records the softirq probe's per-CPU rows over a
// 4-stream transfer across the test bed and, at the same time,
// irq:softirq_entry/exit in a tracefs instance, and compares per-CPU
// NET_RX (and NET_TX) time and counts over the rows' window. Softirq time
// is host-wide: whatever else runs on the machine is in both.
func TestSoftirqVsTracefs(t *testing.T) {
	tf := kerneltest.NewTracefs(t, "softirq", 65536, // per CPU; ~16 B per event, checked below
		kerneltest.TraceEvent{Name: "irq/softirq_entry", Filter: fmt.Sprintf("vec == %d || vec == %d", vecNetRx, vecNetTx)},
		kerneltest.TraceEvent{Name: "irq/softirq_exit", Filter: fmt.Sprintf("vec == %d || vec == %d", vecNetRx, vecNetTx)})
	l := load(t)
	stats, err := loader.EnableStats()
	if err != nil {
		kerneltest.Skip(t, fmt.Sprintf("BPF run-time statistics: %v", err))
	}
	defer stats.Close()
	r, err := softirq.NewReader(l)
	if err != nil {
		t.Fatal(err)
	}
	bed := testbedtest.New(t, testbed.Options{})
	var mu sync.Mutex
	var rows []trace.CPURow
	rec := &measure.Recorder{Samplers: []measure.Sampler{softirq.NewSampler(r)}, Period: 500 * time.Millisecond,
		OnInterval: func(_ time.Time, iv *trace.Interval) {
			mu.Lock()
			rows = append(rows, iv.CPUs...)
			mu.Unlock()
		}}
	off0 := monoOffset(t)
	stats0 := progStats(t, l)
	tf.On(t)
	if _, err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var recErr error
	var wg sync.WaitGroup
	wg.Go(func() { recErr = rec.Run(ctx) })
	bedload.Run(t, bed, traffic.Config{Streams: 4, Duration: 3 * time.Second, BlockSize: traffic.DefaultBlockSize})
	cancel()
	wg.Wait()
	tf.Off(t)
	if recErr != nil {
		t.Fatal(recErr)
	}
	if d := monoOffset(t) - off0; d > 1e6 || d < -1e6 {
		t.Fatalf("wall clock moved %d ns against CLOCK_MONOTONIC during the run", d)
	}
	tf.CheckNoOverrun(t)
	// The rows' window in CLOCK_MONOTONIC: rows end at their time and
	// last interval_ns; the probe's reads happen a few µs after each
	// tick.
	w0, w1 := int64(math.MaxInt64), int64(math.MinInt64)
	probe := map[int]*softirqTotals{}
	for _, r := range rows {
		rx, tx := set(t, "net_rx_softirq_ns", r.NetRxSoftirqNs), set(t, "net_tx_softirq_ns", r.NetTxSoftirqNs)
		if rx > uint64(r.IntervalNs) || tx > uint64(r.IntervalNs) {
			t.Errorf("cpu %d at %v: softirq rx %d / tx %d ns > interval %d ns", r.CPU, r.Time, rx, tx, r.IntervalNs)
		}
		end := r.Time.UnixNano() - off0
		w0, w1 = min(w0, end-r.IntervalNs), max(w1, end)
		p := probe[int(r.CPU)]
		if p == nil {
			p = &softirqTotals{}
			probe[int(r.CPU)] = p
		}
		p.ns[vecNetRx] += rx
		p.ns[vecNetTx] += tx
		p.count[vecNetRx] += set(t, "net_rx_softirq_count", r.NetRxSoftirqCount)
		p.count[vecNetTx] += set(t, "net_tx_softirq_count", r.NetTxSoftirqCount)
	}
	skew := callbackSkewNs(t, stats0, progStats(t, l))
	var rxTotal uint64
	for _, cpu := range tf.CPUs(t) {
		want := tracefsTotals(t, tf, cpu, w0, w1)
		got := probe[cpu]
		if got == nil {
			got = &softirqTotals{}
		}
		for _, v := range []struct {
			vec  int
			name string
		}{{vecNetRx, "NET_RX"}, {vecNetTx, "NET_TX"}} {
			g, w := float64(got.ns[v.vec]), float64(want.ns[v.vec])
			// The probe and tracefs take their timestamps in different
			// callbacks of the same tracepoints: at each end of a softirq
			// one callback runs between the two clock reads, one of the
			// probe's programs or tracefs's event write (taken to cost as
			// much). So per softirq they may differ by up to twice the
			// probe's entry+exit run time: ~0.4 µs here, several µs
			// under QEMU's emulation, where that exceeds 5% (counts
			// equal, time 6.5% apart seen on 6.1 and 6.12). A guest whose
			// vCPUs take turns on one host thread (single-threaded TCG)
			// can also switch vCPUs between the two callbacks: twice that
			// again is allowed (3.1 µs per softirq seen on 6.12 with 1.0
			// µs of program time). On the host 5% is the larger bound.
			frac := softirqTolerance
			if os.Getenv("NETPROF_EMULATED") != "" {
				// Under TCG a vCPU can be switched out between the two
				// callbacks for a whole time slice (14 µs per softirq on
				// average seen on 6.12): the time is checked loosely there,
				// the counts exactly.
				frac = softirqEmulatedTolerance
				// Each end of the window can cut one softirq of a CPU,
				// counted on one side of it by the probe (at its exit)
				// and the other by tracefs's window (its entry): 6.1
				// under TCG once counted 3439 against 3440.
				if gc, wc := got.count[v.vec], want.count[v.vec]; gc > wc+2 || wc > gc+2 {
					t.Errorf("cpu%d %s: probe counted %d softirqs, tracefs %d (at most one apart at each end of the window)", cpu, v.name, gc, wc)
				}
			}
			tol := max(frac*w, softirqFloorNs, 4*float64(want.count[v.vec])*skew)
			t.Logf("cpu%d %s: probe %9.3f ms (%6d) tracefs %9.3f ms (%6d): %+.2f%% (%+.3f ms)", cpu, v.name,
				g/1e6, got.count[v.vec], w/1e6, want.count[v.vec], 100*(g-w)/max(w, 1), (g-w)/1e6)
			if math.Abs(g-w) > tol {
				t.Errorf("cpu%d %s: probe %.3f ms vs tracefs %.3f ms, more than %.3f ms apart", cpu, v.name, g/1e6, w/1e6, tol/1e6)
			}
		}
		rxTotal += want.ns[vecNetRx]
	}
	if rxTotal < 10*softirqFloorNs {
		t.Fatalf("only %.1f ms of NET_RX in the run: too little to compare", float64(rxTotal)/1e6)
	}
}

// progStats returns the softirq programs' cumulative run time and count
// (BPF run-time statistics), by program name.
func progStats(t *testing.T, l *loader.Loaded) map[string]loader.ProgramStats {
	t.Helper()
	st, err := l.Stats()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]loader.ProgramStats{}
	for _, s := range st {
		out[s.Name] = s
	}
	return out
}

// callbackSkewNs returns the mean run time of np_si_entry plus np_si_exit
// between two readings of their statistics.
func callbackSkewNs(t *testing.T, before, after map[string]loader.ProgramStats) float64 {
	t.Helper()
	var skew float64
	for _, name := range []string{"np_si_entry", "np_si_exit"} {
		if n := after[name].RunCount - before[name].RunCount; n > 0 {
			skew += float64(after[name].RunTimeNs-before[name].RunTimeNs) / float64(n)
		}
	}
	t.Logf("softirq programs: %.0f ns per entry+exit (four times that allowed per softirq between the probe's and tracefs's clocks)", skew)
	return skew
}

// maxSoftirqNs bounds one softirq run: net_rx_action stops after
// netdev_budget_usecs (2 ms by default) and handle_softirqs after 2 ms, so
// 20 ms is far beyond anything real.
const maxSoftirqNs = 20e6

// TestSoftirqAttachUnderLoad attaches the softirq probe again and again
// while a transfer keeps NET_RX softirqs running on every CPU, so attaches
// land inside running softirqs and between entry and exit. The first read
// after an attach may only hold time since the attach (an exit without a
// recorded entry is ignored: no negative, no uptime-sized value), and no
// CPU may show softirq time that no completed softirq explains (a start
// timestamp left behind by an entry whose exit was missed).
func TestSoftirqAttachUnderLoad(t *testing.T) {
	kerneltest.RequireRoot(t)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	bed := testbedtest.New(t, testbed.Options{})
	// Stopped after the last attach.
	tr := bedload.Start(t, bed, traffic.Config{Streams: 4, Duration: 10 * time.Second, BlockSize: traffic.DefaultBlockSize})
	time.Sleep(500 * time.Millisecond) // sending
	for i := range 10 {
		attachOnce(t, i)
	}
	early := tr.Ended()
	tr.Stop()
	if early {
		t.Fatal("the transfer ended before the last attach: not tested under load")
	}
}

func attachOnce(t *testing.T, i int) {
	t.Helper()
	spec, err := softirq.Spec()
	if err != nil {
		t.Fatal(err)
	}
	before := monoNow(t)
	l, err := loader.Load(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Attached() != 2 {
		t.Fatalf("attached %d of 2 softirq programs: %+v", l.Attached(), l.Status)
	}
	r, err := softirq.NewReader(l)
	if err != nil {
		t.Fatal(err)
	}
	first, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	mid := monoNow(t)
	time.Sleep(100 * time.Millisecond)
	second, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	elapsed := monoNow(t) - before
	var rx uint64
	for cpu := range second {
		f, s := first[cpu], second[cpu]
		if f.NetRxNs > mid-before || f.NetTxNs > mid-before {
			t.Errorf("attach %d cpu %d: first read rx %d / tx %d ns, but the probe is only %d ns old", i, cpu, f.NetRxNs, f.NetTxNs, mid-before)
		}
		for _, v := range []struct {
			name       string
			ns0, ns1   uint64
			cnt0, cnt1 uint64
		}{{"NET_RX", f.NetRxNs, s.NetRxNs, f.NetRxCount, s.NetRxCount}, {"NET_TX", f.NetTxNs, s.NetTxNs, f.NetTxCount, s.NetTxCount}} {
			if v.ns1 < v.ns0 || v.cnt1 < v.cnt0 {
				t.Errorf("attach %d cpu %d %s: totals went backwards: %d→%d ns, %d→%d", i, cpu, v.name, v.ns0, v.ns1, v.cnt0, v.cnt1)
				continue
			}
			d := v.ns1 - v.ns0
			if d > elapsed || float64(d) > float64(v.cnt1-v.cnt0+2)*maxSoftirqNs {
				t.Errorf("attach %d cpu %d %s: %d ns in %d ns with %d softirqs completed", i, cpu, v.name, d, elapsed, v.cnt1-v.cnt0)
			}
		}
		rx += s.NetRxCount
	}
	if rx == 0 {
		t.Errorf("attach %d: no NET_RX softirq completed under load", i)
	}
}

// monoNow returns CLOCK_MONOTONIC in ns (the clock of bpf_ktime_get_ns).
func monoNow(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// set returns *p, failing t when the column is null (the probe ran, so
// every row of it must have a value).
func set(t *testing.T, col string, p *uint64) uint64 {
	t.Helper()
	if p == nil {
		t.Fatalf("cpus.%s null in a run with its probe on", col)
	}
	return *p
}
