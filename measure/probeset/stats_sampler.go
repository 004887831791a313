package probeset

import (
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/trace"
)

// statsSampler writes one probes row per attached program per interval:
// run count, run time and recursion misses since the previous interval.
// The kernel counts runs and run time only while BPF run-time statistics
// are on (loader.EnableStats; `netprof bench --bpf-stats`): otherwise both are 0.
// Recursion misses are always counted.
type statsSampler struct {
	probes []*loader.Loaded
	prev   map[string]loader.ProgramStats
}

// Name implements measure.Sampler.
func (s *statsSampler) Name() string { return "bpf-stats" }

// Baseline implements measure.Sampler.
func (s *statsSampler) Baseline() error {
	s.prev = map[string]loader.ProgramStats{}
	return s.each(func(st loader.ProgramStats) { s.prev[st.Name] = st })
}

// Sample implements measure.Sampler.
func (s *statsSampler) Sample(iv *trace.Interval, _ int64) error {
	return s.each(func(st loader.ProgramStats) {
		p := s.prev[st.Name]
		iv.Probes = append(iv.Probes, trace.ProbeRow{
			Program: st.Name, Hook: st.Hook,
			RunCount:        st.RunCount - min(p.RunCount, st.RunCount),
			RunTimeNs:       st.RunTimeNs - min(p.RunTimeNs, st.RunTimeNs),
			RecursionMisses: st.RecursionMisses - min(p.RecursionMisses, st.RecursionMisses),
		})
		s.prev[st.Name] = st
	})
}

func (s *statsSampler) each(fn func(loader.ProgramStats)) error {
	for _, l := range s.probes {
		stats, err := l.Stats()
		if err != nil {
			return err
		}
		for _, st := range stats {
			fn(st)
		}
	}
	return nil
}
