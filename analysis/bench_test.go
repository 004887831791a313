package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

// benchSize returns the benchmark trace's intervals and flows: 1 hour of
// 1 s intervals × 10,000 flows (36 M flow rows) unless
// NETPROF_BENCH_INTERVALS / NETPROF_BENCH_FLOWS say otherwise.
func benchSize() (intervals, flows int) {
	get := func(env string, def int) int {
		if n, err := strconv.Atoi(os.Getenv(env)); err == nil && n > 0 {
			return n
		}
		return def
	}
	return get("NETPROF_BENCH_INTERVALS", 3600), get("NETPROF_BENCH_FLOWS", 10_000)
}

// writeBenchTrace records intervals × flows flow rows (plus 16 generator
// streams, 2 interfaces and 4 CPUs per interval) into dir.
func writeBenchTrace(dir string, intervals, flows int) error {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := trace.Create(dir, trace.Manifest{Start: start, End: start.Add(time.Duration(intervals) * time.Second),
		IntervalNs: 1e9, CPUCount: 4, Status: trace.StatusOK,
		Interfaces: []trace.Interface{{Name: "eth0", Role: trace.RoleReceiver, MTU: 1500}, {Name: "eth1", Role: trace.RoleSender, MTU: 1500}}})
	if err != nil {
		return err
	}
	src, dst := make([]string, flows), make([]string, 200)
	for f := range flows {
		src[f] = fmt.Sprintf("198.18.%d.%d", f/250, f%250+1)
	}
	for p := range dst {
		dst[p] = fmt.Sprintf("198.19.0.%d", p+1)
	}
	iv := trace.Interval{Flows: make([]trace.FlowRow, flows)}
	for i := range intervals {
		fillBenchInterval(&iv, start.Add(time.Duration(i+1)*time.Second), i, src, dst)
		if err := w.WriteInterval(iv); err != nil {
			return err
		}
	}
	return w.Close(start.Add(time.Duration(intervals)*time.Second), trace.StatusOK)
}

// fillBenchInterval sets iv's rows for interval i ending at end.
func fillBenchInterval(iv *trace.Interval, end time.Time, i int, src, dst []string) {
	u32 := func(v int) *uint32 { x := uint32(v); return &x }
	u64 := func(v int) *uint64 { x := uint64(v); return &x }
	for f := range iv.Flows {
		x := i*7 + f*13
		iv.Flows[f] = trace.FlowRow{Time: end, IntervalNs: 1e9 + int64(x%997), Netns: 1, Ifindex: 2, Ifname: "eth1",
			Family: 4, Proto: 6, SrcAddr: src[f], SrcPort: uint16(40000 + f%20000), DstAddr: dst[f%len(dst)], DstPort: 5001,
			TxBytes: uint64(1_000_000 + x%100_000), TxPackets: uint64(700 + x%70), TxSkbs: uint64(20 + x%5),
			TxWireBytes: uint64(1_040_000 + x%100_000), RxBytes: uint64(50_000 + x%1000), RxPackets: uint64(350 + x%30),
			RxSkbs: 300, RxWireBytes: 50_000, Retransmits: uint64(x % 3), RTTSamples: uint64(300 + x%50),
			RTTMinUs: u32(40 + x%8), RTTP50Us: u32(56 + 8*(x%4)), RTTP99Us: u32(200 + 8*(x%10)), RTTMaxUs: u32(400),
			SrttUs: u32(60 + x%20), SndCwnd: u32(100 + x%40), MinRttUs: u32(40), MSS: u32(1448)}
	}
	iv.Traffic = iv.Traffic[:0]
	for s := range 16 {
		local, remote := fmt.Sprintf("%s:%d", src[s], 40000+s), fmt.Sprintf("%s:5001", dst[s])
		iv.Traffic = append(iv.Traffic,
			trace.TrafficRow{Time: end, IntervalNs: 1e9, Stream: int32(s), Role: trace.RoleSender, LocalAddr: local,
				RemoteAddr: remote, AppBytes: 600_000_000, TCPRetransmits: u64(i % 5)},
			trace.TrafficRow{Time: end, IntervalNs: 1e9, Stream: int32(s), Role: trace.RoleReceiver, LocalAddr: remote,
				RemoteAddr: local, AppBytes: 600_000_000})
	}
	iv.Ifaces = []trace.IfaceRow{
		{Time: end, IntervalNs: 1e9, Ifname: "eth0", RxBytes: 10_100_000_000, BpfRxBytes: u64(10_100_000_000),
			BpfRxPackets: u64(6_700_000), BpfRxWireBytes: u64(10_400_000_000)},
		{Time: end, IntervalNs: 1e9, Ifname: "eth1", TxBytes: 10_100_000_000, BpfTxBytes: u64(10_100_000_000),
			BpfTxPackets: u64(6_700_000), BpfTxWireBytes: u64(10_400_000_000)},
	}
	iv.CPUs = iv.CPUs[:0]
	for c := range 4 {
		iv.CPUs = append(iv.CPUs, trace.CPURow{Time: end, IntervalNs: 1e9, CPU: int32(c),
			NetRxSoftirqNs: u64(200_000_000 * (c + 1)), RxPackets: u64(1_000_000), NapiPolls: u64(20_000),
			NapiBudgetExhausted: u64(100)})
	}
}

