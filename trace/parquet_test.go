package trace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/netprof/netprof/trace"
)

// openParquet opens a table with parquet-go's low-level API.
func openParquet(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("parquet.OpenFile %s: %v", filepath.Base(path), err)
	}
	return pf
}

func element(t *testing.T, pf *parquet.File, name string) format.SchemaElement {
	t.Helper()
	for _, el := range pf.Metadata().Schema {
		if el.Name == name {
			return el
		}
	}
	t.Fatalf("no column %q in schema", name)
	return format.SchemaElement{}
}

func physical(el format.SchemaElement) format.Type {
	v, _ := el.Type.Get()
	return v
}

func repetition(el format.SchemaElement) format.FieldRepetitionType {
	v, _ := el.RepetitionType.Get()
	return v
}

func TestTimeIsTimestampMicrosUTC(t *testing.T) {
	dir, _ := recordRun(t, 1)
	for _, name := range trace.TableFiles {
		pf := openParquet(t, onePart(t, dir, name))
		el := element(t, pf, "time")
		ts, ok := el.LogicalType.Value.(*format.TimestampType)
		if !ok {
			t.Fatalf("%s time: logical type %v, want TIMESTAMP", name, &el.LogicalType)
		}
		if _, micros := ts.Unit.Value.(*format.MicroSeconds); !micros || !ts.IsAdjustedToUTC {
			t.Errorf("%s time: %v, want TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)", name, ts)
		}
		if physical(el) != format.Int64 || repetition(el) != format.Required {
			t.Errorf("%s time: %v %v, want required INT64", name, physical(el), repetition(el))
		}
		iv := element(t, pf, "interval_ns")
		if physical(iv) != format.Int64 || repetition(iv) != format.Required {
			t.Errorf("%s interval_ns: %v %v, want required INT64", name, physical(iv), repetition(iv))
		}
	}
}

func TestColumnTypes(t *testing.T) {
	dir, _ := recordRun(t, 1)
	pf := openParquet(t, onePart(t, dir, trace.FlowsFile))
	for _, c := range []struct {
		name   string
		phys   format.Type
		rep    format.FieldRepetitionType
		bits   int8 // INT(bits, signed) logical type; 0: not checked
		signed bool
	}{
		{"src_port", format.Int32, format.Required, 16, false},
		{"dst_port", format.Int32, format.Required, 16, false},
		{"family", format.Int32, format.Required, 8, false},
		{"proto", format.Int32, format.Required, 8, false},
		{"rx_bytes", format.Int64, format.Required, 64, false},
		{"ifindex", format.Int32, format.Required, 0, false},
		{"rtt_min_us", format.Int32, format.Optional, 32, false},
		{"snd_cwnd", format.Int32, format.Optional, 32, false},
		{"src_addr", format.ByteArray, format.Required, 0, false},
	} {
		el := element(t, pf, c.name)
		if physical(el) != c.phys || repetition(el) != c.rep {
			t.Errorf("%s: %v %v, want %v %v", c.name, repetition(el), physical(el), c.rep, c.phys)
		}
		if c.bits == 0 {
			continue
		}
		it, ok := el.LogicalType.Value.(*format.IntType)
		if !ok || it.BitWidth != c.bits || it.IsSigned != c.signed {
			t.Errorf("%s: logical type %v, want INT(%d,%t)", c.name, &el.LogicalType, c.bits, c.signed)
		}
	}
	rg := pf.Metadata().RowGroups[0]
	for _, cc := range rg.Columns {
		if cc.MetaData.Codec != format.Zstd {
			t.Errorf("column %v: codec %v, want ZSTD", cc.MetaData.PathInSchema, cc.MetaData.Codec)
		}
	}
}

func TestRowGroupsPerFlushInterval(t *testing.T) {
	const n = 150
	dir, ivs := recordRun(t, n) // default: 60 intervals per row group
	rowsPer := map[string]int{
		trace.IfacesFile: len(ivs[0].Ifaces), trace.CPUsFile: len(ivs[0].CPUs),
		trace.FlowsFile: len(ivs[0].Flows), trace.TrafficFile: len(ivs[0].Traffic),
		trace.ProbesFile: len(ivs[0].Probes),
	}
	for name, per := range rowsPer {
		pf := openParquet(t, onePart(t, dir, name))
		if got := len(pf.RowGroups()); got != 3 {
			t.Errorf("%s: %d row groups, want ceil(150/60) = 3", name, got)
		}
		if got, want := pf.NumRows(), int64(n*per); got != want {
			t.Errorf("%s: %d rows, want %d", name, got, want)
		}
		if got, want := pf.RowGroups()[0].NumRows(), int64(60*per); got != want {
			t.Errorf("%s: first row group has %d rows, want %d", name, got, want)
		}
	}
}

