package measure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/netprof/netprof/trace"
)

// RecordWhile records with rec while work runs, the way every command
// records a workload (a transfer, a blob copy): the samplers' baselines
// first (Recorder.Start), then the trace's manifest start set to that
// instant (w nil: no trace), started called with it, then work, with the
// recorder running beside it until work returns. The recorder is not
// stopped by ctx itself, so the final partial interval is recorded after
// work ends whatever ended it. It returns ctx's error when ctx ended,
// else work's joined with the recorder's.
func RecordWhile(ctx context.Context, rec *Recorder, w *trace.Writer, started func(time.Time), work func(context.Context) error) error {
	start, err := rec.Start()
	if err == nil && w != nil {
		err = w.UpdateManifest(func(m *trace.Manifest) { m.Start = start.UTC() })
	}
	if err != nil {
		return err
	}
	if started != nil {
		started(start)
	}
	recCtx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRec()
	recDone := make(chan error, 1)
	go func() { recDone <- rec.Run(recCtx) }()
	workErr := work(ctx)
	stopRec()
	recErr := <-recDone
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if recErr != nil {
		recErr = fmt.Errorf("recorder: %w", recErr)
	}
	return errors.Join(workErr, recErr)
}

// Status is a run's manifest status from how it ended: interrupted when
// ctx ended (Ctrl-C, --duration of watch), "failed: …" with err, else ok.
func Status(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil:
		return trace.StatusInterrupted
	case err != nil:
		return "failed: " + err.Error()
	}
	return trace.StatusOK
}
