package trace_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/netprof/netprof/trace"
)

// flowCols are every column of flows.parquet with the kind of its field.
var flowCols = []trace.Column{
	{Name: "time", Kind: trace.TimeCol}, {Name: "interval_ns", Kind: trace.Int64Col},
	{Name: "netns", Kind: trace.Uint64Col}, {Name: "ifindex", Kind: trace.Int32Col},
	{Name: "ifname", Kind: trace.StringCol}, {Name: "family", Kind: trace.Uint32Col},
	{Name: "proto", Kind: trace.Uint32Col}, {Name: "src_addr", Kind: trace.StringCol},
	{Name: "src_port", Kind: trace.Uint32Col}, {Name: "dst_addr", Kind: trace.StringCol},
	{Name: "dst_port", Kind: trace.Uint32Col}, {Name: "rx_bytes", Kind: trace.Uint64Col},
	{Name: "tx_packets", Kind: trace.Uint64Col}, {Name: "retransmits", Kind: trace.Uint64Col},
	{Name: "rtt_samples", Kind: trace.Uint64Col}, {Name: "rtt_min_us", Kind: trace.Uint32Col},
	{Name: "rtt_p50_us", Kind: trace.Uint32Col}, {Name: "snd_cwnd", Kind: trace.Uint32Col},
	{Name: "mss", Kind: trace.Uint32Col},
}

// flowCells renders row x's values of flowCols ("null" for nil).
func flowCells(x trace.FlowRow) []string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	p := func(v *uint32) string {
		if v == nil {
			return "null"
		}
		return u(uint64(*v))
	}
	return []string{strconv.FormatInt(x.Time.UnixNano(), 10), strconv.FormatInt(x.IntervalNs, 10), u(x.Netns),
		strconv.Itoa(int(x.Ifindex)), x.Ifname, u(uint64(x.Family)), u(uint64(x.Proto)), x.SrcAddr,
		u(uint64(x.SrcPort)), x.DstAddr, u(uint64(x.DstPort)), u(x.RxBytes), u(x.TxPackets),
		u(x.Retransmits), u(x.RTTSamples), p(x.RTTMinUs), p(x.RTTP50Us), p(x.SndCwnd), p(x.MSS)}
}

// batchCells renders row i of b the way flowCells renders a row.
func batchCells(b *trace.ColumnBatch, cols []trace.Column, i int) []string {
	out := make([]string, len(cols))
	for c, col := range cols {
		if v := b.Valid(c); v != nil && !v[i] {
			out[c] = "null"
			continue
		}
		switch col.Kind {
		case trace.TimeCol, trace.Int64Col:
			out[c] = strconv.FormatInt(b.Int64(c)[i], 10)
		case trace.Uint64Col:
			out[c] = strconv.FormatUint(b.Uint64(c)[i], 10)
		case trace.Int32Col:
			out[c] = strconv.Itoa(int(b.Int32(c)[i]))
		case trace.Uint32Col:
			out[c] = strconv.FormatUint(uint64(b.Uint32(c)[i]), 10)
		case trace.StringCol:
			out[c] = b.String(b.StringIDs(c)[i])
		}
	}
	return out
}

// bigFlowInterval returns n flows rows of interval i: strings repeat,
// include "", and optional columns are null in a third of the rows.
func bigFlowInterval(i, n int) []trace.FlowRow {
	t := base.Add(time.Duration(i) * time.Second)
	rows := make([]trace.FlowRow, n)
	for f := range rows {
		x := uint64(i*n + f)
		set := (i+f)%3 != 0
		rows[f] = trace.FlowRow{Time: t, IntervalNs: 1e9 + int64(f), Netns: 1<<63 + x, Ifindex: -int32(f % 4),
			Ifname: fmt.Sprint("eth", f%3), Family: 4, Proto: uint8(f % 256), SrcAddr: fmt.Sprint("10.0.", f%300, ".1"),
			SrcPort: uint16(x), DstAddr: []string{"", "fe80::1", "10.9.9.9"}[f%3], DstPort: 65535,
			RxBytes: x * 1000, TxPackets: x, Retransmits: x % 7, RTTSamples: x % 5,
			RTTMinUs: opt(set, uint32(f)), RTTP50Us: opt(f%2 == 0, uint32(4_000_000_000)),
			SndCwnd: opt(set, uint32(x)), MSS: opt(!set, uint32(1448))}
	}
	return rows
}

