package analysis

import (
	"sync/atomic"

	"github.com/netprof/netprof/trace"
)

// FromRun analyses run with default Options; see Analyze.
func FromRun(run *trace.Run) (*Report, error) { return Analyze(run, Options{}) }

// Analyze streams the tables of run, row group by row group, into a
// Report; memory grows with flows, CPUs and intervals, not rows. Tables
// are decoded column by column (trace.ScanColumns), only the columns used;
// the flows table, by far the largest, goes straight from columns into its
// aggregates, its row groups decoded on the other CPUs while the rows are
// aggregated. The report's Dir is run.Dir. A missing table file reads as
// an empty table and adds a note (its figures print "n/a"); any other
// read error is returned, wrapped with the table's name.
func Analyze(run *trace.Run, opts Options) (*Report, error) {
	return analyzeSources(run, sources{
		ifaces:  structSource[trace.IfaceRow](run, trace.IfacesFile),
		cpus:    structSource[trace.CPURow](run, trace.CPUsFile),
		flows:   columnFlows(run),
		traffic: structSource[trace.TrafficRow](run, trace.TrafficFile),
		blob:    structSource[BlobRow](run, trace.TrafficFile),
		probes:  structSource[trace.ProbeRow](run, trace.ProbesFile),
		drops:   structSource[trace.DropRow](run, trace.DropsFile),
		nics:    structSource[trace.NICStatRow](run, trace.NICsFile),
	}, opts)
}

// runSources reads every table of run with trace.Scan (parquet-go's row
// reflection), the flows table decoded in its own goroutine: the row path
// Analyze replaced, which must give the same Report (tests check it).
func runSources(run *trace.Run) sources {
	return sources{
		ifaces:  runSource[trace.IfaceRow](run, trace.IfacesFile),
		cpus:    runSource[trace.CPURow](run, trace.CPUsFile),
		flows:   rowFlows(pipelined(runSource[trace.FlowRow](run, trace.FlowsFile))),
		traffic: runSource[trace.TrafficRow](run, trace.TrafficFile),
		blob:    runSource[BlobRow](run, trace.TrafficFile),
		probes:  runSource[trace.ProbeRow](run, trace.ProbesFile),
		drops:   runSource[trace.DropRow](run, trace.DropsFile),
		nics:    runSource[trace.NICStatRow](run, trace.NICsFile),
	}
}

// analyzeSources builds run's Report from src.
func analyzeSources(run *trace.Run, src sources, opts Options) (*Report, error) {
	r, err := build(run.Manifest, src, opts)
	if err != nil {
		return nil, err
	}
	r.Dir = run.Dir
	return r, nil
}

// runSource scans one table file of run with trace.Scan.
func runSource[T any](run *trace.Run, file string) source[T] {
	return func(fn func([]T) error) error { return trace.Scan(run, file, fn) }
}

// structSource scans one table file of run with trace.ScanStructs.
func structSource[T any](run *trace.Run, file string) source[T] {
	return func(fn func([]T) error) error {
		return trace.ScanStructs(run, file, trace.ColumnScanOptions{}, fn)
	}
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
