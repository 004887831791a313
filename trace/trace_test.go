package trace_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

func TestRoundTrip(t *testing.T) {
	// 5 intervals with 2 per row group: two full groups and a partial one.
	dir, ivs := recordRun(t, 5, trace.WithFlushEvery(2))
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	check(t, "ifaces", run.Ifaces, want(ivs, func(iv trace.Interval) []trace.IfaceRow { return iv.Ifaces },
		func(r *trace.IfaceRow) { r.Time = us(r.Time) }))
	check(t, "cpus", run.CPUs, want(ivs, func(iv trace.Interval) []trace.CPURow { return iv.CPUs },
		func(r *trace.CPURow) { r.Time = us(r.Time) }))
	check(t, "flows", run.Flows, want(ivs, func(iv trace.Interval) []trace.FlowRow { return iv.Flows },
		func(r *trace.FlowRow) { r.Time = us(r.Time) }))
	check(t, "traffic", run.Traffic, want(ivs, func(iv trace.Interval) []trace.TrafficRow { return iv.Traffic },
		func(r *trace.TrafficRow) { r.Time = us(r.Time) }))
	check(t, "probes", run.Probes, want(ivs, func(iv trace.Interval) []trace.ProbeRow { return iv.Probes },
		func(r *trace.ProbeRow) { r.Time = us(r.Time) }))
}

func check[T any](t *testing.T, name string, read func() ([]T, error), want []T) {
	t.Helper()
	got, err := read()
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: read %d rows, wrote %d", name, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%s row %d:\n got %+v\nwant %+v", name, i, got[i], want[i])
		}
	}
	if len(want) == 0 {
		t.Fatalf("%s: fixture wrote no rows", name)
	}
}

func TestTimesAreUTCMicros(t *testing.T) {
	dir, _ := recordRun(t, 1)
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Flows()
	if err != nil {
		t.Fatal(err)
	}
	got := rows[0].Time
	if got.Location() != time.UTC {
		t.Errorf("time location %v, want UTC", got.Location())
	}
	if got.Nanosecond() != 123456000 || got.Hour() != 4 {
		t.Errorf("time %v, want 2025-03-04 04:06:07.123456 UTC", got)
	}
}

func TestManifestLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b") // parents created
	w, err := trace.Create(dir, testManifest())
	if err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatalf("Open while recording: %v", err)
	}
	m := run.Manifest
	if m.SchemaVersion != trace.SchemaVersion || m.Status != trace.StatusRecording || !m.End.IsZero() {
		t.Errorf("while recording: version %d status %q end %v", m.SchemaVersion, m.Status, m.End)
	}
	if !m.Start.Equal(base) || m.Start.Location() != time.UTC {
		t.Errorf("start %v, want %v in UTC", m.Start, base)
	}
	ifs := []trace.Interface{{Name: "eth0", Index: 2, Driver: "virtio_net", MTU: 1500, RatedSpeedMbps: ptr(int64(10000))}}
	probes := []trace.Probe{{Name: "softirq", Hook: "irq/softirq_entry", Attached: true},
		{Name: "tcp_probe", Hook: "tcp/tcp_probe", Reason: "tracepoint missing"}}
	if err := w.SetInterfaces(ifs); err != nil {
		t.Fatal(err)
	}
	if err := w.UpdateManifest(func(m *trace.Manifest) {
		m.Probes = probes
		m.Status = "hijacked" // owned by the Writer: discarded
		m.SchemaVersion = 99
	}); err != nil {
		t.Fatal(err)
	}
	assertManifest(t, dir, func(m trace.Manifest) {
		if !reflect.DeepEqual(m.Interfaces, ifs) || !reflect.DeepEqual(m.Probes, probes) {
			t.Errorf("after update: interfaces %+v probes %+v", m.Interfaces, m.Probes)
		}
		if m.Status != trace.StatusRecording || m.SchemaVersion != trace.SchemaVersion {
			t.Errorf("after update: status %q version %d", m.Status, m.SchemaVersion)
		}
	})

	end := base.Add(time.Minute)
	if err := w.Close(end, trace.StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	assertManifest(t, dir, func(m trace.Manifest) {
		if !m.End.Equal(end) || m.End.Location() != time.UTC || m.Status != trace.StatusInterrupted {
			t.Errorf("after close: end %v status %q", m.End, m.Status)
		}
		want := testManifest()
		if !reflect.DeepEqual(m.Argv, want.Argv) || m.Host != want.Host || m.CPUCount != 4 ||
			m.CPUsOnline != "0-3" || m.CPUsPossible != "0-3,8-239" ||
			m.Config["interval"] != "1s" || m.Config["bpf"] != true {
			t.Errorf("after close: manifest fields lost: %+v", m)
		}
	})
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".manifest-*")); len(tmp) != 0 {
		t.Errorf("temporary manifests left behind: %v", tmp)
	}
}

