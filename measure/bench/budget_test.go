package bench

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

// mapBudget is what the default probe set's BPF maps may take in all, at
// any possible-CPU count (issue 11: hosts with 80-288 CPUs).
const mapBudget = 64 << 20

// A deep bench (every probe: the most maps) keeps its BPF maps within mapBudget by the
// kernel's own figure (fdinfo memlock) and by capacity (value_bytes), on
// whatever possible-CPU count the machine has: make test-kernels runs this
// on Debian's 6.1 with 240 possible CPUs. It logs what the kernel's per-CPU
// allocator grew by during the run (/proc/meminfo Percpu: maps, but also
// the test bed's namespaces and devices) and each program's ns/event.
func TestBenchMapMemoryBudget(t *testing.T) {
	requireBench(t, true)
	cfg := DefaultConfig()
	cfg.Duration, cfg.Streams = 2*time.Second, 2
	cfg.Out = filepath.Join(t.TempDir(), "run")
	base := percpuKB(t)
	peak, stop := watchPercpu(t)
	if _, err := Run(context.Background(), cfg, "test", nil); err != nil {
		t.Fatal(err)
	}
	grown := stop() - base
	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	var memlock, capacity uint64
	for _, m := range run.Manifest.Maps {
		capacity += m.ValueBytes
		switch {
		case m.MemlockBytes != nil:
			memlock += *m.MemlockBytes
		case m.Type == "RingBuf": // 6.1 reports no memlock for ring buffers
			memlock += m.ValueBytes
		default:
			t.Errorf("map %s: the kernel gave no memlock figure", m.Name)
		}
	}
	possible := 0
	if len(run.Manifest.Maps) > 0 {
		possible = run.Manifest.Maps[0].PossibleCPUs
	}
	t.Logf("%d possible CPUs: maps memlock %.1f MiB, values at capacity %.1f MiB (budget %d MiB); /proc/meminfo Percpu +%d kB during the run (peak %d kB)",
		possible, mib(memlock), mib(capacity), mapBudget>>20, grown, *peak)
	if memlock > mapBudget || capacity > mapBudget {
		t.Errorf("maps take %.1f MiB (memlock), %.1f MiB (capacity): over the %d MiB budget", mib(memlock), mib(capacity), mapBudget>>20)
	}
	for _, p := range run.Manifest.Probes {
		if !p.Attached {
			t.Errorf("probe %s (%s) not attached: %s", p.Name, p.Hook, p.Reason)
		}
	}
	logNsPerEvent(t, run)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// watchPercpu samples /proc/meminfo Percpu every 50 ms until stop, which
// returns the largest value seen (kB); *peak holds it too.
func watchPercpu(t *testing.T) (peak *int64, stop func() int64) {
	var mu sync.Mutex
	var top int64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := percpuKB(t); v > 0 {
				mu.Lock()
				top = max(top, v)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return &top, func() int64 {
		close(done)
		<-finished
		return top
	}
}

// percpuKB returns /proc/meminfo's Percpu (kB), 0 if absent.
func percpuKB(t *testing.T) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Error(err)
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Percpu:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// logNsPerEvent logs each program's run time per event over the run
// (probes.parquet; needs BPF stats, which bench turns on by default).
func logNsPerEvent(t *testing.T, run *trace.Run) {
	rows, err := run.Probes()
	if err != nil {
		t.Fatal(err)
	}
	type sum struct{ n, ns uint64 }
	by := map[string]*sum{}
	var order []string
	for _, r := range rows {
		if strings.HasPrefix(r.Hook, "map:") {
			continue
		}
		s := by[r.Program]
		if s == nil {
			s = &sum{}
			by[r.Program] = s
			order = append(order, r.Program)
		}
		s.n += r.RunCount
		s.ns += r.RunTimeNs
	}
	for _, p := range order {
		if s := by[p]; s.n > 0 {
			t.Logf("%-15s %10d events %8.1f ns/event", p, s.n, float64(s.ns)/float64(s.n))
		}
	}
}
