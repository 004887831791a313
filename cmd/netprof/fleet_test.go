package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/trace/upload"
	"github.com/netprof/netprof/traffic/blob"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// fleetScenario is one run of the test fleet and the bytes its interface
// rows carry (the ground truth: summed from the rows the scenario writes,
// not through the analysis).
type fleetScenario struct {
	name           string
	s              analysistest.Scenario
	sent, received uint64
	// noEgress is why the run's sent bytes are not egress ("" priced).
	noEgress string
}

// writeFleet writes three runs in upload's host=/date=/run= layout and
// one broken run directory under root: b went to a peer over a NIC (its
// sent bytes are egress), a ran on the local test bed and c pushed to a
// blob emulator on this host (neither left the host).
func writeFleet(t *testing.T, root string) []fleetScenario {
	t.Helper()
	day := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	runs := []fleetScenario{
		{name: "host=synthetic/date=2026-03-01/run=b", s: analysistest.Scenario{Start: day.Add(time.Hour), Intervals: 8,
			RateBps: func(int) float64 { return 20e9 }, SenderIface: "eth0", SenderDriver: "mlx5_core",
			Config: map[string]any{"peer": "10.0.0.5:5000"}}},
		{name: "host=synthetic/date=2026-03-01/run=a", s: analysistest.Scenario{Start: day, Intervals: 6,
			RateBps: func(int) float64 { return 5e9 }}, noEgress: analysis.NoEgressTestBed},
		{name: "host=synthetic/date=2026-03-02/run=c", s: analysistest.Scenario{Start: day.Add(24 * time.Hour), Intervals: 10,
			SenderIface: "eth0", SenderDriver: "hv_netvsc", Config: map[string]any{"command": "blob push",
				"targets": []map[string]any{{"stream": 0, "host": "127.0.0.1:10000"}}}}, noEgress: analysis.NoEgressBlob},
	}
	for i := range runs {
		r := &runs[i]
		if err := r.s.Write(filepath.Join(root, filepath.FromSlash(r.name))); err != nil {
			t.Fatal(err)
		}
		ifaces, _, _, _ := r.s.Tables()
		for _, row := range ifaces {
			switch row.Netns {
			case analysistest.SenderNetns:
				r.sent += row.TxBytes
			case analysistest.RecvNetns:
				r.received += row.RxBytes
			}
		}
		if r.sent == 0 || r.received == 0 {
			t.Fatalf("%s: scenario carries no bytes", r.name)
		}
	}
	broken := filepath.Join(root, "broken")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, trace.ManifestFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	return runs
}

// checkFleet compares the --json fleet with the scenarios: one row per
// run in start order (the broken one, without start, first), bytes equal
// to the rows' sums, cost = sent / 10^9 × price for the run whose traffic
// left the host and n/a with the reason for the others, the totals adding
// up.
func checkFleet(t *testing.T, out string, runs []fleetScenario, price float64, nameOf func(string) string) {
	t.Helper()
	var f analysis.FleetJSON
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("fleet JSON: %v\n%s", err, out)
	}
	if len(f.Runs) != 4 || f.Totals.Runs != 4 || f.Totals.Failed != 1 || f.Runs[0].Err == "" {
		t.Fatalf("rows %d, totals %+v, first row error %q; want 4 rows, the broken one first", len(f.Runs), f.Totals, f.Runs[0].Err)
	}
	order := []int{1, 0, 2} // by start
	var sent, received, egress uint64
	for i, k := range order {
		got, want := f.Runs[i+1], runs[k]
		sent, received = sent+want.sent, received+want.received
		if got.Run != nameOf(want.name) || got.Err != "" || !got.Start.Equal(want.s.Start) {
			t.Errorf("row %d: run %q start %v err %q, want %q at %v", i+1, got.Run, got.Start, got.Err, nameOf(want.name), want.s.Start)
			continue
		}
		if got.SentBytes == nil || *got.SentBytes != want.sent || got.ReceivedBytes == nil || *got.ReceivedBytes != want.received {
			t.Errorf("%s: sent %v received %v, want %d and %d B", got.Run, got.SentBytes, got.ReceivedBytes, want.sent, want.received)
		}
		if !strings.Contains(got.SentCounter, "netlink") {
			t.Errorf("%s: sent counter %q, want the interface's netlink counter", got.Run, got.SentCounter)
		}
		if want.noEgress != "" {
			if got.EgressCost != nil || got.EgressNA != want.noEgress {
				t.Errorf("%s: egress cost %v (n/a %q), want n/a %q", got.Run, got.EgressCost, got.EgressNA, want.noEgress)
			}
		} else {
			egress += want.sent
			wantCost := float64(want.sent) / 1e9 * price
			if got.EgressCost == nil || math.Abs(*got.EgressCost-wantCost) > 1e-9 || got.EgressNA != "" {
				t.Errorf("%s: egress cost %v (n/a %q), want %.6f", got.Run, got.EgressCost, got.EgressNA, wantCost)
			}
		}
		rate := 10e9
		if want.s.RateBps != nil {
			rate = want.s.RateBps(0)
		}
		command := "bench"
		if c, ok := want.s.Config["command"].(string); ok {
			command = c
		}
		if got.SteadyBps == nil || math.Abs(*got.SteadyBps-rate) > 0.01*rate || got.Command != command || got.Streams != 4 ||
			got.BusiestCPU == nil || got.RTTFloorUs == nil || *got.RTTFloorUs != 40 {
			t.Errorf("%s: steady %v (want %.0f bit/s ±1%%), command %q streams %d, busiest %v, RTT floor %v (want 40 µs)",
				got.Run, got.SteadyBps, rate, got.Command, got.Streams, got.BusiestCPU, got.RTTFloorUs)
		}
	}
	if f.Totals.SentBytes != sent || f.Totals.ReceivedBytes != received || f.Totals.EgressCost == nil ||
		math.Abs(*f.Totals.EgressCost-float64(egress)/1e9*price) > 1e-9 || f.Totals.Currency != "USD" ||
		f.Totals.EgressBytes == nil || *f.Totals.EgressBytes != egress || *f.Totals.EgressRuns != 1 || *f.Totals.NotEgressRuns != 2 {
		t.Errorf("totals %+v, want sent %d received %d, egress %d B of 1 run (2 not priced) costing %.6f USD",
			f.Totals, sent, received, egress, float64(egress)/1e9*price)
	}
}

