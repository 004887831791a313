package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// envRequireDuckDB makes a missing DuckDB (node + tools/duckdb's
// node_modules) fail the DuckDB test instead of skipping it (CI sets it).
const envRequireDuckDB = "NETPROF_REQUIRE_DUCKDB"

// duckDBQuery returns the command running tools/duckdb/query.mjs, or skips
// (fails under NETPROF_REQUIRE_DUCKDB=1) when node or the package is missing.
func duckDBQuery(t *testing.T) (node, script string) {
	t.Helper()
	script, _ = filepath.Abs("../../tools/duckdb/query.mjs")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@duckdb", "node-api"))
	}
	if err != nil {
		if os.Getenv(envRequireDuckDB) == "1" {
			t.Fatalf("DuckDB test cannot run (%v) but %s=1: npm ci --prefix tools/duckdb", err, envRequireDuckDB)
		}
		t.Skipf("no DuckDB for node (%v): npm ci --prefix tools/duckdb", err)
	}
	return node, script
}

// dropRoles rewrites a run's manifest without the interface roles named.
func dropRoles(t *testing.T, dir string, roles ...string) {
	t.Helper()
	p := filepath.Join(dir, trace.ManifestFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, i := range m["interfaces"].([]any) {
		iface := i.(map[string]any)
		for _, r := range roles {
			if iface["role"] == r {
				delete(iface, "role")
			}
		}
	}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The SQL of docs/fleet.md, run unchanged by DuckDB in the tree, gives
// every readable run's host, start, sent and received bytes and egress
// cost (or why there is none) as `analyze --fleet --json --egress-price
// 0.05USD` does: runs with roles, without (watch: the largest total), with
// only the receiver's (a two-machine run: no sent bytes), runs whose
// traffic stayed on the host (local test bed, loopback, a blob emulator on
// this host: no egress) and a broken manifest left out.
func TestFleetSQLMatchesDuckDB(t *testing.T) {
	node, script := duckDBQuery(t)
	bin := buildBinary(t)
	root := t.TempDir()
	writeFleet(t, root)
	day := time.Date(2026, 3, 3, 8, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		name string
		s    analysistest.Scenario
		drop []string
	}{
		{"watch-like", analysistest.Scenario{SenderIface: "eth0", SenderDriver: "mana", Config: map[string]any{"command": "watch"}},
			[]string{trace.RoleSender, trace.RoleReceiver}},
		{"watch-lo", analysistest.Scenario{SenderIface: "lo", SenderDriver: "loopback", Config: map[string]any{"command": "watch"}},
			[]string{trace.RoleSender, trace.RoleReceiver}},
		{"peer-sent", analysistest.Scenario{Config: map[string]any{"peer": "10.0.0.5"}}, []string{trace.RoleSender}},
	} {
		dir := filepath.Join(root, "host=other", r.name)
		r.s.Start, r.s.Intervals = day, 4
		if err := r.s.Write(dir); err != nil {
			t.Fatal(err)
		}
		dropRoles(t, dir, r.drop...)
		day = day.Add(time.Hour)
	}
	md, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```sql\n(.*?)```").FindSubmatch(md)
	if m == nil {
		t.Fatal("docs/fleet.md has no ```sql block")
	}
	sqlFile := filepath.Join(t.TempDir(), "fleet.sql")
	if err := os.WriteFile(sqlFile, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, sqlFile)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v: %s", err, err.(*exec.ExitError).Stderr)
	}
	var sqlRows []struct {
		Run, Host, Start, Status string
		SentBytes                *string  `json:"sent_bytes"`
		ReceivedBytes            *string  `json:"received_bytes"`
		EgressCost               *float64 `json:"egress_cost"`
		EgressNA                 *string  `json:"egress_cost_na"`
	}
	if err := json.Unmarshal(out, &sqlRows); err != nil {
		t.Fatalf("duckdb output: %v\n%s", err, out)
	}
	code, fout, stderr := runBin(t, bin, nil, "analyze", "--fleet", "--json", "--egress-price", "0.05USD", root)
	if code != 0 {
		t.Fatalf("analyze --fleet: exit %d: %s", code, stderr)
	}
	var f analysis.FleetJSON
	if err := json.Unmarshal([]byte(fout), &f); err != nil {
		t.Fatal(err)
	}
	var want []analysis.FleetRow
	for _, r := range f.Runs {
		if r.Err == "" {
			want = append(want, r)
		}
	}
	if len(sqlRows) != len(want) || len(want) != 6 {
		t.Fatalf("DuckDB gave %d runs, netprof %d readable (want 6):\n%s", len(sqlRows), len(want), out)
	}
	u64 := func(s *string) *uint64 {
		if s == nil {
			return nil
		}
		v, err := strconv.ParseUint(*s, 10, 64)
		if err != nil {
			t.Fatalf("bytes %q: %v", *s, err)
		}
		return &v
	}
	eq := func(a, b *uint64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	var sawNilSent bool
	reasons := map[string]bool{}
	for i, s := range sqlRows {
		w := want[i]
		start, err := time.Parse("2006-01-02 15:04:05-07", s.Start)
		if err != nil {
			t.Fatalf("start %q: %v", s.Start, err)
		}
		sent, recv := u64(s.SentBytes), u64(s.ReceivedBytes)
		costOK := (s.EgressCost == nil) == (w.EgressCost == nil) && (s.EgressCost == nil || math.Abs(*s.EgressCost-*w.EgressCost) < 1e-9)
		na := ""
		if s.EgressNA != nil {
			na = *s.EgressNA
		}
		if s.Run != w.Run || s.Host != w.Host || !start.Equal(w.Start) || !eq(sent, w.SentBytes) || !eq(recv, w.ReceivedBytes) || !costOK ||
			na != w.EgressNA {
			t.Errorf("run %d: DuckDB %+v (sent %v received %v cost %v n/a %q)\n netprof %s %s %v sent %v received %v cost %v n/a %q",
				i, s, sent, recv, s.EgressCost, na, w.Run, w.Host, w.Start, w.SentBytes, w.ReceivedBytes, w.EgressCost, w.EgressNA)
		}
		sawNilSent = sawNilSent || w.SentBytes == nil
		reasons[w.EgressNA] = true
	}
	if !sawNilSent {
		t.Error("no run without sent bytes: the peer-sent case was not exercised")
	}
	for _, r := range []string{"", analysis.NoEgressTestBed, analysis.NoEgressLoopback, analysis.NoEgressBlob} {
		if !reasons[r] {
			t.Errorf("no run with egress n/a %q: case not exercised", r)
		}
	}
}
