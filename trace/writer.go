package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"
)

// Manifest.Status values written by this package or expected from callers.
const (
	// StatusRecording is the status while a run is being written. A run
	// still "recording" when read was not closed: it is being recorded
	// now, or its recorder was killed. Its tables then hold every interval
	// up to Manifest.Checkpoint (closed part files); the intervals after it
	// were lost.
	StatusRecording = "recording"
	// StatusOK is the status of a run that ended normally.
	StatusOK = "ok"
	// StatusInterrupted is the status of a run ended early by a signal.
	StatusInterrupted = "interrupted"
)

// DefaultFlushEvery is the default number of intervals per Parquet row group
// within one part file.
const DefaultFlushEvery = 60

// DefaultPartSpan is how long, by default, a part file stays open before
// its rows are closed into a readable file: what a killed recorder can lose
// at most (plus the interval being written).
const DefaultPartSpan = 10 * time.Second

// ErrClosed is returned by Writer methods called after Close.
var ErrClosed = errors.New("trace writer closed")

// Interval is the rows of every table for one sampling interval. Any slice
// may be empty (a table with no rows in that interval).
type Interval struct {
	Ifaces  []IfaceRow
	CPUs    []CPURow
	Flows   []FlowRow
	Traffic []TrafficRow
	Probes  []ProbeRow
	Sockets []SocketRow
	NICs    []NICStatRow
	Drops   []DropRow
}

// Option configures a Writer.
type Option func(*writerConfig)

type writerConfig struct {
	flushEvery   int
	partSpan     time.Duration
	partEvery    int
	compactEvery int
	now          func() time.Time
}

// DefaultCompactEvery is how many closed parts of a table are merged, by
// default, into one file (10 minutes of 10 s parts), so a recording of days
// leaves a few hundred files per table, not tens of thousands.
const DefaultCompactEvery = 60

// WithCompactEvery merges every n closed parts of a table into one part
// file named for the range it holds (part-000000-000059.parquet), in the
// background; n < 2 turns merging off.
func WithCompactEvery(n int) Option {
	return func(c *writerConfig) { c.compactEvery = n }
}

// WithFlushEvery sets how many intervals go into one Parquet row group of a
// part file (default DefaultFlushEvery). Rows of unflushed intervals are
// held in memory, compressed page by page. n < 1 means the default.
func WithFlushEvery(n int) Option {
	return func(c *writerConfig) {
		if n >= 1 {
			c.flushEvery = n
		}
	}
}

// WithPartSpan sets how long a part file is written before it is closed:
// the part closes at the first WriteInterval at least d after it was
// opened. By default (or d <= 0) the first parts are shorter, 1 s, 2 s,
// 4 s, 8 s, then DefaultPartSpan each, so a run killed in its first seconds
// keeps most of its intervals too.
func WithPartSpan(d time.Duration) Option {
	return func(c *writerConfig) {
		if d > 0 {
			c.partSpan = d
		}
	}
}

// WithPartEvery closes a part file after n intervals, whatever its span
// (default: no count limit, only WithPartSpan). n < 1 means no limit.
func WithPartEvery(n int) Option {
	return func(c *writerConfig) { c.partEvery = max(n, 0) }
}

// Writer records one run directory: manifest.json plus, per table, a
// directory of Parquet part files (flows/part-000000.parquet, ...). A part
// is written under a hidden temporary name and renamed into place once its
// footer is written and synced, every WithPartSpan (10 s by default), so a
// run whose recorder is killed keeps every interval written before the
// last checkpoint: readers (this package, DuckDB's
// read_parquet('DIR/flows/*.parquet'), Arrow) see only closed parts. Its
// methods are safe for concurrent use.
type Writer struct {
	dir string
	cfg writerConfig

	mu        sync.Mutex
	m         Manifest
	pending   int       // intervals written since the last row-group flush
	partIvs   int       // intervals in the open part
	partStart time.Time // when the open part got its first interval
	seq       int       // sequence number of the open part
	total     int64     // intervals written
	closed    bool

	ifaces  *table[IfaceRow]
	cpus    *table[CPURow]
	flows   *table[FlowRow]
	traffic *table[TrafficRow]
	probes  *table[ProbeRow]
	sockets *table[SocketRow]
	nics    *table[NICStatRow]
	drops   *table[DropRow]

	merges   sync.WaitGroup // the merge goroutine, if one runs
	mergeMu  sync.Mutex
	merging  bool  // a merge goroutine runs
	mergeErr error // what merges failed with, reported by Close
}