var benchDir struct {
	once sync.Once
	dir  string
	err  error
}

// BenchmarkAnalyzeHour analyses a generated 1 h × 1 s × 10,000-flow trace
// (generated once, outside the timed part, into a temporary directory that
// is removed afterwards) and reports the CPU time per analysis, the peak
// heap in use and the process's max RSS; it logs the load average, since
// wall time depends on what else runs. With NETPROF_BENCH_DIR set, the
// trace is kept in that directory and reused by later runs (generated
// only when the directory holds no run); max RSS then excludes the
// generation.
func BenchmarkAnalyzeHour(b *testing.B) {
	intervals, flows := benchSize()
	dir := benchTrace(b, intervals, flows)
	run, err := trace.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	b.Logf("load average before: %s", loadAvg())
	stop, peak := heapWatch()
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for b.Loop() {
		r, err := Analyze(run, Options{})
		if err != nil || len(r.Flows) != flows {
			b.Fatalf("analyze: %v, %d flows", err, len(r.Flows))
		}
	}
	b.StopTimer()
	cpu := cpuSeconds() - cpu0
	stop()
	b.Logf("load average after: %s", loadAvg())
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck // best effort
	b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(*peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB")
	b.ReportMetric(float64(intervals*flows), "flow-rows")
}

// benchTrace returns the run directory of the benchmark trace, generating
// it once per process (or once per NETPROF_BENCH_DIR).
func benchTrace(b *testing.B, intervals, flows int) string {
	keep := os.Getenv("NETPROF_BENCH_DIR")
	benchDir.once.Do(func() {
		if benchDir.dir = keep; keep == "" {
			benchDir.dir, benchDir.err = os.MkdirTemp("", "netprof-bench-")
		}
		run := filepath.Join(benchDir.dir, "run")
		if _, err := os.Stat(filepath.Join(run, trace.ManifestFile)); benchDir.err != nil || err == nil {
			return
		}
		t := time.Now()
		benchDir.err = writeBenchTrace(run, intervals, flows)
		b.Logf("generated %d intervals x %d flows in %v", intervals, flows, time.Since(t).Round(time.Second))
	})
	if keep == "" {
		b.Cleanup(func() { os.RemoveAll(benchDir.dir) })
	}
	if benchDir.err != nil {
		b.Fatal(benchDir.err)
	}
	return filepath.Join(benchDir.dir, "run")
}

// loadAvg returns the 1, 5 and 15 minute load averages ("?" if unknown).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// heapWatch samples HeapInuse every 20 ms until stop is called; peak holds
// the high-water mark.
func heapWatch() (stop func(), peak *uint64) {
	peak = new(uint64)
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			*peak = max(*peak, ms.HeapInuse)
			select {
			case <-quit:
				return
			case <-time.After(heapWatchEvery):
			}
		}
	}()
	return func() { close(quit); <-done }, peak
}

// heapWatchEvery is how often heapWatch samples (ReadMemStats stops the
// world: not too often).
var heapWatchEvery = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("NETPROF_BENCH_HEAP_EVERY")); err == nil {
		return d
	}
	return 250 * time.Millisecond
}()

// cpuSeconds returns the process's user + system CPU time in seconds (a
// figure that, unlike wall time, does not grow when other work shares the
// machine).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck // best effort
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// BenchmarkFlowAggregate measures the flows aggregation alone (no
// decoding): CPU ns per flow row, over the bench rows of 20 intervals × 10,000
// flows held in memory as column batches of trace.ScanBatchRows rows.
func BenchmarkFlowAggregate(b *testing.B) {
	const intervals, flows = 20, 10_000
	src, dst := make([]string, flows), make([]string, 200)
	for f := range src {
		src[f] = fmt.Sprintf("198.18.%d.%d", f/250, f%250+1)
	}
	for p := range dst {
		dst[p] = fmt.Sprintf("198.19.0.%d", p+1)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var rows []trace.FlowRow
	iv := trace.Interval{Flows: make([]trace.FlowRow, flows)}
	for i := range intervals {
		fillBenchInterval(&iv, start.Add(time.Duration(i+1)*time.Second), i, src, dst)
		rows = append(rows, iv.Flows...)
	}
	chunks := source[trace.FlowRow](func(fn func([]trace.FlowRow) error) error {
		for len(rows) > 0 {
			n := min(len(rows), trace.ScanBatchRows)
			if err := fn(rows[:n]); err != nil {
				return err
			}
			rows = rows[n:]
		}
		return nil
	})
	var batches []*flowBatch
	err := rowFlows(chunks)(func(fbs []*flowBatch) error { batches = append(batches, fbs...); return nil })
	if err != nil {
		b.Fatal(err)
	}
	bld := newBuilder(trace.Manifest{}, Options{})
	bld.flows.init(bld) // once: the flows' first rows (allocation) are not what is measured
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for b.Loop() {
		for _, fb := range batches {
			bld.flows.batch(bld, fb)
		}
	}
	b.ReportMetric((cpuSeconds()-cpu0)*1e9/float64(b.N*intervals*flows), "cpu-ns/row")
}
