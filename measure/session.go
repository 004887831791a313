package measure

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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

// DefaultDir is the run directory a command writes when not given one:
// runs/<UTC time of now, to the second> under the working directory.
func DefaultDir(now time.Time) string {
	return filepath.Join("runs", now.UTC().Format("20060102T150405Z"))
}

// Trace writes one run directory the way every command does: it creates
// dir with manifest m, runs body with the trace's writer, then closes the
// trace whatever body returned (a failure, Ctrl-C) with the status Status
// gives for ctx and body's error, passed through redact when set (blob's
// URLs), so every completed interval stays readable. It returns that
// status and body's error joined with the close's. When the trace cannot
// be created body does not run and the status is "".
func Trace(ctx context.Context, dir string, m trace.Manifest, redact func(string) string, body func(*trace.Writer) error) (string, error) {
	w, err := trace.Create(dir, m)
	if err != nil {
		return "", fmt.Errorf("create trace: %w", err)
	}
	err = body(w)
	status := Status(ctx, err)
	if redact != nil {
		status = redact(status)
	}
	if cerr := w.Close(time.Now().UTC(), status); cerr != nil {
		err = errors.Join(err, fmt.Errorf("close trace: %w", cerr))
	}
	return status, err
}
