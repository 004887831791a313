package trace_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go/format"

	"github.com/netprof/netprof/trace"
)

// socketRows returns interval i's connection events: one connection opened
// in it and, from i >= 1, the one opened in interval i-1 closing.
func socketRows(t time.Time, ns int64, i int) []trace.SocketRow {
	open := t.Add(-300*time.Millisecond + 789*time.Nanosecond)
	rows := []trace.SocketRow{{
		Time: t, IntervalNs: ns, Netns: 4026531840 + uint64(i), Family: 4,
		SrcAddr: "198.18.0.1", SrcPort: uint16(40000 + i), DstAddr: "198.18.0.2", DstPort: 5001,
		Event: trace.SocketOpen, Active: true, Cookie: uint64(100 + i), OpenTime: open,
		TotalRetrans: 0, SegsOut: ptr(uint32(3)), SegsIn: ptr(uint32(2)),
	}}
	if i == 0 {
		return rows
	}
	prevOpen := open.Add(-time.Second)
	closed := t.Add(-100 * time.Millisecond)
	d := uint64(closed.Sub(prevOpen))
	rows = append(rows, trace.SocketRow{
		Time: t, IntervalNs: ns, Netns: 4026531840 + uint64(i-1), Family: 6,
		SrcAddr: "2001:2::1", SrcPort: uint16(40000 + i - 1), DstAddr: "2001:2::2", DstPort: 5001,
		Event: trace.SocketClose, Active: i%2 == 0, Cookie: uint64(100 + i - 1),
		OpenTime: prevOpen, CloseTime: &closed, DurationNs: &d,
		BytesAcked: 1<<40 + uint64(i), BytesReceived: 24, TotalRetrans: uint32(i * 7),
		SegsOut: opt(i%2 == 0, uint32(1e6)), SegsIn: opt(i%2 == 0, uint32(5e5)),
		CloseFromState: ptr("FIN_WAIT2"),
	})
	return rows
}

// recordSocketRun writes n intervals (every table, sockets included) with
// two intervals per row group.
func recordSocketRun(t *testing.T, n int) (string, []trace.Interval) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := trace.Create(dir, testManifest(), trace.WithFlushEvery(2), trace.WithPartSpan(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var ivs []trace.Interval
	for i := range n {
		iv := interval(i)
		iv.Sockets = socketRows(base.Add(time.Duration(i)*time.Second), int64(time.Second)+int64(i), i)
		ivs = append(ivs, iv)
		if err := w.WriteInterval(iv); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(base.Add(time.Duration(n)*time.Second), trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	return dir, ivs
}

func TestSocketsRoundTrip(t *testing.T) {
	dir, ivs := recordSocketRun(t, 5)
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantRows := want(ivs, func(iv trace.Interval) []trace.SocketRow { return iv.Sockets },
		func(r *trace.SocketRow) {
			r.Time, r.OpenTime = us(r.Time), us(r.OpenTime)
			if r.CloseTime != nil {
				r.CloseTime = ptr(us(*r.CloseTime))
			}
		})
	if len(wantRows) != 9 {
		t.Fatalf("fixture has %d rows, want 9", len(wantRows))
	}
	check(t, "sockets", run.Sockets, wantRows)
	got, _ := run.Sockets()
	for i, r := range got {
		if r.OpenTime.Location() != time.UTC || (r.CloseTime != nil && r.CloseTime.Location() != time.UTC) {
			t.Errorf("row %d: times not in UTC: open %v close %v", i, r.OpenTime, r.CloseTime)
		}
	}
	// The other tables are unchanged by the new one.
	check(t, "flows", run.Flows, want(ivs, func(iv trace.Interval) []trace.FlowRow { return iv.Flows },
		func(r *trace.FlowRow) { r.Time = us(r.Time) }))
}

func TestSocketsColumnTypes(t *testing.T) {
	dir, _ := recordSocketRun(t, 2)
	pf := openParquet(t, onePart(t, dir, trace.SocketsFile))
	for _, name := range []string{"time", "open_time", "close_time"} {
		el := element(t, pf, name)
		ts, ok := el.LogicalType.Value.(*format.TimestampType)
		if !ok {
			t.Fatalf("%s: logical type %v, want TIMESTAMP", name, &el.LogicalType)
		}
		if _, micros := ts.Unit.Value.(*format.MicroSeconds); !micros || !ts.IsAdjustedToUTC {
			t.Errorf("%s: %v, want TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)", name, ts)
		}
	}
	for _, c := range []struct {
		name string
		phys format.Type
		rep  format.FieldRepetitionType
	}{
		{"open_time", format.Int64, format.Required},
		{"close_time", format.Int64, format.Optional},
		{"duration_ns", format.Int64, format.Optional},
		{"bytes_acked", format.Int64, format.Required},
		{"active", format.Boolean, format.Required},
		{"event", format.ByteArray, format.Required},
		{"close_from_state", format.ByteArray, format.Optional},
		{"segs_out", format.Int32, format.Optional},
		{"src_port", format.Int32, format.Required},
	} {
		el := element(t, pf, c.name)
		if physical(el) != c.phys || repetition(el) != c.rep {
			t.Errorf("%s: %v %v, want %v %v", c.name, repetition(el), physical(el), c.rep, c.phys)
		}
	}
}

// TestArrowReadsSockets reads sockets.parquet with Apache Arrow: nullable
// close_time is null exactly on open rows, and values match.
func TestArrowReadsSockets(t *testing.T) {
	dir, ivs := recordSocketRun(t, 5)
	tbl := readArrowTable(t, onePart(t, dir, trace.SocketsFile))
	defer tbl.Release()
	var wantRows []trace.SocketRow
	for _, iv := range ivs {
		wantRows = append(wantRows, iv.Sockets...)
	}
	if tbl.NumRows() != int64(len(wantRows)) {
		t.Fatalf("arrow read %d rows, wrote %d", tbl.NumRows(), len(wantRows))
	}
	sch := tbl.Schema()
	wantType(t, sch, "close_time", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"})
	wantType(t, sch, "duration_ns", arrow.PrimitiveTypes.Uint64)
	wantType(t, sch, "active", arrow.FixedWidthTypes.Boolean)
	closeT := column[*array.Timestamp](t, tbl, "close_time")
	dur := column[*array.Uint64](t, tbl, "duration_ns")
	ev := column[*array.String](t, tbl, "event")
	for i, w := range wantRows {
		if ev.Value(i) != w.Event {
			t.Errorf("row %d event %q, want %q", i, ev.Value(i), w.Event)
		}
		if closeT.IsNull(i) != (w.CloseTime == nil) || dur.IsNull(i) != (w.DurationNs == nil) {
			t.Errorf("row %d: close_time null=%t duration null=%t, want %t", i, closeT.IsNull(i), dur.IsNull(i), w.CloseTime == nil)
			continue
		}
		if w.CloseTime != nil && (int64(closeT.Value(i)) != w.CloseTime.UnixMicro() || dur.Value(i) != *w.DurationNs) {
			t.Errorf("row %d: close_time %d µs duration %d, want %d µs %d", i, closeT.Value(i), dur.Value(i), w.CloseTime.UnixMicro(), *w.DurationNs)
		}
	}
}

func TestEmptyRunHasSocketsTable(t *testing.T) {
	dir, _ := recordRun(t, 2)
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Sockets()
	if err != nil || len(rows) != 0 {
		t.Errorf("Sockets of a run without connection events: %d rows, %v", len(rows), err)
	}
	if !reflect.DeepEqual(rows, []trace.SocketRow(nil)) {
		t.Errorf("rows %+v", rows)
	}
}
