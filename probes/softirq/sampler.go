package softirq

import (
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/trace"
)

// Sampler fills the net_rx/net_tx softirq columns of the cpus rows.
type Sampler struct {
	r    *Reader
	prev []CPU
}

// NewSampler returns a sampler reading r.
func NewSampler(r *Reader) *Sampler { return &Sampler{r: r} }

// Name implements loader.Sampler.
func (s *Sampler) Name() string { return "softirq" }

// Baseline implements loader.Sampler.
func (s *Sampler) Baseline() error {
	cur, err := s.r.Read()
	s.prev = cur
	return err
}

// Sample implements loader.Sampler.
func (s *Sampler) Sample(iv *trace.Interval, intervalNs int64) error {
	cur, err := s.r.Read()
	if err != nil {
		return err
	}
	for cpu, d := range Diff(s.prev, cur, intervalNs) {
		row := loader.CPURow(iv, cpu)
		row.NetRxSoftirqNs, row.NetRxSoftirqCount = d.NetRxNs, d.NetRxCount
		row.NetTxSoftirqNs, row.NetTxSoftirqCount = d.NetTxNs, d.NetTxCount
	}
	s.prev = cur
	return nil
}
