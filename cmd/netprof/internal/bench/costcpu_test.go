package bench

import (
	"sort"
	"sync"
	"time"

	"github.com/netprof/netprof/probes/cpustat"
	"github.com/netprof/netprof/trace"
)

// cpuWatch samples the host's busy CPU time (/proc/stat: user, nice,
// system, irq, softirq; not idle, iowait or steal) every 50 ms while a run
// goes on, so that the busy time of the run's steady intervals can be
// interpolated afterwards, without the test bed's set-up and the probes'
// loading (the verifier's CPU time) in it.
type cpuWatch struct {
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	samples []cpuPoint
}

type cpuPoint struct {
	t    time.Time
	busy time.Duration
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
	h := s.Host
	w.mu.Lock()
	w.samples = append(w.samples, cpuPoint{t: s.Time, busy: h.User + h.Nice + h.System + h.IRQ + h.SoftIRQ})
	w.mu.Unlock()
}

func (w *cpuWatch) Stop() {
	close(w.stop)
	<-w.done
}

// busyAt interpolates the cumulative busy time at t (false outside the
// sampled span).
func (w *cpuWatch) busyAt(t time.Time) (float64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.samples
	i := sort.Search(len(s), func(i int) bool { return !s[i].t.Before(t) })
	if i == 0 || i == len(s) {
		return 0, false
	}
	a, b := s[i-1], s[i]
	f := float64(t.Sub(a.t)) / float64(b.t.Sub(a.t))
	return float64(a.busy) + f*float64(b.busy-a.busy), true
}

// steadyCost returns the receiver's application bytes and the host's busy
// CPU ns over the run's full intervals except the first (connections
// ramping up) and a final partial one.
func steadyCost(w *cpuWatch, rows []trace.TrafficRow, interval time.Duration) (bytes uint64, busyNs float64, ok bool) {
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
		return 0, 0, false
	}
	ivs = ivs[1:]
	start := ivs[0].end.Add(-time.Duration(ivs[0].ns))
	end := ivs[len(ivs)-1].end
	b0, ok0 := w.busyAt(start)
	b1, ok1 := w.busyAt(end)
	if !ok0 || !ok1 {
		return 0, 0, false
	}
	for _, x := range ivs {
		bytes += x.bytes
	}
	return bytes, b1 - b0, true
}
