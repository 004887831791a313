package trace

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// ScanBatchRows is the most rows Scan passes to its callback at once.
const ScanBatchRows = 4096

// Run is a recorded run directory opened for reading.
type Run struct {
	// Dir is the run directory as given to Open.
	Dir string
	// Manifest is manifest.json, with Start and End in UTC.
	Manifest Manifest
}

// Open opens the run directory dir by reading its manifest.json; table files
// are only opened when read. It returns an error wrapping os.ErrNotExist if
// dir (or its manifest.json) does not exist, and one wrapping
// ErrSchemaVersion if the run was written by a newer netprof.
//
// A run whose Manifest.Status is still StatusRecording was not closed: it is
// either being recorded now or its recorder died. Its tables hold the
// intervals of the closed part files (Manifest.Checkpoint says how many);
// a v1 run in that state has unreadable tables (no Parquet footer).
func Open(dir string) (*Run, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Manifest: m}, nil
}

// Ifaces returns every row of ifaces.parquet, in written order.
func (r *Run) Ifaces() ([]IfaceRow, error) { return readAll[IfaceRow](r, IfacesFile) }

// CPUs returns every row of cpus.parquet, in written order.
func (r *Run) CPUs() ([]CPURow, error) { return readAll[CPURow](r, CPUsFile) }

// Flows returns every row of flows.parquet, in written order.
func (r *Run) Flows() ([]FlowRow, error) { return readAll[FlowRow](r, FlowsFile) }

// Traffic returns every row of traffic.parquet, in written order.
func (r *Run) Traffic() ([]TrafficRow, error) { return readAll[TrafficRow](r, TrafficFile) }

// Probes returns every row of probes.parquet, in written order.
func (r *Run) Probes() ([]ProbeRow, error) { return readAll[ProbeRow](r, ProbesFile) }

// Sockets returns every row of sockets.parquet, in written order. A run
// recorded before the table existed has no such file: the error then wraps
// os.ErrNotExist.
func (r *Run) Sockets() ([]SocketRow, error) { return readAll[SocketRow](r, SocketsFile) }

// NICs returns every row of the nics table, in written order; an error
// wrapping os.ErrNotExist for runs recorded before it existed.
func (r *Run) NICs() ([]NICStatRow, error) { return readAll[NICStatRow](r, NICsFile) }

// Drops returns every row of the drops table, in written order; an error
// wrapping os.ErrNotExist for runs recorded before it existed.
func (r *Run) Drops() ([]DropRow, error) { return readAll[DropRow](r, DropsFile) }

func readAll[T any](r *Run, file string) ([]T, error) {
	var all []T
	err := Scan(r, file, func(rows []T) error {
		all = append(all, rows...)
		return nil
	})
	return all, err
}

// Scan streams the table file (one of the *File constants, e.g. FlowsFile)
// of run r into fn, row group by row group, in batches of at most
// ScanBatchRows rows, so memory stays bounded however long the run. T is
// the table's row type (FlowRow for FlowsFile); columns of the file that T
// lacks are skipped and columns T has that the file lacks read as zero or
// nil. Time fields tagged `timestamp(microsecond:utc)`, as in every row type,
// come back in time.UTC. fn may keep the slice it is given. ScanStructs
// returns the same rows faster; ScanColumns reads chosen columns without
// building rows.
//
// Scan stops at the first error from fn and returns it unwrapped. Other
// errors name the file; a missing file gives an error wrapping
// os.ErrNotExist.
func Scan[T any](r *Run, file string, fn func([]T) error) error {
	t, err := openTable(r, file)
	if err != nil {
		return err
	}
	defer t.Close()
	for j, pf := range t.files {
		for i, rg := range pf.RowGroups() {
			if err := scanRowGroup(rg, fn); err != nil {
				var cbErr callbackError
				if errors.As(err, &cbErr) {
					return cbErr.err
				}
				return fmt.Errorf("read %s row group %d: %w", t.names[j], i, err)
			}
		}
	}
	return nil
}

// callbackError marks an error returned by Scan's callback, so Scan can
// return it as is.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

func scanRowGroup[T any](rg parquet.RowGroup, fn func([]T) error) (err error) {
	rd, err := newRowGroupReader[T](rg)
	if err != nil {
		return err
	}
	defer rd.Close()
	for {
		batch := make([]T, min(int64(ScanBatchRows), rg.NumRows()))
		n, rerr := rd.Read(batch)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return rerr
		}
		if n > 0 {
			batch = batch[:n]
			if err := fn(batch); err != nil {
				return callbackError{err}
			}
		}
		if rerr != nil || n == 0 {
			return nil
		}
	}
}

// newRowGroupReader wraps parquet.NewGenericRowGroupReader, which panics
// when T's schema cannot be converted from the file's: a bad file must be
// an error, not a crash.
func newRowGroupReader[T any](rg parquet.RowGroup) (rd *parquet.GenericReader[T], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("schema does not match %T: %v", *new(T), p)
		}
	}()
	return parquet.NewGenericRowGroupReader[T](rg), nil
}