// Create creates the run directory dir (and its parents) and starts a run.
// It writes manifest.json at once with SchemaVersion set, End zero and
// Status StatusRecording, and creates the table directories; each holds
// at least one part file (possibly with zero rows) once Close has returned.
//
// Create returns an error wrapping os.ErrExist if dir already holds
// manifest.json or a table. On any error it removes what it created, so a
// failed Create can be retried.
func Create(dir string, m Manifest, opts ...Option) (*Writer, error) {
	cfg := writerConfig{flushEvery: DefaultFlushEvery, compactEvery: DefaultCompactEvery, now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	w := &Writer{dir: dir, cfg: cfg, m: normalizeManifest(m)}
	w.m.End, w.m.Status = time.Time{}, StatusRecording

	var created []string
	ok := false
	defer func() {
		if !ok {
			for i := len(created) - 1; i >= 0; i-- {
				os.Remove(created[i])
			}
		}
	}()
	for _, f := range TableFiles {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return nil, fmt.Errorf("create run %s: %s: %w", dir, f, os.ErrExist)
		}
	}
	mpath := filepath.Join(dir, ManifestFile)
	if err := writeManifestExclusive(mpath, w.m); err != nil {
		return nil, fmt.Errorf("create run %s: %w", dir, err)
	}
	created = append(created, mpath)
	if err := w.openTables(&created); err != nil {
		return nil, fmt.Errorf("create run %s: %w", dir, err)
	}
	ok = true
	return w, nil
}

// openTables creates the table directories, appending each path it
// created to created (for removal if Create fails).
func (w *Writer) openTables(created *[]string) error {
	var err error
	if w.ifaces, err = newTable[IfaceRow](w.dir, IfacesFile, created); err != nil {
		return err
	}
	if w.cpus, err = newTable[CPURow](w.dir, CPUsFile, created); err != nil {
		return err
	}
	if w.flows, err = newTable[FlowRow](w.dir, FlowsFile, created); err != nil {
		return err
	}
	if w.traffic, err = newTable[TrafficRow](w.dir, TrafficFile, created); err != nil {
		return err
	}
	if w.probes, err = newTable[ProbeRow](w.dir, ProbesFile, created); err != nil {
		return err
	}
	if w.sockets, err = newTable[SocketRow](w.dir, SocketsFile, created); err != nil {
		return err
	}
	if w.nics, err = newTable[NICStatRow](w.dir, NICsFile, created); err != nil {
		return err
	}
	w.drops, err = newTable[DropRow](w.dir, DropsFile, created)
	return err
}

// Dir returns the run directory.
func (w *Writer) Dir() string { return w.dir }

// WriteInterval appends one interval's rows to each table. Every
// WithFlushEvery intervals the buffered rows are flushed as one row group
// per part file; when the open part has been written for WithPartSpan (or
// holds WithPartEvery intervals) it is checkpointed: every table's part is
// closed into a readable file and manifest.json records the checkpoint. It
// returns ErrClosed after Close, or an error naming the table that failed;
// after an error the caller should Close the Writer.
func (w *Writer) WriteInterval(iv Interval) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.partIvs == 0 {
		w.partStart = w.cfg.now()
	}
	if err := w.writeRows(iv); err != nil {
		return err
	}
	w.total++
	w.partIvs++
	w.pending++
	if (w.cfg.partEvery > 0 && w.partIvs >= w.cfg.partEvery) || w.cfg.now().Sub(w.partStart) >= w.span() {
		return w.checkpointLocked()
	}
	if w.pending >= w.cfg.flushEvery {
		return w.flushLocked()
	}
	return nil
}

func (w *Writer) writeRows(iv Interval) error {
	return errors.Join(
		w.ifaces.write(w.seq, iv.Ifaces),
		w.cpus.write(w.seq, iv.CPUs),
		w.flows.write(w.seq, iv.Flows),
		w.traffic.write(w.seq, iv.Traffic),
		w.probes.write(w.seq, iv.Probes),
		w.sockets.write(w.seq, iv.Sockets),
		w.nics.write(w.seq, iv.NICs),
		w.drops.write(w.seq, iv.Drops))
}

