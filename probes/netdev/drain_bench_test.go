package netdev

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/trace"
)

// BenchmarkDrain prices one interval's drain of the netdev probe with a
// flow table holding many flows (NETPROF_DRAIN_FLOWS, default 10,000):
// flush every CPU's cache, read the interface, flow and per-CPU maps, take
// the differences and build the trace rows, as the sampler does each
// interval. Every flow moves between two drains (the worst case: none is
// idle, every one becomes a row). It reports wall time and the process's
// CPU time (user + system, getrusage) per drain, and the possible-CPU count
// the per-CPU maps were sized for. Run it on a host or VM with many
// possible CPUs (tools/vmtest -possible 240) to see their cost:
//
//	go test -run '^$' -bench Drain -benchtime 20x ./probes/netdev/
func BenchmarkDrain(b *testing.B) {
	flows := 10000
	if v, err := strconv.Atoi(os.Getenv("NETPROF_DRAIN_FLOWS")); err == nil && v > 0 {
		flows = v
	}
	r := loadSized(b, true, uint32(2*flows))
	keys, vals := syntheticFlows(flows)
	s := NewSampler(r, nil)
	if err := s.Baseline(); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range vals {
			vals[j].Rx.Bytes += 1500
			vals[j].Rx.Skbs++
		}
		if _, err := r.flows.BatchUpdate(keys, vals, nil); err != nil {
			b.Fatal(err)
		}
		before := cpuTime(b)
		b.StartTimer()
		var iv trace.Interval
		if err := s.Sample(&iv, 1e9); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime(b) - before
		if len(iv.Flows) != flows {
			b.Fatalf("drain %d: %d flow rows, want %d", i, len(iv.Flows), flows)
		}
		b.StartTimer()
	}
	possible, _ := ebpf.PossibleCPU()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/drain")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/drain")
	b.ReportMetric(float64(possible), "possible-cpus")
	b.ReportMetric(float64(flows), "flows")
}

// syntheticFlows returns n flow keys on a namespace no real interface has
// (so no packet ever adds to them) with zero values.
func syntheticFlows(n int) ([]bpf.NetdevNpFlowKey, []bpf.NetdevNpFlowVal) {
	keys := make([]bpf.NetdevNpFlowKey, n)
	for i := range keys {
		k := &keys[i]
		k.Netns, k.Ifindex, k.Family, k.Proto = 1<<40, 1, 4, 6
		k.Laddr = [16]uint8{198, 18, byte(i >> 8), byte(i)}
		k.Raddr = [16]uint8{198, 19, 0, 1}
		k.Lport, k.Rport = uint16(1024+i%60000), 5001
	}
	return keys, make([]bpf.NetdevNpFlowVal, n)
}

func cpuTime(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(fmt.Errorf("getrusage: %w", err))
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
