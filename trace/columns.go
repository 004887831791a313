package trace

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// ColumnKind says which Go type ScanColumns returns a column's values as.
// The kind must fit the column's Parquet physical type.
type ColumnKind uint8

// Column kinds for ScanColumns.
const (
	// Int64Col reads an INT64 column (int64 fields) into ColumnBatch.Int64.
	Int64Col ColumnKind = iota + 1
	// Uint64Col reads an INT64 column of unsigned values (uint64 fields)
	// into ColumnBatch.Uint64.
	Uint64Col
	// Int32Col reads an INT32 column (int32 fields) into ColumnBatch.Int32.
	Int32Col
	// Uint32Col reads an INT32 column of unsigned values (uint8, uint16 and
	// uint32 fields) into ColumnBatch.Uint32.
	Uint32Col
	// TimeCol reads a TIMESTAMP column (INT64 in ms, µs or ns, such as
	// `time`) into ColumnBatch.Int64 as Unix nanoseconds (so only times
	// between the years 1678 and 2262, as time.Time.UnixNano).
	TimeCol
	// StringCol reads a BYTE_ARRAY column (string fields), plain or
	// dictionary-encoded, into ColumnBatch.StringIDs: one id per distinct
	// value, without allocating per row.
	StringCol
)

// Column names a column for ScanColumns and the kind to read it as.
type Column struct {
	Name string
	Kind ColumnKind
}

// ColumnScanOptions tunes ScanColumns. The zero value decodes one row group
// at a time, in batches of ScanBatchRows rows.
type ColumnScanOptions struct {
	// Workers is how many row groups are decoded concurrently (< 1: one).
	// Batches still reach the callback in file order, on the caller's
	// goroutine; memory grows with Workers, not with the file.
	Workers int
	// BatchRows is the most rows per batch (< 1: ScanBatchRows).
	BatchRows int
}

// ColumnBatch is consecutive rows of one row group, column by column: the
// columns requested from ScanColumns, in the order requested (column c of
// the batch is cols[c]). Every slice has Len values, one per row.
//
// A batch and its slices are only valid during the callback: ScanColumns
// reuses them for later rows.
type ColumnBatch struct {
	// RowGroup is the index of the row group the rows belong to, and Row
	// the index of the first row within the whole file.
	RowGroup int
	Row      int64
	// Len is the number of rows.
	Len int

	cols []batchColumn
	strs *stringTable
}

// batchColumn holds one column's values; only the slice of its kind is set.
type batchColumn struct {
	i64   []int64
	u64   []uint64
	i32   []int32
	u32   []uint32
	valid []bool
}

// Int64 returns column c's values when it was requested as Int64Col or
// TimeCol, else nil. Null rows read as 0.
func (b *ColumnBatch) Int64(c int) []int64 { return b.cols[c].i64 }

// Uint64 returns column c's values when it was requested as Uint64Col,
// else nil. Null rows read as 0.
func (b *ColumnBatch) Uint64(c int) []uint64 { return b.cols[c].u64 }

// Int32 returns column c's values when it was requested as Int32Col, else
// nil. Null rows read as 0.
func (b *ColumnBatch) Int32(c int) []int32 { return b.cols[c].i32 }

// Uint32 returns column c's values when it was requested as Uint32Col,
// else nil. Null rows read as 0.
func (b *ColumnBatch) Uint32(c int) []uint32 { return b.cols[c].u32 }

// StringIDs returns column c's values as string ids when it was requested
// as StringCol, else nil; String turns an id back into its value. An id
// names the same string for the whole scan (every column, every batch);
// the order in which ids are given out is unspecified. Null rows read as
// the id of "".
func (b *ColumnBatch) StringIDs(c int) []uint32 { return b.cols[c].u32 }

// String returns the value of a string id from StringIDs.
func (b *ColumnBatch) String(id uint32) string { return b.strs.get(id) }

// Valid returns, for column c, whether each row holds a value (false:
// null). It is nil when every row does: the column is required (not
// optional) in the file. A column missing from the file is null in every
// row.
func (b *ColumnBatch) Valid(c int) []bool { return b.cols[c].valid }

