package measure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// Trace closes the run whatever the body did: a failing body's rows are
// readable and the manifest says "failed: …" (redacted as asked); a
// cancelled one says interrupted; a directory that cannot be created runs
// no body and gives no status.
func TestTraceClosesWhateverHappened(t *testing.T) {
	m := NewManifest("test", []string{"netprof", "x"}, time.Second, map[string]any{"command": "test"})
	dir := filepath.Join(t.TempDir(), "run")
	bodyErr := errors.New("lost peer secret-token")
	status, err := Trace(context.Background(), dir, m, func(s string) string { return strings.ReplaceAll(s, "secret-token", "REDACTED") },
		func(w *trace.Writer) error {
			for i := range 3 {
				if err := w.WriteInterval(trace.Interval{Traffic: []trace.TrafficRow{{Stream: int32(i), Role: trace.RoleSender, AppBytes: 1000}}}); err != nil {
					return err
				}
			}
			return bodyErr
		})
	if !errors.Is(err, bodyErr) || status != "failed: lost peer REDACTED" {
		t.Fatalf("status %q err %v: want the body's error, redacted status", status, err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Traffic()
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d traffic rows (%v), want the 3 written", len(rows), err)
	}
	if run.Manifest.Status != status || run.Manifest.End.IsZero() {
		t.Errorf("manifest status %q end %v: want %q and an end", run.Manifest.Status, run.Manifest.End, status)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir2 := filepath.Join(t.TempDir(), "run")
	if status, err := Trace(ctx, dir2, m, nil, func(*trace.Writer) error { return ctx.Err() }); status != trace.StatusInterrupted || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: status %q err %v", status, err)
	}

	ran := false
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	status, err = Trace(context.Background(), filepath.Join(notDir, "run"), m, nil, func(*trace.Writer) error { ran = true; return nil })
	if status != "" || err == nil || ran {
		t.Errorf("uncreatable dir: status %q err %v body ran %v", status, err, ran)
	}
}

func TestDefaultDir(t *testing.T) {
	at := time.Date(2026, 12, 2, 14, 5, 9, 0, time.FixedZone("x", 3600))
	if got := DefaultDir(at); got != filepath.Join("runs", "20261202T130509Z") {
		t.Errorf("DefaultDir = %q", got)
	}
}