func TestAnalyzeFleet(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	runs := writeFleet(t, root)
	code, out, stderr := runBin(t, bin, nil, "analyze", "--fleet", "--json", "--egress-price", "0.05USD", root)
	if code != 0 {
		t.Fatalf("analyze --fleet: exit %d: %s", code, stderr)
	}
	checkFleet(t, out, runs, 0.05, func(n string) string { return n })

	code, out, stderr = runBin(t, bin, nil, "analyze", "--fleet", "--egress-price", "0.05 usd/GB", root)
	if code != 0 || !strings.Contains(out, "egress USD") || !strings.Contains(out, "4 runs (1 unreadable)") ||
		!strings.Contains(out, "host=synthetic/date=2026-03-01/run=a") || !strings.Contains(out, "n/a (local test bed: no egress)") ||
		!strings.Contains(out, "n/a (blob endpoint on this host: no egress)") {
		t.Errorf("text fleet: exit %d %s\n%s", code, stderr, out)
	}
	for _, bad := range [][]string{
		{"analyze", "--fleet", "--egress-price", "cheap", root},
		{"analyze", "--fleet", "--compare", root, root},
		{"analyze", "--egress-price", "1USD", root},
		{"analyze", "--fleet", filepath.Join(root, "nope")},
		{"analyze", "--fleet", t.TempDir()},
	} {
		if code, _, stderr := runBin(t, bin, nil, bad...); code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d (%s), want a usage error", bad, code, stderr)
		}
	}
}

// The same tree uploaded to a container reads the same from its URL.
func TestAnalyzeFleetFromContainer(t *testing.T) {
	az := blobtest.StartAzurite(t)
	bin := buildBinary(t)
	root := t.TempDir()
	runs := writeFleet(t, root)
	creds, err := blob.CredentialsFromEnv(blob.AuthSharedKey, az.Env())
	if err != nil {
		t.Fatal(err)
	}
	client, err := blob.NewClient(creds, blob.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	target, err := blob.ParseContainer(az.Endpoint + "/fleet")
	if err != nil {
		t.Fatal(err)
	}
	cc, err := client.ContainerClient(target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Create(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		// upload names runs host=/date=/run=<base>: the same tree.
		if _, err := upload.Upload(context.Background(), cc, "traces", filepath.Join(root, filepath.FromSlash(r.name))); err != nil {
			t.Fatal(err)
		}
	}
	url := az.Endpoint + "/fleet/traces"
	env := []string{"AZURE_STORAGE_ACCOUNT=" + az.Account, "AZURE_STORAGE_KEY=" + az.Key}
	code, out, stderr := runBlobCmd(t, bin, env, "analyze", "--fleet", "--json", "--egress-price", "0.05USD", url)
	if code != 0 {
		t.Fatalf("analyze --fleet URL: exit %d: %s", code, stderr)
	}
	// No broken run in the container: add the row the checker expects.
	var f analysis.FleetJSON
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	f.Runs = append([]analysis.FleetRow{{Run: "broken", Err: "not uploaded"}}, f.Runs...)
	f.Totals.Runs, f.Totals.Failed = f.Totals.Runs+1, f.Totals.Failed+1
	b, _ := json.Marshal(f)
	layout := map[string]string{}
	for _, r := range runs {
		layout[r.name] = url + "/" + upload.Layout("", r.s.Manifest(), filepath.Base(r.name))
	}
	checkFleet(t, string(b), runs, 0.05, func(n string) string { return layout[n] })
}

// BenchmarkAnalyzeFleet1000 times one fleet table of 1,000 runs (10
// intervals, 2 CPUs, 4 streams each, on local disk): what `analyze
// --fleet` takes for a store of that size, per op.
//
//	go test -run '^$' -bench AnalyzeFleet1000 -benchtime 3x ./cmd/netprof/
func BenchmarkAnalyzeFleet1000(b *testing.B) {
	root := b.TempDir()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		s := analysistest.Scenario{Start: start.Add(time.Duration(i) * time.Minute)}
		if err := s.Write(filepath.Join(root, "host=h", "run="+strings.Repeat("0", 4-len(itoa(i)))+itoa(i))); err != nil {
			b.Fatal(err)
		}
	}
	cfg := analyzeConfig{Runs: []string{root}, Fleet: true, JSON: true, Price: &analysis.EgressPrice{PerGB: 0.05, Currency: "USD"}}
	b.ResetTimer()
	for range b.N {
		var out strings.Builder
		if err := fleetAnalyze(context.Background(), &out, cfg, os.Getenv); err != nil {
			b.Fatal(err)
		}
		if n := strings.Count(out.String(), `"run": `); n != 1000 {
			b.Fatalf("%d rows, want 1000", n)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