// Flush checkpoints now, without waiting for WithPartSpan: every table's
// open part is closed into a readable file (tables with no rows since the
// last checkpoint get none) and manifest.json records the checkpoint. It
// returns ErrClosed after Close.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.checkpointLocked()
}

// span is how long the open part is written (see WithPartSpan).
func (w *Writer) span() time.Duration {
	switch {
	case w.cfg.partSpan > 0:
		return w.cfg.partSpan
	case w.seq >= 4:
		return DefaultPartSpan
	}
	return min(DefaultPartSpan, time.Second<<w.seq)
}

// flushLocked writes the open parts' buffered rows as one row group each.
func (w *Writer) flushLocked() error {
	w.pending = 0
	return errors.Join(w.ifaces.flush(), w.cpus.flush(), w.flows.flush(),
		w.traffic.flush(), w.probes.flush(), w.sockets.flush(), w.nics.flush(), w.drops.flush())
}

// checkpointLocked closes every table's open part and records the
// checkpoint in manifest.json. Nothing is done when no interval was
// written since the last one.
func (w *Writer) checkpointLocked() error {
	if w.partIvs == 0 {
		return nil
	}
	err := w.closeParts()
	w.seq++
	w.partIvs, w.pending = 0, 0
	if err != nil {
		return err
	}
	w.m.Checkpoint = &Checkpoint{Time: w.cfg.now().UTC(), Intervals: w.total, Parts: w.seq}
	if err := writeManifestAtomic(w.dir, w.m); err != nil {
		return fmt.Errorf("checkpoint manifest: %w", err)
	}
	w.startMerges()
	return nil
}

// mergeRemaining runs, in the caller, every merge of WithCompactEvery
// parts the background ones left (a checkpoint found one still running).
func (w *Writer) mergeRemaining() error {
	n := w.cfg.compactEvery
	if n < 2 {
		return nil
	}
	var errs []error
	for _, take := range []func(int) func() error{w.ifaces.takeMerge, w.cpus.takeMerge, w.flows.takeMerge,
		w.traffic.takeMerge, w.probes.takeMerge, w.sockets.takeMerge, w.nics.takeMerge, w.drops.takeMerge} {
		for j := take(n); j != nil; j = take(n) {
			errs = append(errs, j())
		}
	}
	return errors.Join(errs...)
}

// startMerges starts a goroutine merging, for each table with at least
// WithCompactEvery closed parts not yet merged, its oldest ones, unless a
// merge still runs (the next checkpoint tries again). A failed merge
// leaves its parts as they were (nothing is lost) and is reported by
// Close.
func (w *Writer) startMerges() {
	if w.cfg.compactEvery < 2 {
		return
	}
	w.mergeMu.Lock()
	defer w.mergeMu.Unlock()
	if w.merging {
		return
	}
	n := w.cfg.compactEvery
	var jobs []func() error
	for _, j := range []func() error{w.ifaces.takeMerge(n), w.cpus.takeMerge(n), w.flows.takeMerge(n),
		w.traffic.takeMerge(n), w.probes.takeMerge(n), w.sockets.takeMerge(n), w.nics.takeMerge(n), w.drops.takeMerge(n)} {
		if j != nil {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return
	}
	w.merging = true
	w.merges.Add(1)
	go func() {
		defer w.merges.Done()
		var errs []error
		for _, j := range jobs {
			errs = append(errs, j())
		}
		w.mergeMu.Lock()
		defer w.mergeMu.Unlock()
		w.merging = false
		w.mergeErr = errors.Join(append(errs, w.mergeErr)...)
	}()
}

// closeParts closes the open part of every table.
func (w *Writer) closeParts() error {
	return errors.Join(w.ifaces.closePart(), w.cpus.closePart(), w.flows.closePart(),
		w.traffic.closePart(), w.probes.closePart(), w.sockets.closePart(), w.nics.closePart(), w.drops.closePart())
}

// Manifest returns a copy of the manifest as it stands (End zero and Status
// StatusRecording until Close). Slices and the Config map are shared.
func (w *Writer) Manifest() Manifest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m
}