// writeFlowRun records intervals × n flows rows, flushing every flush
// intervals, and returns the opened run.
func writeFlowRun(t *testing.T, intervals, n, flush int) *trace.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := trace.Create(dir, testManifest(), trace.WithFlushEvery(flush), trace.WithPartSpan(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := range intervals {
		if err := w.WriteInterval(trace.Interval{Flows: bigFlowInterval(i, n)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(base, trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// checkColumnsMatchScan reads run's flows with Scan and with ScanColumns
// (opts) and compares every cell and the batch bounds.
func checkColumnsMatchScan(t *testing.T, run *trace.Run, opts trace.ColumnScanOptions) {
	t.Helper()
	var want [][]string
	if err := trace.Scan(run, trace.FlowsFile, func(rows []trace.FlowRow) error {
		for _, x := range rows {
			want = append(want, flowCells(x))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	maxRows := opts.BatchRows
	if maxRows < 1 {
		maxRows = trace.ScanBatchRows
	}
	var got int64
	err := trace.ScanColumns(run, trace.FlowsFile, flowCols, opts, func(b *trace.ColumnBatch) error {
		if b.Row != got || b.Len < 1 || b.Len > maxRows {
			return fmt.Errorf("batch at row %d of %d rows, want row %d and 1..%d rows", b.Row, b.Len, got, maxRows)
		}
		for i := range b.Len {
			if g, w := batchCells(b, flowCols, i), want[got]; strings.Join(g, ",") != strings.Join(w, ",") {
				return fmt.Errorf("row %d (group %d):\n got %q\nwant %q", got, b.RowGroup, g, w)
			}
			got++
		}
		return nil
	})
	if err != nil || got != int64(len(want)) {
		t.Fatalf("ScanColumns(%+v): %d rows, err %v; want %d rows", opts, got, err, len(want))
	}
}

// ScanColumns returns what Scan returns, across row groups, pages and
// batch boundaries, with one or several workers.
func TestScanColumnsMatchesScan(t *testing.T) {
	run := writeFlowRun(t, 30, 1500, 12) // 45,000 rows in 3 row groups, several pages per column
	for _, opts := range []trace.ColumnScanOptions{{}, {Workers: 1, BatchRows: 1000 - 7}, {Workers: 3, BatchRows: 50_000}} {
		checkColumnsMatchScan(t, run, opts)
	}
}

// Files written with other encodings (plain strings, as older netprof
// wrote; dictionary-encoded integers) read the same.
func TestScanColumnsEncodings(t *testing.T) {
	for name, opts := range map[string][]parquet.WriterOption{
		"plain": {parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain)},
		"dictionary": {parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.RLEDictionary),
			parquet.DefaultEncodingFor(parquet.Int32, &parquet.RLEDictionary),
			parquet.DefaultEncodingFor(parquet.Int64, &parquet.RLEDictionary)},
	} {
		t.Run(name, func(t *testing.T) {
			run := writeFlowRun(t, 0, 0, 1)
			path := filepath.Join(run.Dir, trace.FlowsFile)
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			w := parquet.NewGenericWriter[trace.FlowRow](f, append(opts, parquet.Compression(&parquet.Zstd))...)
			for i := range 8 {
				if _, err := w.Write(bigFlowInterval(i, 2000)); err != nil {
					t.Fatal(err)
				}
				if i%3 == 2 {
					if err := w.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := errors.Join(w.Close(), f.Close()); err != nil {
				t.Fatal(err)
			}
			checkColumnsMatchScan(t, run, trace.ColumnScanOptions{Workers: 2, BatchRows: 3000})
		})
	}
}

// A column the file lacks is null in every row, like a pointer field
// Scan fills with nil.
func TestScanColumnsMissingColumn(t *testing.T) {
	run := writeFlowRun(t, 2, 10, 1)
	cols := []trace.Column{{Name: "not_in_v1", Kind: trace.Uint64Col}, {Name: "dst_port", Kind: trace.Uint32Col},
		{Name: "also_missing", Kind: trace.StringCol}}
	rows := 0
	err := trace.ScanColumns(run, trace.FlowsFile, cols, trace.ColumnScanOptions{}, func(b *trace.ColumnBatch) error {
		for i := range b.Len {
			if b.Valid(0)[i] || b.Uint64(0)[i] != 0 || b.Valid(1) != nil || b.Uint32(1)[i] != 65535 ||
				b.Valid(2)[i] || b.String(b.StringIDs(2)[i]) != "" {
				return fmt.Errorf("row %d: missing %v/%d, dst_port %d", rows, b.Valid(0)[i], b.Uint64(0)[i], b.Uint32(1)[i])
			}
			rows++
		}
		return nil
	})
	if err != nil || rows != 20 {
		t.Errorf("%d rows, err %v; want 20 rows", rows, err)
	}
}

// A kind that does not fit the column's type is an error naming the file
// and the column, before any row is read.
func TestScanColumnsWrongKind(t *testing.T) {
	run := writeFlowRun(t, 1, 10, 1)
	for _, c := range []trace.Column{{Name: "src_addr", Kind: trace.Int64Col}, {Name: "netns", Kind: trace.TimeCol},
		{Name: "rtt_min_us", Kind: trace.Uint64Col}, {Name: "time", Kind: 99}} {
		called := false
		err := trace.ScanColumns(run, trace.FlowsFile, []trace.Column{c}, trace.ColumnScanOptions{},
			func(*trace.ColumnBatch) error { called = true; return nil })
		if err == nil || called || !strings.Contains(err.Error(), "flows/part-000000.parquet") || !strings.Contains(err.Error(), c.Name) {
			t.Errorf("%+v: err %v, callback called %v; want an error naming the file and column", c, err, called)
		}
	}
}

// The callback's error stops the scan (every worker) and comes back as
// is; a missing file wraps os.ErrNotExist.
func TestScanColumnsErrors(t *testing.T) {
	run := writeFlowRun(t, 12, 1000, 1) // 12 row groups
	stop := errors.New("stop")
	calls := 0
	err := trace.ScanColumns(run, trace.FlowsFile, flowCols, trace.ColumnScanOptions{Workers: 2, BatchRows: 100},
		func(*trace.ColumnBatch) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("ScanColumns returned %v after %d calls, want the callback's error after 1", err, calls)
	}
	err = trace.ScanColumns(run, "nope.parquet", flowCols, trace.ColumnScanOptions{}, func(*trace.ColumnBatch) error { return nil })
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.parquet") {
		t.Errorf("missing file: %v, want os.ErrNotExist naming the file", err)
	}
}

// scanBoth reads file with Scan and ScanStructs and compares the rows.
func scanBoth[T any](t *testing.T, run *trace.Run, file string) int {
	t.Helper()
	var want, got []T
	if err := trace.Scan(run, file, func(rows []T) error { want = append(want, rows...); return nil }); err != nil {
		t.Fatalf("Scan %s: %v", file, err)
	}
	opts := trace.ColumnScanOptions{Workers: 2, BatchRows: 3}
	if err := trace.ScanStructs(run, file, opts, func(rows []T) error { got = append(got, rows...); return nil }); err != nil {
		t.Fatalf("ScanStructs %s: %v", file, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: ScanStructs\n%+v\nScan\n%+v", file, got, want)
	}
	return len(got)
}

// ScanStructs returns what Scan returns, for every table's row type and
// for a projection with a column the file lacks; a field type it cannot
// fill (SocketRow's bool) is an error.
func TestScanStructsMatchesScan(t *testing.T) {
	dir, _ := recordRun(t, 7, trace.WithFlushEvery(3))
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	type narrowFlow struct {
		Time    time.Time `parquet:"time,timestamp(microsecond:utc)"`
		DstPort uint16    `parquet:"dst_port"`
		NewCol  *uint64   `parquet:"not_in_v1,optional"`
		NewStr  string    `parquet:"not_in_v1_either"`
	}
	n := scanBoth[trace.IfaceRow](t, run, trace.IfacesFile) + scanBoth[trace.CPURow](t, run, trace.CPUsFile) +
		scanBoth[trace.FlowRow](t, run, trace.FlowsFile) + scanBoth[trace.TrafficRow](t, run, trace.TrafficFile) +
		scanBoth[trace.ProbeRow](t, run, trace.ProbesFile) + scanBoth[narrowFlow](t, run, trace.FlowsFile)
	if n != 7*(1+2+2+1+1+2) {
		t.Errorf("%d rows in all", n)
	}
	err = trace.ScanStructs(run, trace.SocketsFile, trace.ColumnScanOptions{}, func([]trace.SocketRow) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "Active") {
		t.Errorf("SocketRow: %v, want an error naming the bool field", err)
	}
}

// The writer dictionary-encodes strings and delta-encodes integers.
func TestWriterEncodings(t *testing.T) {
	run := writeFlowRun(t, 2, 50, 1)
	pf := openParquet(t, onePart(t, run.Dir, trace.FlowsFile))
	want := map[string]format.Encoding{"src_addr": format.RLEDictionary, "ifname": format.RLEDictionary,
		"time": format.DeltaBinaryPacked, "tx_bytes": format.DeltaBinaryPacked, "src_port": format.DeltaBinaryPacked,
		"snd_cwnd": format.DeltaBinaryPacked}
	for _, c := range pf.Metadata().RowGroups[0].Columns {
		name := strings.Join(c.MetaData.PathInSchema, ".")
		if enc, ok := want[name]; ok && !slices.Contains(c.MetaData.Encoding, enc) {
			t.Errorf("%s encodings %v, want %v among them", name, c.MetaData.Encoding, enc)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("columns not found: %v", want)
	}
}
