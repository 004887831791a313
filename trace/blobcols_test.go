package trace_test

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go/format"

	"github.com/netprof/netprof/trace"
)

// The blob columns of traffic.parquet round-trip, are optional (null on
// TCP generator rows, never 0) and have the documented names.
func TestTrafficBlobColumns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := trace.Create(dir, trace.Manifest{Start: start, IntervalNs: 1e9}, trace.WithPartSpan(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	u := func(v uint64) *uint64 { return &v }
	codes := "OperationTimedOut=1;ServerBusy=12"
	end := start.Add(time.Second)
	blobRow := trace.TrafficRow{Time: end, IntervalNs: 1e9, Stream: 0, Role: trace.RoleReceiver,
		RemoteAddr: "acct.blob.core.windows.net:443", AppBytes: 8 << 20,
		Requests: u(20), HTTP2xx: u(6), HTTP503: u(13), HTTP500: u(1), HTTPOtherErrors: u(0), Retries: u(14),
		RequestLatencyP50Us: u(850), RequestLatencyP99Us: u(4200), HTTP503ErrorCodes: &codes}
	tcpRow := trace.TrafficRow{Time: end, IntervalNs: 1e9, Stream: 1, Role: trace.RoleSender, AppBytes: 5}
	if err := w.WriteInterval(trace.Interval{Traffic: []trace.TrafficRow{blobRow, tcpRow}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(end, trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Traffic()
	if err != nil || len(rows) != 2 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if !reflect.DeepEqual(rows[0], blobRow) {
		t.Errorf("blob row\n got %+v\nwant %+v", rows[0], blobRow)
	}
	if r := rows[1]; r.Requests != nil || r.HTTP503 != nil || r.Retries != nil || r.RequestLatencyP50Us != nil || r.HTTP503ErrorCodes != nil {
		t.Errorf("TCP row has blob columns: %+v", r)
	}
	pf := openParquet(t, onePart(t, dir, trace.TrafficFile))
	for _, name := range []string{"requests", "http_2xx", "http_503", "http_500", "http_other_errors", "retries",
		"request_latency_p50_us", "request_latency_p99_us", "http_503_error_codes"} {
		if rep := repetition(element(t, pf, name)); rep != format.Optional {
			t.Errorf("%s: %v, want optional", name, rep)
		}
	}
}
