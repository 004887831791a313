package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// fullTable is a synthetic run whose 64-entry flow table refused flows:
// 5 intervals, each with a program row (ignored), a map:netdev row
// (entries at the read, 1 idle flow deleted, 90,992 B in 301 packets
// lost) and a map:tcp row (3 refused socket events in interval 2).
type fullTable struct {
	s        analysistest.Scenario
	m        trace.Manifest
	ivs      []trace.Interval
	entries  []uint64
	bpfBytes uint64 // ifaces bpf_rx_bytes + bpf_tx_bytes over the run
}

const lostPerInterval, lostPktsPerInterval = 90992, 301

func newFullTable() fullTable {
	f := fullTable{s: analysistest.Scenario{Intervals: 5, RateBps: flat(4e5)}, entries: []uint64{40, 64, 64, 63, 64}}
	f.m = f.s.Manifest()
	f.m.Maps = []trace.BPFMap{
		{Probe: "netdev", Name: "np_nd_flows", Type: "Hash", MaxEntries: 64},
		{Probe: "tcp", Name: "np_tcp_socks", Type: "Hash", MaxEntries: 4096},
	}
	for i := range f.s.Intervals {
		iv := f.s.IntervalRows(i)
		for _, x := range iv.Ifaces {
			f.bpfBytes += *x.BpfRxBytes + *x.BpfTxBytes
		}
		end, ns := iv.Ifaces[0].Time, iv.Ifaces[0].IntervalNs
		one, lost, pkts, refused := uint64(1), uint64(lostPerInterval), uint64(lostPktsPerInterval), uint64(0)
		if i == 2 {
			refused = 3
		}
		iv.Probes = []trace.ProbeRow{
			{Time: end, IntervalNs: ns, Program: "np_nd_rx", Hook: "net:netif_receive_skb", RunCount: 1000, MapUpdateFailures: 99},
			{Time: end, IntervalNs: ns, Program: "np_nd_flows", Hook: "map:netdev", MapUpdateFailures: 400,
				MapEntries: &f.entries[i], MapDeleted: &one, MapLostBytes: &lost, MapLostPackets: &pkts},
			{Time: end, IntervalNs: ns, Program: "np_tcp_socks", Hook: "map:tcp", MapUpdateFailures: refused,
				MapEntries: ptrU64(10), MapDeleted: ptrU64(0)},
		}
		f.ivs = append(f.ivs, iv)
	}
	return f
}

// tables returns the rows in memory, for BuildTables.
func (f fullTable) tables() Tables {
	var t Tables
	for _, iv := range f.ivs {
		t.Ifaces, t.CPUs = append(t.Ifaces, iv.Ifaces...), append(t.CPUs, iv.CPUs...)
		t.Flows, t.Traffic, t.Probes = append(t.Flows, iv.Flows...), append(t.Traffic, iv.Traffic...), append(t.Probes, iv.Probes...)
	}
	return t
}

