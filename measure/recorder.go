// Package measure runs a measurement's interval loop: samplers (netlink,
// /proc, BPF maps, the traffic generator) read in order once per interval
// into one trace.Interval, stamped with the interval's end and length and
// written to the trace. loader loads and attaches the probes; their
// samplers, the host's (ProcSampler, LinkSampler) and the commands' own
// run here. RecordWhile runs a command's workload under the recorder and
// Status names how a run ended; NewManifest and Interface describe the
// host for the trace.
package measure

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/netprof/netprof/trace"
)

// Sampler is one source of per-interval rows (a probe, netlink counters, the
// traffic generator). Samplers run in order on every tick and fill the same
// trace.Interval, so a later sampler can complete rows an earlier one made
// (e.g. BPF counts added to the netlink interface rows).
type Sampler interface {
	// Name identifies the sampler in logs and errors.
	Name() string
	// Baseline takes the starting totals; the first interval counts from it.
	Baseline() error
	// Sample adds this interval's rows (deltas since the previous call).
	Sample(iv *trace.Interval, intervalNs int64) error
}

// Recorder drives samplers on a fixed period and writes each interval.
type Recorder struct {
	Samplers []Sampler
	Period   time.Duration
	Writer   *trace.Writer
	// OnInterval, if set, is called after each interval is written (live
	// line, tests). It runs on the recorder's goroutine.
	OnInterval func(end time.Time, iv *trace.Interval)
	Log        *slog.Logger
	// MinFinal is the shortest final partial interval: when the run stops
	// sooner after the last tick, the recorder waits until it has passed
	// (default 10 ms; analysis counts a final interval in peak and the
	// active window from 1/10 of the usual length, in steady state from
	// 1/2, and always in the totals).
	MinFinal time.Duration

	started time.Time
}

// Start takes every sampler's baseline and returns the instant the first
// interval starts. Call it before starting what is measured, so nothing
// happens before the baseline; Run calls it if it was not called.
func (r *Recorder) Start() (time.Time, error) {
	for _, s := range r.Samplers {
		if err := s.Baseline(); err != nil {
			return time.Time{}, fmt.Errorf("baseline %s: %w", s.Name(), err)
		}
	}
	r.started = time.Now()
	return r.started, nil
}

// Run records until ctx is done, then records the final partial interval
// and returns nil. It returns an error if a
// baseline fails or the trace cannot be written; a sampler failing during
// the run is logged and the interval is written without its rows.
func (r *Recorder) Run(ctx context.Context) error {
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	if r.started.IsZero() {
		if _, err := r.Start(); err != nil {
			return err
		}
	}
	minFinal := r.MinFinal
	if minFinal == 0 {
		minFinal = 10 * time.Millisecond
	}
	last := r.started
	t := time.NewTicker(r.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The final partial interval is always recorded so no count is
			// lost; one shorter than MinFinal is first stretched to it.
			if d := minFinal - time.Since(last); d > 0 {
				time.Sleep(d)
			}
			_, err := r.tick(last, log)
			return err
		case <-t.C:
			end, err := r.tick(last, log)
			if err != nil {
				return err
			}
			last = end
		}
	}
}

// tick samples every sampler and writes the interval that started at
// start. The interval's end is taken AFTER the samplers ran, so every count
// they read (and every event a sampler collected up to its read) happened
// before the row's time; samplers get the length measured before sampling
// (a lower bound of the final interval_ns) for clamping.
func (r *Recorder) tick(start time.Time, log *slog.Logger) (time.Time, error) {
	iv := &trace.Interval{}
	for _, s := range r.Samplers {
		if err := s.Sample(iv, time.Since(start).Nanoseconds()); err != nil {
			log.Warn("sampler failed; interval written without its rows", "sampler", s.Name(), "err", err)
		}
	}
	end := time.Now()
	Stamp(iv, end.UTC(), end.Sub(start).Nanoseconds())
	if r.Writer != nil {
		if err := r.Writer.WriteInterval(*iv); err != nil {
			return end, fmt.Errorf("write interval: %w", err)
		}
	}
	if r.OnInterval != nil {
		r.OnInterval(end, iv)
	}
	return end, nil
}

// Stamp sets time (interval end) and interval_ns on every row of iv.
func Stamp(iv *trace.Interval, end time.Time, ns int64) {
	for i := range iv.Ifaces {
		iv.Ifaces[i].Time, iv.Ifaces[i].IntervalNs = end, ns
	}
	for i := range iv.CPUs {
		iv.CPUs[i].Time, iv.CPUs[i].IntervalNs = end, ns
	}
	for i := range iv.Flows {
		iv.Flows[i].Time, iv.Flows[i].IntervalNs = end, ns
	}
	for i := range iv.Traffic {
		iv.Traffic[i].Time, iv.Traffic[i].IntervalNs = end, ns
	}
	for i := range iv.Probes {
		iv.Probes[i].Time, iv.Probes[i].IntervalNs = end, ns
	}
	for i := range iv.Sockets {
		iv.Sockets[i].Time, iv.Sockets[i].IntervalNs = end, ns
	}
	for i := range iv.NICs {
		iv.NICs[i].Time, iv.NICs[i].IntervalNs = end, ns
	}
	for i := range iv.Drops {
		iv.Drops[i].Time, iv.Drops[i].IntervalNs = end, ns
	}
}

// CPURow returns the row of cpu in iv, adding it if absent.
func CPURow(iv *trace.Interval, cpu int) *trace.CPURow {
	for i := range iv.CPUs {
		if int(iv.CPUs[i].CPU) == cpu {
			return &iv.CPUs[i]
		}
	}
	iv.CPUs = append(iv.CPUs, trace.CPURow{CPU: int32(cpu)})
	return &iv.CPUs[len(iv.CPUs)-1]
}
