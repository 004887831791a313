package trace_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/netprof/netprof/trace"
)

// TestArrowReadsFlows reads flows.parquet with an independent Parquet
// implementation (Apache Arrow's) and checks types and values.
func TestArrowReadsFlows(t *testing.T) {
	dir, ivs := recordRun(t, 5, trace.WithFlushEvery(2))
	tbl := readArrowTable(t, onePart(t, dir, trace.FlowsFile))
	defer tbl.Release()

	var want []trace.FlowRow
	for _, iv := range ivs {
		want = append(want, iv.Flows...)
	}
	if tbl.NumRows() != int64(len(want)) {
		t.Fatalf("arrow read %d rows, wrote %d", tbl.NumRows(), len(want))
	}
	sch := tbl.Schema()
	wantType(t, sch, "time", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
	wantType(t, sch, "interval_ns", arrow.PrimitiveTypes.Int64)
	wantType(t, sch, "src_port", arrow.PrimitiveTypes.Uint16)
	wantType(t, sch, "family", arrow.PrimitiveTypes.Uint8)
	wantType(t, sch, "rx_bytes", arrow.PrimitiveTypes.Uint64)
	wantType(t, sch, "rtt_min_us", arrow.PrimitiveTypes.Uint32)
	wantType(t, sch, "src_addr", arrow.BinaryTypes.String)

	times := column[*array.Timestamp](t, tbl, "time")
	ports := column[*array.Uint16](t, tbl, "src_port")
	rtts := column[*array.Uint32](t, tbl, "rtt_min_us")
	addrs := column[*array.String](t, tbl, "src_addr")
	for i, w := range want {
		if got := int64(times.Value(i)); got != w.Time.UnixMicro() {
			t.Errorf("row %d time: %d µs, want %d", i, got, w.Time.UnixMicro())
		}
		if ports.Value(i) != w.SrcPort || addrs.Value(i) != w.SrcAddr {
			t.Errorf("row %d: %s port %d, want %s port %d", i, addrs.Value(i), ports.Value(i), w.SrcAddr, w.SrcPort)
		}
		if rtts.IsNull(i) != (w.RTTMinUs == nil) || (w.RTTMinUs != nil && rtts.Value(i) != *w.RTTMinUs) {
			t.Errorf("row %d rtt_min_us: null=%t %d, want %v", i, rtts.IsNull(i), rtts.Value(i), w.RTTMinUs)
		}
	}
}

// TestArrowReadsCPUs reads cpus.parquet with Arrow: the /proc/stat
// columns are nullable uint64, null where the row had none.
func TestArrowReadsCPUs(t *testing.T) {
	dir, ivs := recordRun(t, 5, trace.WithFlushEvery(2))
	tbl := readArrowTable(t, onePart(t, dir, trace.CPUsFile))
	defer tbl.Release()

	var want []trace.CPURow
	for _, iv := range ivs {
		want = append(want, iv.CPUs...)
	}
	if tbl.NumRows() != int64(len(want)) {
		t.Fatalf("arrow read %d rows, wrote %d", tbl.NumRows(), len(want))
	}
	sch := tbl.Schema()
	wantType(t, sch, "cpu", arrow.PrimitiveTypes.Int32)
	wantType(t, sch, "net_rx_softirq_ns", arrow.PrimitiveTypes.Uint64)
	cols := map[string]func(r *trace.CPURow) *uint64{
		"proc_softirq_ns": func(r *trace.CPURow) *uint64 { return r.ProcSoftirqNs },
		"proc_busy_ns":    func(r *trace.CPURow) *uint64 { return r.ProcBusyNs },
		"proc_total_ns":   func(r *trace.CPURow) *uint64 { return r.ProcTotalNs },
	}
	for name, get := range cols {
		wantType(t, sch, name, arrow.PrimitiveTypes.Uint64)
		if fs, _ := sch.FieldsByName(name); !fs[0].Nullable {
			t.Errorf("%s: not nullable", name)
		}
		a := column[*array.Uint64](t, tbl, name)
		for i := range want {
			w := get(&want[i])
			if a.IsNull(i) != (w == nil) || (w != nil && a.Value(i) != *w) {
				t.Errorf("row %d %s: null=%t %d, want %v", i, name, a.IsNull(i), a.Value(i), w)
			}
		}
	}
}

func readArrowTable(t *testing.T, path string) arrow.Table {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("arrow open %s: %v", path, err)
	}
	defer rdr.Close()
	if rdr.NumRowGroups() != 3 {
		t.Errorf("arrow sees %d row groups, want 3", rdr.NumRowGroups())
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("pqarrow reader: %v", err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow read table: %v", err)
	}
	return tbl
}

func wantType(t *testing.T, sch *arrow.Schema, name string, want arrow.DataType) {
	t.Helper()
	fs, ok := sch.FieldsByName(name)
	if !ok {
		t.Fatalf("arrow schema has no %q: %v", name, sch)
	}
	if !arrow.TypeEqual(fs[0].Type, want) {
		t.Errorf("%s: arrow type %v, want %v", name, fs[0].Type, want)
	}
}

// column returns the named column as one array of type A; the table must
// have been read into a single chunk per column.
func column[A arrow.Array](t *testing.T, tbl arrow.Table, name string) A {
	t.Helper()
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %q", name)
	}
	chunks := tbl.Column(idx[0]).Data().Chunks()
	if len(chunks) != 1 {
		t.Fatalf("%s: %d chunks, want 1", name, len(chunks))
	}
	a, ok := chunks[0].(A)
	if !ok {
		t.Fatalf("%s: array %T", name, chunks[0])
	}
	return a
}
