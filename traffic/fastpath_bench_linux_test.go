package traffic

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// fastPathVariants are the receive-loop configurations BenchmarkFastPaths
// compares, from the plain loops (as before the fast path) to the default.
var fastPathVariants = []struct {
	name  string
	block int
	fp    fastPathConfig
}{
	{"plain-128KiB", 128 << 10, fastPathConfig{}},
	{"plain-1MiB", 1 << 20, fastPathConfig{}},
	{"rawread-128KiB", 128 << 10, fastPathConfig{rawRead: true}},
	{"rawread-lowat-128KiB", 128 << 10, fastPathConfig{rawRead: true, rcvLowat: defaultRcvLowat}},
	{"trunc-128KiB", 128 << 10, fastPathConfig{trunc: true}},
	{"trunc-lowat-always-128KiB", 128 << 10, fastPathConfig{trunc: true, rcvLowat: defaultRcvLowat, lowatSingle: true}},
	{"default-128KiB", 128 << 10, fastPathConfig{trunc: true, rcvLowat: defaultRcvLowat}},
	{"default-1MiB", 1 << 20, fastPathConfig{trunc: true, rcvLowat: defaultRcvLowat}},
}

// BenchmarkFastPaths measures what each fast path buys: every variant sends
// for NETPROF_BENCH_DURATION (default 3s) over one veth pair (root), with
// 1, 4 and 16 streams, and reports receiver goodput (decimal Gbit/s) and
// this process's CPU seconds (getrusage, both ends) per decimal GB.
// NETPROF_BENCH_REPS repeats the whole set (variants interleaved, so drift
// in the machine's load hits them alike). Run with -benchtime 1x:
//
//	NETPROF_BENCH_REPS=5 go test -run '^$' -bench FastPaths -benchtime 1x ./traffic/
func BenchmarkFastPaths(b *testing.B) {
	testbedtest.Require(b)
	dur := 3 * time.Second
	if v := os.Getenv("NETPROF_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("NETPROF_BENCH_DURATION: %v", err)
		}
		dur = d
	}
	bed := testbedtest.New(b, testbed.Options{})
	saved := fastPaths
	b.Cleanup(func() { fastPaths = saved })
	reps := 1
	if v := os.Getenv("NETPROF_BENCH_REPS"); v != "" {
		if _, err := fmt.Sscan(v, &reps); err != nil {
			b.Fatalf("NETPROF_BENCH_REPS: %v", err)
		}
	}
	for range reps {
		for _, streams := range []int{1, 4, 16} {
			b.Run(fmt.Sprint("streams=", streams), func(b *testing.B) { benchVariants(b, bed, streams, dur) })
		}
	}
}

// benchVariants runs every variant once with the given stream count.
func benchVariants(b *testing.B, bed *testbed.Bed, streams int, dur time.Duration) {
	for _, v := range fastPathVariants {
		b.Run(v.name, func(b *testing.B) {
			fastPaths = v.fp
			cfg := Config{Streams: streams, Duration: dur, BlockSize: v.block}
			var gbit, cpuPerGB float64
			for b.Loop() {
				bytes, elapsed, cpu := transferOnBed(b, bed, cfg)
				gbit = float64(bytes) * 8 / elapsed.Seconds() / 1e9
				cpuPerGB = cpu.Seconds() / (float64(bytes) / 1e9)
			}
			b.ReportMetric(gbit, "Gbit/s")
			b.ReportMetric(cpuPerGB, "cpu-s/GB")
		})
	}
}

// transferOnBed runs one transfer from A to B and returns the bytes the
// receiver counted, the time from the start of Run to the end of Serve,
// and the CPU time (user + system) this process used in between.
func transferOnBed(tb testing.TB, bed *testbed.Bed, cfg Config) (uint64, time.Duration, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	defer cancel()
	ln, err := bed.B().Listen("tcp", bed.B().Addr.String()+":5201")
	if err != nil {
		tb.Fatal(err)
	}
	r := NewReceiver(ln, cfg)
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx) }()
	s := NewSender(bed.A().Dial, ln.Addr().String(), cfg)
	if err := s.Connect(ctx); err != nil {
		cancel()
		<-served
		tb.Fatalf("connect: %v", err)
	}
	cpu0 := processCPU(tb)
	start := time.Now()
	sendErr := s.Run(ctx)
	recvErr := <-served
	elapsed := time.Since(start)
	cpu := processCPU(tb) - cpu0
	if sendErr != nil || recvErr != nil {
		tb.Fatalf("send: %v; receive: %v", sendErr, recvErr)
	}
	var total uint64
	snd := s.Sample()
	for i, smp := range r.Sample() {
		if smp.AppBytes != snd[i].AppBytes {
			tb.Fatalf("stream %d: sent %d, received %d", i, snd[i].AppBytes, smp.AppBytes)
		}
		total += smp.AppBytes
	}
	return total, elapsed, cpu
}

// processCPU returns this process's user + system time (getrusage).
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
