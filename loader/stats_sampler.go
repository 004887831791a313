package loader

import (
	"github.com/netprof/netprof/trace"
)

// StatsSampler writes one probes row per attached program per interval:
// run count, run time and recursion misses since the previous interval.
// The kernel counts runs and run time only while BPF run-time statistics
// are on (EnableStats; `netprof bench --bpf-stats`): otherwise both are 0.
// Recursion misses are always counted.
type StatsSampler struct {
	Probes []*Loaded
	prev   map[string]ProgramStats
}

// Name implements Sampler.
func (s *StatsSampler) Name() string { return "bpf-stats" }

// Baseline implements Sampler.
func (s *StatsSampler) Baseline() error {
	s.prev = map[string]ProgramStats{}
	return s.each(func(st ProgramStats) { s.prev[st.Name] = st })
}

// Sample implements Sampler.
func (s *StatsSampler) Sample(iv *trace.Interval, _ int64) error {
	return s.each(func(st ProgramStats) {
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

func (s *StatsSampler) each(fn func(ProgramStats)) error {
	for _, l := range s.Probes {
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