func assertManifest(t *testing.T, dir string, fn func(trace.Manifest)) {
	t.Helper()
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	fn(run.Manifest)
}

func TestCloseIdempotent(t *testing.T) {
	w, err := trace.Create(t.TempDir(), testManifest())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(base, trace.StatusOK); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := w.Close(base.Add(time.Hour), "other"); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	assertManifest(t, w.Dir(), func(m trace.Manifest) {
		if m.Status != trace.StatusOK || !m.End.Equal(base) {
			t.Errorf("second Close changed the manifest: %q %v", m.Status, m.End)
		}
	})
	if err := w.WriteInterval(interval(0)); !errors.Is(err, trace.ErrClosed) {
		t.Errorf("WriteInterval after Close: %v, want ErrClosed", err)
	}
	if err := w.SetProbes(nil); !errors.Is(err, trace.ErrClosed) {
		t.Errorf("SetProbes after Close: %v, want ErrClosed", err)
	}
}

func TestEmptyRunHasAllTables(t *testing.T) {
	dir, _ := recordRun(t, 0)
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range trace.TableFiles { // an empty part each, with the schema
		onePart(t, dir, name)
	}
	rows, err := run.Traffic()
	if err != nil || len(rows) != 0 {
		t.Errorf("Traffic of an empty run: %d rows, %v", len(rows), err)
	}
}

func TestCreateRefusesExistingRun(t *testing.T) {
	dir, _ := recordRun(t, 1)
	before, _ := os.ReadFile(filepath.Join(dir, trace.ManifestFile))
	_, err := trace.Create(dir, testManifest())
	if !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create on an existing run: %v, want os.ErrExist", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, trace.ManifestFile))
	if string(before) != string(after) {
		t.Error("failed Create changed the existing manifest")
	}
	if _, err := trace.Open(dir); err != nil {
		t.Errorf("existing run unreadable after failed Create: %v", err)
	}
}

