package analysis

import (
	"sync/atomic"

	"github.com/netprof/netprof/trace"
)

// FromRun analyses run with default Options; see Analyze.
func FromRun(run *trace.Run) (*Report, error) { return Analyze(run, Options{}) }

// Analyze streams the tables of run (trace.Scan, row group by row group)
// into a Report; memory grows with flows, CPUs and intervals, not rows.
// The flows table is decoded and aggregated concurrently. The report's Dir
// is run.Dir. A missing table file reads as an empty table and adds a note
// (its figures print "n/a"); any other read error is returned, wrapped
// with the table's name.
func Analyze(run *trace.Run, opts Options) (*Report, error) {
	src := sources{
		ifaces:  runSource[trace.IfaceRow](run, trace.IfacesFile),
		cpus:    runSource[trace.CPURow](run, trace.CPUsFile),
		flows:   pipelined(runSource[trace.FlowRow](run, trace.FlowsFile)),
		traffic: runSource[trace.TrafficRow](run, trace.TrafficFile),
		blob:    runSource[BlobRow](run, trace.TrafficFile),
	}
	r, err := build(run.Manifest, src, opts)
	if err != nil {
		return nil, err
	}
	r.Dir = run.Dir
	return r, nil
}

// runSource scans one table file of run.
func runSource[T any](run *trace.Run, file string) source[T] {
	return func(fn func([]T) error) error { return trace.Scan(run, file, fn) }
}

// pipelined runs src's decoding in its own goroutine and fn in the
// caller's, so decoding and aggregation overlap. fn's first error stops
// the feeding and is returned.
func pipelined[T any](src source[T]) source[T] {
	return func(fn func([]T) error) error {
		ch := make(chan []T, 8)
		var failed atomic.Bool
		done := make(chan error, 1)
		go func() {
			err := src(func(batch []T) error {
				if failed.Load() {
					return errStopped
				}
				ch <- batch
				return nil
			})
			close(ch)
			done <- err
		}()
		var fnErr error
		for batch := range ch {
			if fnErr == nil {
				if fnErr = fn(batch); fnErr != nil {
					failed.Store(true)
				}
			}
		}
		if err := <-done; fnErr == nil && err != nil {
			return err
		}
		return fnErr
	}
}

// errStopped ends a pipelined scan whose consumer failed.
var errStopped = stoppedError{}

type stoppedError struct{}

func (stoppedError) Error() string { return "scan stopped: consumer failed" }
