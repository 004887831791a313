package bench

import (
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/trace"
)

// timeline is the run's local intervals as the recorder wrote them, with
// their phase and this host's CPU use. It is also the last sampler of each
// interval: it marks the interval's traffic rows with their phase and
// takes the interval's /proc/stat and getrusage figures from cpu (which
// read them earlier in the same tick). Only the recorder's goroutine uses
// it while the recorder runs.
type timeline struct {
	warmup, measured, cooldown time.Duration
	t0                         time.Time // traffic start (the recorder's start)

	cpu *measure.ProcSampler
	ivs []localInterval
}

// localInterval is one recorded interval.
type localInterval struct {
	end   time.Time
	ns    int64
	phase string
	// cpu is this host's CPU use over the interval (zero when /proc/stat
	// could not be read).
	cpu   cpustat.Usage
	cpuOK bool
	// sent and received are the local generator's payload bytes.
	sent, received uint64
}

func newTimeline(cfg Config, cpu *measure.ProcSampler) *timeline {
	return &timeline{warmup: cfg.Warmup, measured: cfg.Duration, cooldown: cfg.Cooldown, cpu: cpu}
}

// Name implements measure.Sampler.
func (tl *timeline) Name() string { return "phases and /proc/stat" }

// Baseline implements measure.Sampler (the CPU baseline is cpu's).
func (tl *timeline) Baseline() error { return nil }

// start sets the instant the traffic started.
func (tl *timeline) start(t0 time.Time) { tl.t0 = t0 }

// phaseAt returns the phase of an interval whose midpoint is mid.
func (tl *timeline) phaseAt(mid time.Time) string {
	since := mid.Sub(tl.t0)
	switch {
	case tl.warmup > 0 && since < tl.warmup:
		return trace.PhaseWarmup
	case tl.cooldown > 0 && since > tl.warmup+tl.measured:
		return trace.PhaseCooldown
	}
	return trace.PhaseMeasure
}

// Sample marks iv's traffic rows with the interval's phase and records the
// interval. It runs after the traffic and /proc/stat samplers.
func (tl *timeline) Sample(iv *trace.Interval, ns int64) error {
	now := time.Now()
	li := localInterval{end: now, ns: ns, phase: tl.phaseAt(now.Add(-time.Duration(ns) / 2))}
	phase := li.phase
	for i := range iv.Traffic {
		r := &iv.Traffic[i]
		r.Phase = &phase
		if r.Role == trace.RoleSender {
			li.sent += r.AppBytes
		} else {
			li.received += r.AppBytes
		}
	}
	li.cpu, li.cpuOK = tl.cpu.Usage()
	tl.ivs = append(tl.ivs, li)
	return nil
}

// ended sets the last interval's end to the recorder's own end time.
func (tl *timeline) ended(end time.Time) {
	if n := len(tl.ivs); n > 0 {
		tl.ivs[n-1].end = end
	}
}

// last returns the latest interval, or nil.
func (tl *timeline) last() *localInterval {
	if len(tl.ivs) == 0 {
		return nil
	}
	return &tl.ivs[len(tl.ivs)-1]
}

// match returns the index of the first local interval at or after *next
// whose end is at least end - period/2 (the one a peer's interval ending
// at end belongs to), and advances *next past it; false when that
// interval has not been recorded yet.
func (tl *timeline) match(next *int, end time.Time, period time.Duration) (int, bool) {
	for *next < len(tl.ivs) && tl.ivs[*next].end.Before(end.Add(-period/2)) {
		*next++
	}
	if *next >= len(tl.ivs) {
		return 0, false
	}
	i := *next
	*next++
	return i, true
}

// phaseCounts returns how many intervals each phase has.
func (tl *timeline) phaseCounts() map[string]int {
	out := map[string]int{}
	for _, li := range tl.ivs {
		out[li.phase]++
	}
	return out
}