// UpdateManifest lets the caller fill in manifest fields learned after
// Create (interfaces, probes, kernel...) and rewrites manifest.json
// atomically. SchemaVersion, End, Status and Checkpoint are owned by the
// Writer: changes fn makes to them are discarded. It returns ErrClosed
// after Close.
func (w *Writer) UpdateManifest(fn func(*Manifest)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	m := w.m
	fn(&m)
	m = normalizeManifest(m)
	m.End, m.Status, m.Checkpoint = time.Time{}, StatusRecording, w.m.Checkpoint
	w.m = m
	if err := writeManifestAtomic(w.dir, m); err != nil {
		return fmt.Errorf("update manifest: %w", err)
	}
	return nil
}

// SetInterfaces replaces Manifest.Interfaces and rewrites manifest.json; see
// UpdateManifest.
func (w *Writer) SetInterfaces(ifs []Interface) error {
	return w.UpdateManifest(func(m *Manifest) { m.Interfaces = ifs })
}

// SetProbes replaces Manifest.Probes and rewrites manifest.json; see
// UpdateManifest.
func (w *Writer) SetProbes(ps []Probe) error {
	return w.UpdateManifest(func(m *Manifest) { m.Probes = ps })
}

// Close closes every table's open part (a table that never got a row gets
// one empty part, so its schema is in the run), then rewrites manifest.json
// atomically (temp file + rename) with End = end (in UTC), Status = status
// and Checkpoint cleared. The manifest is rewritten even if a table failed,
// so the run records how it ended; all errors are joined. Close is
// idempotent: later calls return nil.
func (w *Writer) Close(end time.Time, status string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.merges.Wait()
	tablesErr := errors.Join(w.mergeErr, w.closeParts(),
		w.ifaces.ensurePart(w.seq), w.cpus.ensurePart(w.seq), w.flows.ensurePart(w.seq),
		w.traffic.ensurePart(w.seq), w.probes.ensurePart(w.seq), w.sockets.ensurePart(w.seq), w.nics.ensurePart(w.seq), w.drops.ensurePart(w.seq),
		w.mergeRemaining())
	w.m.End, w.m.Status, w.m.Checkpoint = end.UTC(), status, nil
	var manifestErr error
	if err := writeManifestAtomic(w.dir, w.m); err != nil {
		manifestErr = fmt.Errorf("close manifest: %w", err)
	}
	return errors.Join(tablesErr, manifestErr)
}

// table is one table's directory of part files being written.
type table[T any] struct {
	name  string // the table's file name, e.g. "flows.parquet"
	dir   string // its part directory
	parts int    // closed parts
	small []int  // sequence numbers of closed parts not merged yet
	part  *part[T]
}

// part is one part file being written under its temporary name.
type part[T any] struct {
	seq        int
	tmp, final string
	f          *os.File
	w          *parquet.GenericWriter[T]
}

// newTable creates the table's part directory dir/<table> exclusively and
// appends its path to created.
func newTable[T any](dir, name string, created *[]string) (*table[T], error) {
	tdir := filepath.Join(dir, TableDir(name))
	if err := os.Mkdir(tdir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", TableDir(name), err)
	}
	*created = append(*created, tdir)
	return &table[T]{name: name, dir: tdir}, nil
}

// openPart starts part seq: a zstd-compressed Parquet file with T's schema
// under a hidden temporary name. The encodings (standard Parquet ones, read
// by DuckDB, Arrow, Spark) suit a trace: string columns are
// dictionary-encoded (RLE_DICTIONARY, one dictionary per column chunk):
// addresses and names repeat on every interval, and a reader maps each
// distinct value once per row group instead of once per row (ScanColumns
// does). Integer columns are DELTA_BINARY_PACKED: times, ports and slowly
// changing counters shrink to a few bits a value, which made a 36 M-row
// flows table 6.5x smaller than PLAIN + zstd, faster to write and, with
// less to decompress, faster to read.
func (t *table[T]) openPart(seq int) error {
	final := filepath.Join(t.dir, partName(seq))
	tmp := filepath.Join(t.dir, "."+partName(seq)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s part: %w", t.name, err)
	}
	t.part = &part[T]{tmp: tmp, final: final, f: f, w: newParquetWriter[T](f)}
	t.part.seq = seq
	return nil
}