func TestCreateCleansUpOnFailure(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, trace.FlowsFile)
	if err := os.WriteFile(stale, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := trace.Create(dir, testManifest())
	if !errors.Is(err, os.ErrExist) || !strings.Contains(err.Error(), trace.FlowsFile) {
		t.Fatalf("Create over a stale table: %v, want os.ErrExist naming %s", err, trace.FlowsFile)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != trace.FlowsFile {
		t.Errorf("failed Create left files: %v", ents)
	}
	if b, _ := os.ReadFile(stale); string(b) != "stale" {
		t.Error("failed Create touched the stale file")
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := trace.Open(filepath.Join(t.TempDir(), "nope"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open(missing): %v, want os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), trace.ManifestFile) {
		t.Errorf("error does not name %s: %v", trace.ManifestFile, err)
	}
}

func TestOpenRejectsNewerSchema(t *testing.T) {
	for _, v := range []int{trace.SchemaVersion + 1, 0} {
		dir := t.TempDir()
		b, _ := json.Marshal(map[string]any{"schema_version": v})
		if err := os.WriteFile(filepath.Join(dir, trace.ManifestFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := trace.Open(dir); !errors.Is(err, trace.ErrSchemaVersion) {
			t.Errorf("schema_version %d: %v, want ErrSchemaVersion", v, err)
		}
	}
}

func TestMissingTable(t *testing.T) {
	dir, _ := recordRun(t, 2)
	if err := os.RemoveAll(filepath.Join(dir, trace.TableDir(trace.FlowsFile))); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Flows()
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), trace.FlowsFile) {
		t.Fatalf("Flows with no file: %v, want os.ErrNotExist naming %s", err, trace.FlowsFile)
	}
	if rows, err := run.CPUs(); err != nil || len(rows) != 4 {
		t.Errorf("other tables: %d rows, %v", len(rows), err)
	}
}

// A run whose writer was never closed (its recorder killed) keeps every
// interval up to its last checkpoint, and the manifest says how many; the
// part being written is hidden from readers.
func TestUnclosedRunKeepsCheckpoints(t *testing.T) {
	dir := t.TempDir()
	w, err := trace.Create(dir, testManifest(), trace.WithPartEvery(2))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(base, trace.StatusOK)
	var ivs []trace.Interval
	for i := range 5 {
		ivs = append(ivs, interval(i))
		if err := w.WriteInterval(ivs[i]); err != nil {
			t.Fatal(err)
		}
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if m.Status != trace.StatusRecording || m.Checkpoint == nil || m.Checkpoint.Intervals != 4 || m.Checkpoint.Parts != 2 {
		t.Fatalf("manifest status %q checkpoint %+v, want recording with 4 intervals in 2 parts", m.Status, m.Checkpoint)
	}
	flows, err := run.Flows()
	if err != nil {
		t.Fatal(err)
	}
	wantFlows := want(ivs[:4], func(iv trace.Interval) []trace.FlowRow { return iv.Flows },
		func(r *trace.FlowRow) { r.Time = us(r.Time) })
	if !reflect.DeepEqual(flows, wantFlows) {
		t.Errorf("flows of the checkpointed intervals: %d rows, want %d", len(flows), len(wantFlows))
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "flows"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !reflect.DeepEqual(names, []string{".part-000002.parquet.tmp", "part-000000.parquet", "part-000001.parquet"}) {
		t.Errorf("flows/ holds %v", names)
	}
	// Closing writes the open part and clears the checkpoint.
	if err := w.Close(base, trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	run, _ = trace.Open(dir)
	if flows, _ = run.Flows(); len(flows) != len(wantFlows)+len(ivs[4].Flows) || run.Manifest.Checkpoint != nil {
		t.Errorf("after Close: %d flow rows, checkpoint %+v", len(flows), run.Manifest.Checkpoint)
	}
}

// Closed parts are merged WithCompactEvery at a time into one file named
// for its range; the rows read the same, and a part a merge was cut short
// before removing (left beside its merged file) is not read twice.
func TestPartsMerge(t *testing.T) {
	dir, ivs := recordRun(t, 10, trace.WithPartEvery(1), trace.WithCompactEvery(3), trace.WithFlushEvery(1))
	paths, err := trace.TablePaths(dir, trace.FlowsFile)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	// Parts 0-8 merged by three; 9 was closed by Close (no merge then).
	wantNames := []string{"part-000000-000002.parquet", "part-000003-000005.parquet", "part-000006-000008.parquet", "part-000009.parquet"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("flows parts %v, want %v", names, wantNames)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "flows"))
	if len(ents) != len(wantNames) {
		t.Errorf("flows/ holds %d files, want %d (merged parts removed)", len(ents), len(wantNames))
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantFlows := want(ivs, func(iv trace.Interval) []trace.FlowRow { return iv.Flows },
		func(r *trace.FlowRow) { r.Time = us(r.Time) })
	flows, err := run.Flows()
	if err != nil || !reflect.DeepEqual(flows, wantFlows) {
		t.Fatalf("merged flows: %d rows (%v), want %d", len(flows), err, len(wantFlows))
	}
	// A leftover part 4 beside part-000003-000005 is skipped.
	src, _ := os.ReadFile(filepath.Join(dir, "flows", "part-000009.parquet"))
	if err := os.WriteFile(filepath.Join(dir, "flows", "part-000004.parquet"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if flows, err = run.Flows(); err != nil || len(flows) != len(wantFlows) {
		t.Errorf("with a leftover merged part: %d rows (%v), want %d", len(flows), err, len(wantFlows))
	}
}
