package softirq

import (
	"errors"
	"slices"
	"testing"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/internal/cpulist"
	"github.com/netprof/netprof/trace"
)

func TestDiff(t *testing.T) {
	const iv = 1000
	prev := []CPU{{NetRxNs: 100, NetRxCount: 5, NetTxNs: 10, NetTxCount: 1}, {NetRxNs: 50}}
	cur := []CPU{
		{NetRxNs: 400, NetRxCount: 9, NetTxNs: 10, NetTxCount: 1}, // ordinary delta
		{NetRxNs: 5000, NetRxCount: 1},                            // more than the interval: clamped
		{NetRxNs: 30, NetTxNs: 7},                                 // CPU absent from prev: counts from 0
	}
	got := Diff(prev, cur, iv)
	want := []CPU{
		{NetRxNs: 300, NetRxCount: 4},
		{NetRxNs: iv, NetRxCount: 1},
		{NetRxNs: 30, NetTxNs: 7},
	}
	if len(got) != len(want) {
		t.Fatalf("len %d, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cpu %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A total that went backwards (a read racing an exit, or a reloaded probe)
// yields 0, never a wrapped-around, uptime-sized uint64.
func TestDiffBackwardsIsZero(t *testing.T) {
	got := Diff([]CPU{{NetRxNs: 500, NetRxCount: 3, NetTxNs: 9, NetTxCount: 2}}, []CPU{{NetRxNs: 400, NetRxCount: 2}}, 1e9)
	if got[0] != (CPU{}) {
		t.Fatalf("backwards totals: %+v, want zero", got[0])
	}
}

func TestDiffNilPrevAndNoInterval(t *testing.T) {
	got := Diff(nil, []CPU{{NetRxNs: 5e9, NetRxCount: 1}}, 0)
	if got[0].NetRxNs != 5e9 || got[0].NetRxCount != 1 {
		t.Fatalf("%+v: with no interval length nothing is clamped", got[0])
	}
}

func TestClamp(t *testing.T) {
	for _, c := range []struct {
		c, p uint64
		max  int64
		want uint64
	}{
		{10, 4, 100, 6},
		{10, 4, 5, 5},
		{4, 10, 100, 0},
		{10, 4, 0, 6},
		{10, 4, -1, 6},
	} {
		if got := clamp(c.c, c.p, c.max); got != c.want {
			t.Errorf("clamp(%d, %d, %d) = %d, want %d", c.c, c.p, c.max, got, c.want)
		}
	}
}

func TestRunning(t *testing.T) {
	for _, c := range []struct{ start, now, want uint64 }{
		{0, 1000, 0}, // nothing running
		{400, 1000, 600},
		{1200, 1000, 0}, // started after the clock was read
	} {
		if got := running(c.start, c.now); got != c.want {
			t.Errorf("running(%d, %d) = %d, want %d", c.start, c.now, got, c.want)
		}
	}
}

// sim is a CPU timeline: every clock read or map lookup takes 100 ns, and
// a NET_RX softirq that started at 500 exits at exitAt.
type sim struct {
	now, exitAt uint64
}

func (s *sim) clock() (uint64, error) {
	s.now += 100
	return s.now, nil
}

func (s *sim) Lookup(_, value any) error {
	s.now += 100
	v := bpf.SoftirqNpSoftirqVal{NetRxNs: 1000, NetRxCount: 7, NetRxStart: 500}
	if s.now > s.exitAt {
		v.NetRxNs, v.NetRxCount, v.NetRxStart = 1000+s.exitAt-500, 8, 0
	}
	vals, ok := value.(*[]bpf.SoftirqNpSoftirqVal)
	if !ok {
		return errors.New("unexpected value type")
	}
	*vals = []bpf.SoftirqNpSoftirqVal{v}
	return nil
}

// Read adds the elapsed part of a running softirq, and successive reads
// never go backwards even when the softirq exits between the clock read
// and the map lookup (reading the clock after the map would count the
// read's own latency into a softirq already over).
func TestReadRunningNeverBackwards(t *testing.T) {
	for exitAt := uint64(600); exitAt <= 1500; exitAt += 50 {
		s := &sim{now: 500, exitAt: exitAt}
		r := &Reader{m: s, live: true, clock: s.clock}
		var last uint64
		for i := range 6 {
			got, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			ns := got[0].NetRxNs
			if ns < last {
				t.Fatalf("exit at %d, read %d: total went backwards %d -> %d", exitAt, i, last, ns)
			}
			if max := 1000 + min(s.now, exitAt) - 500; ns > max {
				t.Fatalf("exit at %d, read %d: total %d > true total %d", exitAt, i, ns, max)
			}
			last = ns
		}
		if want := 1000 + exitAt - 500; last != want {
			t.Errorf("exit at %d: final total %d, want %d", exitAt, last, want)
		}
	}
}

// Without softirq_exit attached nothing clears a start timestamp: Read
// must not turn it into ever-growing "running" time.
func TestReadNotLiveIgnoresStart(t *testing.T) {
	s := &sim{now: 500, exitAt: 1 << 62}
	r := &Reader{m: s, live: false, clock: s.clock}
	got, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].NetRxNs != 1000 {
		t.Fatalf("NetRxNs %d, want the completed 1000 only", got[0].NetRxNs)
	}
}

// The loader attaches in Spec order: softirq_exit must come first (see
// Spec).
func TestSpecAttachesExitFirst(t *testing.T) {
	s, err := Spec()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Programs) != 2 || s.Programs[0].Name != bpf.SoftirqProgNpSiExit || s.Programs[1].Name != bpf.SoftirqProgNpSiEntry {
		t.Fatalf("programs %+v: want exit, then entry", s.Programs)
	}
	for _, p := range s.Programs {
		if s.Collection.Programs[p.Name] == nil {
			t.Errorf("program %s not in the collection", p.Name)
		}
	}
}

// perCPU is a map of 240 possible CPUs whose values are set by the test.
type perCPU struct{ vals []bpf.SoftirqNpSoftirqVal }

func (p *perCPU) Lookup(_, value any) error {
	vals, ok := value.(*[]bpf.SoftirqNpSoftirqVal)
	if !ok {
		return errors.New("unexpected value type")
	}
	*vals = append([]bpf.SoftirqNpSoftirqVal(nil), p.vals...)
	return nil
}

// On a VM with 2 online of 240 possible CPUs the sampler makes 2 rows per
// interval, not 240; a CPU that goes offline keeps its rows, one that
// comes online gets them, and one whose counters moved between two reads
// of the online list is kept.
func TestSamplerOnlineCPUsOnly(t *testing.T) {
	m := &perCPU{vals: make([]bpf.SoftirqNpSoftirqVal, 240)}
	online := []cpulist.List{{0, 1}, {0, 1}, {0}, {0, 5}, {0, 5}}
	step := 0
	seen := cpulist.NewSeenFrom(func() (cpulist.List, error) { return online[min(step, len(online)-1)], nil })
	s := newSampler(&Reader{m: m, live: true, clock: func() (uint64, error) { return 1, nil }}, seen)
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]int32{{0, 1}, {0, 1}, {0, 1, 5}, {0, 1, 5, 9}} {
		step++
		m.vals[0].NetRxNs += 1000 // CPU 0 busy; the others idle
		m.vals[0].NetRxCount++
		if i == 3 {
			m.vals[9].NetTxCount++ // online and offline again between two reads
		}
		var iv trace.Interval
		if err := s.Sample(&iv, 1e9); err != nil {
			t.Fatal(err)
		}
		var got []int32
		for _, r := range iv.CPUs {
			got = append(got, r.CPU)
		}
		if !slices.Equal(got, want) {
			t.Errorf("interval %d: rows for CPUs %v, want %v", i, got, want)
		}
		if r0, r1 := iv.CPUs[0], iv.CPUs[1]; r0.NetRxSoftirqNs == nil || *r0.NetRxSoftirqNs != 1000 || r0.NetRxSoftirqCount == nil ||
			*r0.NetRxSoftirqCount != 1 || r1.NetRxSoftirqNs == nil || *r1.NetRxSoftirqNs != 0 {
			t.Errorf("interval %d: rows %+v", i, iv.CPUs)
		}
	}
}