// newParquetWriter starts a trace Parquet file with T's schema on f.
func newParquetWriter[T any](f *os.File) *parquet.GenericWriter[T] {
	return parquet.NewGenericWriter[T](f,
		parquet.Compression(&parquet.Zstd),
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.RLEDictionary),
		parquet.DefaultEncodingFor(parquet.Int64, &parquet.DeltaBinaryPacked),
		parquet.DefaultEncodingFor(parquet.Int32, &parquet.DeltaBinaryPacked),
		parquet.KeyValueMetadata("netprof.schema_version", fmt.Sprint(SchemaVersion)),
	)
}

// takeMerge returns a job merging the table's n oldest unmerged parts,
// or nil when it has fewer.
func (t *table[T]) takeMerge(n int) func() error {
	if t == nil || len(t.small) < n {
		return nil
	}
	seqs := slices.Clone(t.small[:n])
	t.small = slices.Delete(t.small, 0, n)
	return func() error { return mergeParts[T](t.dir, t.name, seqs) }
}

// mergeParts writes the parts seqs (closed, in order) of a table into one
// file named for their range, copying their row groups as they are
// (compressed pages spliced, not re-encoded), then removes them. The merged
// file appears by rename once synced; until the parts are removed a reader
// of this package skips the parts inside a merged range (DuckDB's glob
// would see both for those few milliseconds).
func mergeParts[T any](dir, name string, seqs []int) (err error) {
	first, last := seqs[0], seqs[len(seqs)-1]
	final := filepath.Join(dir, mergedName(first, last))
	tmp := filepath.Join(dir, "."+mergedName(first, last)+".tmp")
	defer func() {
		if err != nil {
			os.Remove(tmp)
			err = fmt.Errorf("merge %s parts %d-%d: %w", name, first, last, err)
		}
	}()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	w := newParquetWriter[T](f)
	for _, seq := range seqs {
		if err := copyRowGroups(w, filepath.Join(dir, partName(seq))); err != nil {
			return err
		}
	}
	if err := errors.Join(w.Close(), f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	var errs []error
	for _, seq := range seqs {
		errs = append(errs, os.Remove(filepath.Join(dir, partName(seq))))
	}
	return errors.Join(append(errs, syncDir(dir))...)
}

// copyRowGroups appends every row group of the Parquet file path to w.
func copyRowGroups[T any](w *parquet.GenericWriter[T], path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return err
	}
	for _, rg := range pf.RowGroups() {
		if _, err := w.WriteRowGroup(rg); err != nil {
			return err
		}
	}
	return nil
}

// write appends rows to part seq, opening it on the first row.
func (t *table[T]) write(seq int, rows []T) error {
	if len(rows) == 0 || t == nil {
		return nil
	}
	if t.part == nil {
		if err := t.openPart(seq); err != nil {
			return err
		}
	}
	if _, err := t.part.w.Write(rows); err != nil {
		return fmt.Errorf("write %s: %w", t.name, err)
	}
	return nil
}

func (t *table[T]) flush() error {
	if t == nil || t.part == nil {
		return nil
	}
	if err := t.part.w.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", t.name, err)
	}
	return nil
}

// closePart writes the open part's footer, syncs and closes it, renames it
// to its final name and syncs the directory, so the part survives a crash
// once closePart has returned. A table without an open part is left as is.
func (t *table[T]) closePart() error {
	if t == nil || t.part == nil {
		return nil
	}
	p := t.part
	t.part = nil
	var errs []error
	if err := p.w.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w", t.name, err))
	}
	if err := p.f.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("sync %s: %w", t.name, err))
	}
	if err := p.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close %s: %w", t.name, err))
	}
	if len(errs) == 0 {
		if err := os.Rename(p.tmp, p.final); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", t.name, err))
		} else if err := syncDir(t.dir); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", TableDir(t.name), err))
		}
		t.parts++
		t.small = append(t.small, p.seq)
	}
	return errors.Join(errs...)
}

// ensurePart writes an empty part seq when the table has no closed part,
// so every table of a closed run has its schema on disk.
func (t *table[T]) ensurePart(seq int) error {
	if t == nil || t.parts > 0 {
		return nil
	}
	if err := t.openPart(seq); err != nil {
		return err
	}
	return t.closePart()
}

// syncDir fsyncs a directory, making renames in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
