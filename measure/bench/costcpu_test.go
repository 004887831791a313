package bench

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/trace"
)

// cpuWatch samples the CPU time the transfer costs every 50 ms while a run
// goes on: this process's (getrusage: the generator's threads and the
// softirq work done in their context, as on veth most of it is) plus the
// ksoftirqd threads' (/proc/<pid>/stat), not the rest of the host's, so
// that other work on the machine does not count. The busy time of the
// run's steady intervals is interpolated afterwards, without the test
// bed's set-up and the probes' loading (the verifier's CPU time) in it.
type cpuWatch struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	samples []cpuPoint
}

type cpuPoint struct {
	t    time.Time
	busy time.Duration // this process + ksoftirqd
	host time.Duration // every CPU's busy time (/proc/stat)
	cpus int
}

func watchCPU() *cpuWatch {
	w := &cpuWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			w.take()
			select {
			case <-w.stop:
				w.take()
				return
			case <-tk.C:
			}
		}
	}()
	return w
}

func (w *cpuWatch) take() {
	s, err := cpustat.Read()
	if err != nil {
		return
	}
	busy := s.ProcessUser + s.ProcessSystem + ksoftirqdTime()
	h := s.Host
	w.mu.Lock()
	w.samples = append(w.samples, cpuPoint{t: s.Time, busy: busy,
		host: h.User + h.Nice + h.System + h.IRQ + h.SoftIRQ, cpus: len(s.CPUs)})
	w.mu.Unlock()
}

// ksoftirqdTime returns the CPU time (user + system) of every ksoftirqd
// thread, from /proc/<pid>/stat (clock ticks of 10 ms).
func ksoftirqdTime() time.Duration {
	ksoftirqdOnce.Do(func() {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			if err == nil && strings.HasPrefix(string(comm), "ksoftirqd/") {
				ksoftirqdPids = append(ksoftirqdPids, e.Name())
			}
		}
	})
	var ticks uint64
	for _, pid := range ksoftirqdPids {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		if err != nil {
			continue
		}
		// Fields after the ")" closing comm: state is field 3, utime 14, stime 15.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

var (
	ksoftirqdOnce sync.Once
	ksoftirqdPids []string
)

func (w *cpuWatch) Stop() {
	close(w.stop)
	<-w.done
}

// at interpolates the cumulative busy times at t (false outside the
// sampled span).
func (w *cpuWatch) at(t time.Time) (busy, host float64, cpus int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.samples
	i := sort.Search(len(s), func(i int) bool { return !s[i].t.Before(t) })
	if i == 0 || i == len(s) {
		return 0, 0, 0, false
	}
	a, b := s[i-1], s[i]
	f := float64(t.Sub(a.t)) / float64(b.t.Sub(a.t))
	return float64(a.busy) + f*float64(b.busy-a.busy), float64(a.host) + f*float64(b.host-a.host), b.cpus, true
}

// steadyCPU is what steadyCost measured.
type steadyCPU struct {
	bytes  uint64  // receiver's application bytes
	busyNs float64 // this process + ksoftirqd
	// others is the share of every CPU's time that the rest of the host
	// used (from /proc/stat, 10 ms ticks): work that disturbs the figures.
	others float64
	ok     bool
}

// steadyCost measures the run's full intervals except the first
// (connections ramping up) and a final partial one.
func steadyCost(w *cpuWatch, rows []trace.TrafficRow, interval time.Duration) steadyCPU {
	type iv struct {
		end   time.Time
		ns    int64
		bytes uint64
	}
	byEnd := map[time.Time]*iv{}
	for _, r := range rows {
		if r.Role != trace.RoleReceiver {
			continue
		}
		x := byEnd[r.Time]
		if x == nil {
			x = &iv{end: r.Time, ns: r.IntervalNs}
			byEnd[r.Time] = x
		}
		x.bytes += r.AppBytes
	}
	var ivs []*iv
	for _, x := range byEnd {
		ivs = append(ivs, x)
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].end.Before(ivs[j].end) })
	if n := len(ivs); n > 0 && float64(ivs[n-1].ns) < 0.9*float64(interval) {
		ivs = ivs[:n-1]
	}
	if len(ivs) < 2 {
		return steadyCPU{}
	}
	ivs = ivs[1:]
	start := ivs[0].end.Add(-time.Duration(ivs[0].ns))
	end := ivs[len(ivs)-1].end
	b0, h0, _, ok0 := w.at(start)
	b1, h1, cpus, ok1 := w.at(end)
	if !ok0 || !ok1 || cpus == 0 {
		return steadyCPU{}
	}
	out := steadyCPU{busyNs: b1 - b0, ok: true}
	for _, x := range ivs {
		out.bytes += x.bytes
	}
	out.others = max(0, (h1-h0)-(b1-b0)) / (float64(end.Sub(start)) * float64(cpus))
	return out
}
