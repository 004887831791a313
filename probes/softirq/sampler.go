package softirq

import (
	"github.com/netprof/netprof/internal/cpulist"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/trace"
)

// Sampler fills the net_rx/net_tx softirq columns of the cpus rows. The
// map holds a value for every possible CPU; only CPUs online at some point
// of the run get rows (the machine's online list, read every interval,
// or a CPU whose counters moved), so a VM with 2 online of 240 possible
// CPUs records 2 rows per interval, and a CPU that goes offline keeps its
// rows.
type Sampler struct {
	r      *Reader
	prev   []CPU
	online *cpulist.Seen
}

// NewSampler returns a sampler reading r, following the machine's online
// CPUs (cpulist.OnlinePath).
func NewSampler(r *Reader) *Sampler { return newSampler(r, cpulist.NewSeen()) }

func newSampler(r *Reader, online *cpulist.Seen) *Sampler {
	return &Sampler{r: r, online: online}
}

// Name implements measure.Sampler.
func (s *Sampler) Name() string { return "softirq" }

// Baseline implements measure.Sampler. An unreadable online list is not an
// error: every CPU then gets rows (see cpulist.Seen.Update).
func (s *Sampler) Baseline() error {
	_ = s.online.Update()
	cur, err := s.r.Read()
	s.prev = cur
	return err
}

// Sample implements measure.Sampler.
func (s *Sampler) Sample(iv *trace.Interval, intervalNs int64) error {
	_ = s.online.Update() // before the read: a CPU that just came online counts
	cur, err := s.r.Read()
	if err != nil {
		return err
	}
	for cpu, d := range Diff(s.prev, cur, intervalNs) {
		if !s.online.Keep(cpu, d != (CPU{})) {
			continue
		}
		row := measure.CPURow(iv, cpu)
		row.NetRxSoftirqNs, row.NetRxSoftirqCount = &d.NetRxNs, &d.NetRxCount
		row.NetTxSoftirqNs, row.NetTxSoftirqCount = &d.NetTxNs, &d.NetTxCount
	}
	s.prev = cur
	return nil
}
