package measure

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

// countSampler counts baselines and samples.
type countSampler struct{ baselines, samples atomic.Int32 }

func (c *countSampler) Name() string                        { return "count" }
func (c *countSampler) Baseline() error                     { c.baselines.Add(1); return nil }
func (c *countSampler) Sample(*trace.Interval, int64) error { c.samples.Add(1); return nil }

// RecordWhile: baseline before the work, started with that instant, the
// recorder ticking beside the work and recording the final partial
// interval after it, the work's error returned.
func TestRecordWhileRunsTheWork(t *testing.T) {
	c := &countSampler{}
	var ends []time.Time
	rec := &Recorder{Samplers: []Sampler{c}, Period: 20 * time.Millisecond,
		OnInterval: func(end time.Time, _ *trace.Interval) { ends = append(ends, end) }}
	var start time.Time
	var baselineAtWork int32
	workErr := errors.New("work failed")
	err := RecordWhile(context.Background(), rec, nil, func(s time.Time) { start = s }, func(context.Context) error {
		baselineAtWork = c.baselines.Load()
		time.Sleep(110 * time.Millisecond)
		return workErr
	})
	if !errors.Is(err, workErr) {
		t.Errorf("err %v, want the work's", err)
	}
	if baselineAtWork != 1 || start.IsZero() {
		t.Errorf("baselines before the work %d, start %v", baselineAtWork, start)
	}
	if n := c.samples.Load(); n < 4 || int(n) != len(ends) {
		t.Errorf("%d samples, %d intervals over 110 ms of 20 ms ticks", n, len(ends))
	}
	if len(ends) > 0 && ends[len(ends)-1].Sub(start) < 110*time.Millisecond {
		t.Errorf("last interval ended %v after the start: before the work ended", ends[len(ends)-1].Sub(start))
	}
}

// A cancelled run returns ctx's error, and its final interval is still
// recorded.
func TestRecordWhileCancelled(t *testing.T) {
	c := &countSampler{}
	rec := &Recorder{Samplers: []Sampler{c}, Period: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	err := RecordWhile(ctx, rec, nil, nil, func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || c.samples.Load() != 1 {
		t.Errorf("err %v, %d samples: want context.Canceled and the final interval", err, c.samples.Load())
	}
	if s := Status(ctx, err); s != trace.StatusInterrupted {
		t.Errorf("status %q", s)
	}
	if s := Status(context.Background(), errors.New("x")); s != "failed: x" {
		t.Errorf("status %q", s)
	}
	if s := Status(context.Background(), nil); s != trace.StatusOK {
		t.Errorf("status %q", s)
	}
}
