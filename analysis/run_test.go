package analysis

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

// writeFixture records f as a run directory through trace's writer, one
// WriteInterval per interval end, and returns the directory.
func writeFixture(t *testing.T, f fixture) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := trace.Create(dir, f.m)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for i := range 5 {
		end := at(float64(i + 1))
		var iv trace.Interval
		iv.Ifaces = rowsAt(f.ifaces, end, func(x trace.IfaceRow) int64 { return x.Time.UnixNano() })
		iv.CPUs = rowsAt(f.cpus, end, func(x trace.CPURow) int64 { return x.Time.UnixNano() })
		iv.Flows = rowsAt(f.flows, end, func(x trace.FlowRow) int64 { return x.Time.UnixNano() })
		iv.Traffic = rowsAt(f.traffic, end, func(x trace.TrafficRow) int64 { return x.Time.UnixNano() })
		if err := w.WriteInterval(iv); err != nil {
			t.Fatalf("WriteInterval: %v", err)
		}
	}
	if err := w.Close(f.m.End, trace.StatusOK); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return dir
}

func rowsAt[T any](rows []T, end time.Time, key func(T) int64) []T {
	var out []T
	for _, x := range rows {
		if key(x) == end.UnixNano() {
			out = append(out, x)
		}
	}
	return out
}

func TestFromRunRoundTrip(t *testing.T) {
	f := newFixture(true)
	dir := writeFixture(t, f)
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	got, err := FromRun(run)
	if err != nil {
		t.Fatalf("FromRun: %v", err)
	}
	want := f.build(t)
	if got.Dir != dir {
		t.Errorf("Dir = %q, want %q", got.Dir, dir)
	}
	for name, pair := range map[string][2]any{
		"Rx":                {got.Rx, want.Rx},
		"Tx":                {got.Tx, want.Tx},
		"CPUs":              {got.CPUs, want.CPUs},
		"Flows":             {got.Flows, want.Flows},
		"Peers":             {got.Peers, want.Peers},
		"Verdicts":          {got.Verdicts, want.Verdicts},
		"Retx":              {got.Retx, want.Retx},
		"RTT":               {got.RTT, want.RTT},
		"SenderRetransmits": {got.SenderRetransmits, want.SenderRetransmits},
		"FlowRetransmits":   {got.FlowRetransmits, want.FlowRetransmits},
		"Notes":             {got.Notes, want.Notes},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s from the run directory = %+v, in memory %+v", name, pair[0], pair[1])
		}
	}
	checkF(t, "App.SteadyBps", got.Primary.W.SteadyBps, 8.8e9)
}

func TestFromRunMissingTable(t *testing.T) {
	dir := writeFixture(t, newFixture(false))
	if err := os.RemoveAll(filepath.Join(dir, trace.TableDir(trace.CPUsFile))); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	r, err := FromRun(run)
	if err != nil {
		t.Fatalf("FromRun: %v", err)
	}
	if r.CPUs != nil || r.Primary == nil || !hasNote(r, "cpus.parquet missing") {
		t.Errorf("missing cpus.parquet: CPUs %v, Primary %v, notes %q", r.CPUs, r.Primary, r.Notes)
	}
}