func TestExplicitFlush(t *testing.T) {
	dir := t.TempDir()
	w, err := trace.Create(dir, testManifest())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.WriteInterval(interval(i)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil { // nothing buffered: no empty row group
		t.Fatal(err)
	}
	if err := w.Close(base, trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	// Each Flush is a checkpoint: its part is closed, one row group.
	paths, err := trace.TablePaths(dir, trace.ProbesFile)
	if err != nil || len(paths) != 3 {
		t.Fatalf("%d parts after 3 flushes (%v), want 3", len(paths), err)
	}
	for _, p := range paths {
		if got := len(openParquet(t, p).RowGroups()); got != 1 {
			t.Errorf("%s: %d row groups, want 1", p, got)
		}
	}
}

func TestScanBatchesAreBounded(t *testing.T) {
	dir := t.TempDir()
	w, err := trace.Create(dir, testManifest())
	if err != nil {
		t.Fatal(err)
	}
	const rows = 2*trace.ScanBatchRows + 10 // one row group, three batches
	probes := make([]trace.ProbeRow, rows)
	for i := range probes {
		probes[i] = probeRow(base, 1, i)
	}
	if err := w.WriteInterval(trace.Interval{Probes: probes}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(base, trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total, batches int
	err = trace.Scan(run, trace.ProbesFile, func(b []trace.ProbeRow) error {
		if len(b) > trace.ScanBatchRows {
			t.Errorf("batch of %d rows, max %d", len(b), trace.ScanBatchRows)
		}
		if b[0].RunCount != uint64(total)*1000 {
			t.Errorf("batch %d starts at run_count %d, want %d", batches, b[0].RunCount, total*1000)
		}
		total += len(b)
		batches++
		return nil
	})
	if err != nil || total != rows || batches != 3 {
		t.Errorf("Scan: %d rows in %d batches, err %v; want %d rows in 3", total, batches, err, rows)
	}

	stop := errors.New("stop")
	if err := trace.Scan(run, trace.ProbesFile, func([]trace.ProbeRow) error { return stop }); err != stop {
		t.Errorf("Scan returned %v, want the callback's error as is", err)
	}
}

// TestScanProjection reads with a struct that lacks most columns and has one
// the file lacks, as a reader of another schema minor version would.
func TestScanProjection(t *testing.T) {
	dir, ivs := recordRun(t, 3)
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	type narrowFlow struct {
		Time    time.Time `parquet:"time,timestamp(microsecond:utc)"`
		DstPort uint16    `parquet:"dst_port"`
		NewCol  *uint64   `parquet:"not_in_v1,optional"`
	}
	var got []narrowFlow
	err = trace.Scan(run, trace.FlowsFile, func(b []narrowFlow) error {
		got = append(got, b...)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if len(got) != 6 {
		t.Fatalf("%d rows, want 6", len(got))
	}
	for i, r := range got {
		w := ivs[i/2].Flows[i%2]
		if r.DstPort != w.DstPort || !r.Time.Equal(us(w.Time)) || r.NewCol != nil {
			t.Errorf("row %d: %+v, want dst_port %d time %v new nil", i, r, w.DstPort, us(w.Time))
		}
	}
}

// TestScanIncompatibleType checks that reading into a Go type the file
// cannot convert to is an error naming the file, not a panic: a string
// column into int64 (parquet-go returns an error), and a non-struct row
// type (parquet-go panics; Scan recovers).
func TestScanIncompatibleType(t *testing.T) {
	dir, _ := recordRun(t, 1)
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	type wrong struct {
		SrcAddr int64 `parquet:"src_addr"`
	}
	errs := []error{
		trace.Scan(run, trace.FlowsFile, func([]wrong) error { return nil }),
		trace.Scan(run, trace.FlowsFile, func([]int) error { return nil }),
	}
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "flows/part-000000.parquet") {
			t.Errorf("case %d: %v, want an error naming flows/part-000000.parquet", i, err)
		}
	}
}

// Traces written before the cpus table's probe columns became optional
// (null when their probe did not run) had them required: both readers
// return their values as set pointers.
func TestReadsRequiredCPUColumns(t *testing.T) {
	dir, _ := recordRun(t, 1)
	type oldCPURow struct {
		Time           time.Time `parquet:"time,timestamp(microsecond:utc)"`
		IntervalNs     int64     `parquet:"interval_ns"`
		CPU            int32     `parquet:"cpu"`
		NetRxSoftirqNs uint64    `parquet:"net_rx_softirq_ns"`
		RxPackets      uint64    `parquet:"rx_packets"`
		NapiPolls      uint64    `parquet:"napi_polls"`
	}
	f, err := os.Create(filepath.Join(dir, trace.CPUsFile))
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[oldCPURow](f)
	if _, err := w.Write([]oldCPURow{{Time: base.UTC().Truncate(time.Microsecond), IntervalNs: 1e9, CPU: 3,
		NetRxSoftirqNs: 7_000, RxPackets: 0, NapiPolls: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if scanBoth[trace.CPURow](t, run, trace.CPUsFile) != 1 {
		t.Fatal("want 1 row")
	}
	rows, err := run.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.CPU != 3 || r.NetRxSoftirqNs == nil || *r.NetRxSoftirqNs != 7_000 || r.RxPackets == nil || *r.RxPackets != 0 ||
		r.NapiPolls == nil || *r.NapiPolls != 9 || r.NetTxSoftirqNs != nil {
		t.Errorf("row %+v", r)
	}
}
