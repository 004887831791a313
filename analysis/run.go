package analysis

import (
	"errors"
	"fmt"
	"os"

	"github.com/netprof/netprof/trace"
)

// FromRun reads the ifaces, cpus, flows and traffic tables of run and calls
// Build; the report's Dir is run.Dir. A missing table file reads as an empty
// table and adds a note (its figures print "n/a"); any other read error is
// returned, wrapped with the table's name.
func FromRun(run *trace.Run) (*Report, error) {
	var missing []string
	ifaces, err := readTable(run.Ifaces, trace.IfacesFile, &missing)
	if err != nil {
		return nil, err
	}
	cpus, err := readTable(run.CPUs, trace.CPUsFile, &missing)
	if err != nil {
		return nil, err
	}
	flows, err := readTable(run.Flows, trace.FlowsFile, &missing)
	if err != nil {
		return nil, err
	}
	traffic, err := readTable(run.Traffic, trace.TrafficFile, &missing)
	if err != nil {
		return nil, err
	}
	r, err := Build(run.Manifest, ifaces, cpus, flows, traffic)
	if err != nil {
		return nil, err
	}
	r.Dir = run.Dir
	for _, f := range missing {
		r.note(f + " missing from the run directory: read as empty")
	}
	return r, nil
}

// readTable calls read; a missing file gives no rows and is appended to
// missing.
func readTable[T any](read func() ([]T, error), file string, missing *[]string) ([]T, error) {
	rows, err := read()
	if errors.Is(err, os.ErrNotExist) {
		*missing = append(*missing, file)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", file, err)
	}
	return rows, nil
}