// ScanColumns streams the columns cols of the table file (one of the *File
// constants) of run r into fn, row group by row group, page by page, in
// batches of at most opts.BatchRows rows, decoding only those columns and
// with memory bounded by the batch size and opts.Workers, not the file.
// It is the fast path for large tables (flows); Scan decodes whole rows
// into structs through reflection.
//
// A column the file lacks reads as null in every row (so old files read
// like Scan reads them: zero or nil). Columns must be flat (not repeated)
// and of a physical type that fits their kind, else ScanColumns returns an
// error before reading any row.
//
// ScanColumns stops at the first error from fn and returns it unwrapped.
// Other errors name the file; a missing file gives an error wrapping
// os.ErrNotExist.
func ScanColumns(r *Run, file string, cols []Column, opts ColumnScanOptions, fn func(*ColumnBatch) error) error {
	t, err := openTable(r, file)
	if err != nil {
		return err
	}
	defer t.Close()
	var plan []colPlan
	var rgs []parquet.RowGroup
	for i, pf := range t.files {
		p, err := planColumns(pf.Schema(), cols)
		if err != nil {
			return fmt.Errorf("read %s: %w", t.names[i], err)
		}
		if i > 0 && !samePlan(plan, p) {
			return fmt.Errorf("read %s: schema differs from %s's", t.names[i], t.names[0])
		}
		plan = p
		rgs = append(rgs, pf.RowGroups()...)
	}
	if len(rgs) == 0 {
		return nil
	}
	err = newColumnScan(rgs, plan, opts).run(fn)
	var cbErr callbackError
	if errors.As(err, &cbErr) {
		return cbErr.err
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	return nil
}

// samePlan reports whether two files resolve the columns alike.
func samePlan(a, b []colPlan) bool {
	for i := range a {
		if a[i].leaf != b[i].leaf || a[i].optional != b[i].optional || a[i].timeMul != b[i].timeMul {
			return false
		}
	}
	return len(a) == len(b)
}

// openedTable is every Parquet file of one table, open for reading.
type openedTable struct {
	names []string // paths relative to the run directory, for errors
	fds   []*os.File
	files []*parquet.File
}

// Close closes every file.
func (t *openedTable) Close() error {
	var errs []error
	for _, f := range t.fds {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// openTable opens every Parquet file of table file in run r: the file
// itself in a v1 run, the closed part files in part order in a v2 run (a
// table directory without parts is a table without rows). A table that is
// neither gives an error wrapping os.ErrNotExist.
func openTable(r *Run, file string) (*openedTable, error) {
	for try := 0; ; try++ {
		t, err := openTableOnce(r, file)
		// A part listed then removed: a live run's Writer merged it.
		if errors.Is(err, os.ErrNotExist) && t == nil && try < 3 {
			if _, lerr := TablePaths(r.Dir, file); lerr == nil {
				continue
			}
		}
		return t, err
	}
}

func openTableOnce(r *Run, file string) (*openedTable, error) {
	paths, err := TablePaths(r.Dir, file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	t := &openedTable{}
	for _, p := range paths {
		name, _ := filepath.Rel(r.Dir, p)
		f, err := os.Open(p)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		t.fds = append(t.fds, f)
		st, err := f.Stat()
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		t.names = append(t.names, name)
		t.files = append(t.files, pf)
	}
	return t, nil
}

// TablePaths returns the paths of the Parquet files that hold table file
// (one of the *File constants) in run directory dir, in row order: dir/file
// in a v1 run; in a v2 run the closed part files of dir/TableDir(file),
// possibly none: part-N.parquet, and part-N-M.parquet where the Writer
// merged parts N..M (a part inside a merged range, left by a merge cut
// short, is not listed; nor are hidden files, parts being written). It
// returns an error wrapping os.ErrNotExist when the run has neither.
func TablePaths(dir, file string) ([]string, error) {
	single := filepath.Join(dir, file)
	if st, err := os.Stat(single); err == nil && st.Mode().IsRegular() {
		return []string{single}, nil
	}
	tdir := filepath.Join(dir, TableDir(file))
	ents, err := os.ReadDir(tdir)
	if err != nil {
		return nil, err
	}
	type partFile struct {
		first, last int
		path        string
	}
	var parts []partFile
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if first, last, ok := parsePartName(e.Name()); ok {
			parts = append(parts, partFile{first, last, filepath.Join(tdir, e.Name())})
		}
	}
	slices.SortFunc(parts, func(a, b partFile) int {
		return cmp.Or(cmp.Compare(a.first, b.first), cmp.Compare(b.last, a.last))
	})
	var out []string
	covered := -1 // the last sequence number a listed file holds
	for _, p := range parts {
		if p.last <= covered {
			continue
		}
		out = append(out, p.path)
		covered = p.last
	}
	return out, nil
}

// parsePartName parses part-N.parquet (first = last = N) and
// part-N-M.parquet.
func parsePartName(name string) (first, last int, ok bool) {
	num, ok1 := strings.CutPrefix(name, "part-")
	num, ok2 := strings.CutSuffix(num, ".parquet")
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	a, b, isRange := strings.Cut(num, "-")
	first, err := strconv.Atoi(a)
	if err != nil || first < 0 {
		return 0, 0, false
	}
	if !isRange {
		return first, first, true
	}
	last, err = strconv.Atoi(b)
	if err != nil || last < first {
		return 0, 0, false
	}
	return first, last, true
}

// colPlan is one requested column resolved against the file's schema.
type colPlan struct {
	Column
	leaf     int   // column index in the file; -1 when the file lacks it
	optional bool  // the column has definition levels
	timeMul  int64 // TimeCol: nanoseconds per stored unit
}

// planColumns resolves cols against schema and checks their kinds.
func planColumns(schema *parquet.Schema, cols []Column) ([]colPlan, error) {
	plan := make([]colPlan, len(cols))
	for i, c := range cols {
		p := colPlan{Column: c, leaf: -1}
		leaf, ok := schema.Lookup(c.Name)
		if ok {
			if leaf.MaxRepetitionLevel > 0 || leaf.MaxDefinitionLevel > 1 {
				return nil, fmt.Errorf("column %q: nested or repeated columns are not supported", c.Name)
			}
			p.leaf, p.optional = leaf.ColumnIndex, leaf.MaxDefinitionLevel == 1
			if err := p.checkType(leaf.Node.Type()); err != nil {
				return nil, err
			}
		} else if c.Kind < Int64Col || c.Kind > StringCol {
			return nil, fmt.Errorf("column %q: unknown kind %d", c.Name, c.Kind)
		}
		plan[i] = p
	}
	return plan, nil
}

// checkType checks that p's kind can read a column of type t, and sets
// timeMul for timestamps.
func (p *colPlan) checkType(t parquet.Type) error {
	var k parquet.Kind
	switch p.Kind {
	case Int64Col, Uint64Col, TimeCol:
		k = parquet.Int64
	case Int32Col, Uint32Col:
		k = parquet.Int32
	case StringCol:
		k = parquet.ByteArray
	default:
		return fmt.Errorf("column %q: unknown kind %d", p.Name, p.Kind)
	}
	if t.Kind() != k {
		return fmt.Errorf("column %q is %v, not readable as %v", p.Name, t.Kind(), k)
	}
	if p.Kind != TimeCol {
		return nil
	}
	var ts *format.TimestampType
	if lt := t.LogicalType(); lt != nil {
		ts, _ = lt.Value.(*format.TimestampType)
	}
	if ts == nil || ts.Unit.Value == nil {
		return fmt.Errorf("column %q is not a timestamp", p.Name)
	}
	p.timeMul = int64(ts.Unit.Value.Duration())
	return nil
}

// newBatch returns a batch with room for n rows of plan's columns.
func newBatch(plan []colPlan, n int, strs *stringTable) *ColumnBatch {
	b := &ColumnBatch{cols: make([]batchColumn, len(plan)), strs: strs}
	for i, p := range plan {
		c := &b.cols[i]
		switch p.Kind {
		case Int64Col, TimeCol:
			c.i64 = make([]int64, n)
		case Uint64Col:
			c.u64 = make([]uint64, n)
		case Int32Col:
			c.i32 = make([]int32, n)
		default:
			c.u32 = make([]uint32, n)
		}
		if p.optional || p.leaf < 0 {
			c.valid = make([]bool, n)
		}
	}
	return b
}

// resize sets the batch's length to n (at most its capacity).
func (b *ColumnBatch) resize(n int) {
	b.Len = n
	for i := range b.cols {
		c := &b.cols[i]
		c.i64, c.u64, c.i32, c.u32 = resliced(c.i64, n), resliced(c.u64, n), resliced(c.i32, n), resliced(c.u32, n)
		c.valid = resliced(c.valid, n)
	}
}

// resliced returns s[:n], or nil for nil.
func resliced[T any](s []T, n int) []T {
	if s == nil {
		return nil
	}
	return s[:n]
}