// write records the run through trace's writer and returns its directory.
func (f fullTable) write(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := trace.Create(dir, f.m)
	if err != nil {
		t.Fatal(err)
	}
	for _, iv := range f.ivs {
		if err := w.WriteInterval(iv); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(f.m.End, trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The flow table note, FlowTable and the JSON flow_table give the sums of
// the map:netdev rows (program rows left out), the share of the BPF
// interface bytes, the size from the manifest's maps and a suggested
// size; the same from the run directory as from memory.
func TestFlowTableFull(t *testing.T) {
	f := newFullTable()
	mem, err := BuildTables(f.m, f.tables(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(f.write(t))
	if err != nil {
		t.Fatal(err)
	}
	disk, err := FromRun(run)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Report{"memory": mem, "run directory": disk} {
		t.Run(name, func(t *testing.T) { checkFullTable(t, f, r) })
	}
	if !reflect.DeepEqual(mem.FlowTable, disk.FlowTable) || !reflect.DeepEqual(mem.SocketTable, disk.SocketTable) {
		t.Errorf("from disk %+v %+v, from memory %+v %+v", disk.FlowTable, disk.SocketTable, mem.FlowTable, mem.SocketTable)
	}
}

func checkFullTable(t *testing.T, f fullTable, r *Report) {
	lost, pkts := uint64(5*lostPerInterval), uint64(5*lostPktsPerInterval)
	share := float64(lost) / float64(f.bpfBytes)
	want := uint32(1) // next power of two >= 64 / (1 - share), and >= 128
	for float64(want) < math.Max(128, math.Ceil(64/(1-share))) {
		want *= 2
	}
	ft := r.FlowTable
	if ft == nil || ft.Rows != 5 || ft.Entries != 64 || *ft.LostBytes != lost || *ft.LostPackets != pkts ||
		*ft.MaxEntriesUsed != 64 || *ft.DeletedIdle != 5 || *ft.CountedBytes != f.bpfBytes || ft.SuggestedEntries != want {
		t.Fatalf("flow table %+v, want 5 rows, 64 entries, lost %d B %d packets, 64 used, 5 deleted, %d B counted, suggest %d",
			ft, lost, pkts, f.bpfBytes, want)
	}
	t.Logf("lost %d of %d BPF bytes (%.1f%%): suggest %d", lost, f.bpfBytes, 100*share, want)
	note := fmt.Sprintf("flow table full: 454,960 B in 1,505 packets (%.0f%% of the BPF-counted bytes, rx+tx, of the run's interfaces) "+
		"were in flows that did not fit its 64 entries (most entries in use at a read: 64); per-flow figures (flows, peers, "+
		"per-flow RTT) miss them; rerun with --flow-entries ≥ %d", 100*share, want)
	sock := "TCP socket table of 4,096 entries full: 3 events (RTT samples, retransmits) of sockets it could not take " +
		"(most in use at a read: 10) are in no flows row: RTT and BPF retransmit figures miss them"
	text := reportText(t, r)
	for _, n := range []string{note, sock} {
		if !hasNote(r, n) || !strings.Contains(text, n) {
			t.Errorf("notes %q / text lack %q", r.Notes, n)
		}
	}
	var got struct {
		FlowTable   map[string]any `json:"flow_table"`
		SocketTable map[string]any `json:"tcp_socket_table"`
	}
	b, _ := json.Marshal(r.JSON())
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	wantJSON := map[string]any{"entries": 64.0, "max_entries_used": 64.0, "lost_bytes": float64(lost), "lost_packets": float64(pkts),
		"deleted_idle": 5.0, "suggested_entries": float64(want)}
	for k, v := range wantJSON {
		if got.FlowTable[k] != v {
			t.Errorf("flow_table.%s = %v, want %v", k, got.FlowTable[k], v)
		}
	}
	if p, _ := got.FlowTable["lost_pct_of_bpf_iface_bytes"].(float64); math.Abs(p-100*share) > 1e-9 {
		t.Errorf("flow_table.lost_pct_of_bpf_iface_bytes = %v, want %v", got.FlowTable["lost_pct_of_bpf_iface_bytes"], 100*share)
	}
	if got.SocketTable["refused_events"] != 3.0 || got.SocketTable["entries"] != 4096.0 || got.SocketTable["deleted_idle"] != 0.0 {
		t.Errorf("tcp_socket_table %v, want 3 refused events of 4096 entries, 0 deleted", got.SocketTable)
	}
}

// Map rows with nothing lost or refused: the tables are in the report and
// JSON (lost_bytes 0, no suggestion), and no note.
func TestFlowTableNoLoss(t *testing.T) {
	f := newFullTable()
	for i := range f.ivs {
		for j := range f.ivs[i].Probes {
			p := &f.ivs[i].Probes[j]
			p.MapUpdateFailures = 0
			if p.MapLostBytes != nil {
				p.MapLostBytes, p.MapLostPackets = ptrU64(0), ptrU64(0)
			}
		}
	}
	r, err := BuildTables(f.m, f.tables(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.FlowTable == nil || *r.FlowTable.LostBytes != 0 || r.FlowTable.SuggestedEntries != 0 || r.SocketTable == nil {
		t.Fatalf("flow table %+v, socket table %+v: want both, nothing lost", r.FlowTable, r.SocketTable)
	}
	j := r.JSON()
	if j.FlowTable == nil || *j.FlowTable.LostBytes != 0 || j.FlowTable.SuggestedEntries != nil || *j.FlowTable.LostPct != 0 {
		t.Errorf("JSON flow table %+v: want lost 0, 0%%, no suggestion", j.FlowTable)
	}
	if hasNote(r, "flow table") || hasNote(r, "socket table") {
		t.Errorf("notes %q: no table was full", r.Notes)
	}
}

// A trace from before probes.parquet (or a run without map rows):
// no tables, no note, null in JSON, no error.
func TestFlowTableNoProbesFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := (analysistest.Scenario{Intervals: 4}).Write(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, trace.TableDir(trace.ProbesFile))); err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := FromRun(run)
	if err != nil {
		t.Fatal(err)
	}
	if r.FlowTable != nil || r.SocketTable != nil || hasNote(r, "table") || hasNote(r, trace.ProbesFile) || r.Primary == nil {
		t.Errorf("flow table %+v, socket table %+v, notes %q: want none, and the rates", r.FlowTable, r.SocketTable, r.Notes)
	}
	b, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"flow_table":null`) || !strings.Contains(string(b), `"tcp_socket_table":null`) {
		t.Errorf("JSON lacks null flow_table / tcp_socket_table: %s", b)
	}
}

// groupDigits puts commas between groups of three digits.
func TestGroupDigits(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 454960: "454,960", 4194304: "4,194,304", 12345678901: "12,345,678,901"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}
