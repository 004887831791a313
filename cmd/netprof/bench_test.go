package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/control"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// Bad bench and sweep flags exit 2 with one line saying what is wrong.
func TestBenchSweepUsage(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--reverse", "--bidir"}, "--reverse or --bidir, not both"},
		{[]string{"bench", "--peer", "198.18.0.2", "--ports", "5001-5004"}, "data ports are the server's"},
		{[]string{"bench", "--port", "5001", "--ports", "5001-5004"}, "--port or --ports, not both"},
		{[]string{"bench", "--congestion", "nosuchcc"}, `unknown congestion control "nosuchcc": available: `},
		{[]string{"bench", "--block-size", "64K"}, "--block-size"},
		{[]string{"bench", "--window", "4Mb"}, "--window"},
		{[]string{"bench", "--pacing-rate", "fast"}, "--pacing-rate"},
		{[]string{"bench", "--mss", "10"}, "invalid mss 10"},
		{[]string{"bench", "--peer", "198.18.0.2", "--rtt", "10ms"}, "does not combine with a peer"},
		{[]string{"bench", "--warmup", "-1s"}, "invalid warmup"},
		{[]string{"sweep", "--streams", "1,x"}, "--streams"},
		{[]string{"sweep", "--window", "0,64K"}, "--window"},
		{[]string{"sweep", "extra"}, "takes no arguments"},
	} {
		code, _, stderr := runBin(t, bin, nil, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d stderr %q, want exit %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// The real binary in namespace A runs `bench --peer` against a server in
// B: the JSON summary has the report (rx application from the peer's
// rows) and both ends' CPU with numbers; the live line shows the peer.
// Then `sweep` over two stream counts prints one table.
func TestBenchPeerAndSweepCLI(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	bin := buildBinary(t)
	b := bed.B()
	ln, err := b.Listen("tcp", b.Addr.String()+":5000")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := control.NewServer(control.ServerConfig{Ports: []int{5001, 5002}, DataHost: b.Addr.String(), Listen: b.Listen})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-served
	}()
	out := filepath.Join(t.TempDir(), "run")
	cmd := bed.A().Exec(context.Background(), bin, "bench", "--peer", b.Addr.String(), "--no-bpf", "--streams", "2",
		"--duration", "1s", "--interval", "250ms", "--json", "--out", out)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench --peer: %v\n%s", err, stderr.String())
	}
	var got struct {
		Report struct {
			Throughput struct {
				Rx struct {
					Application struct {
						TotalBytes uint64  `json:"total_bytes"`
						Steady     float64 `json:"steady_state_gbit_per_s"`
					} `json:"application"`
				} `json:"rx"`
			} `json:"throughput"`
		} `json:"report"`
		Bench struct {
			Peer struct {
				Received uint64 `json:"received_app_bytes"`
				OK       bool   `json:"result_ok"`
			} `json:"peer"`
			CPU []map[string]any `json:"cpu"`
		} `json:"bench"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout.String())
	}
	rx := got.Report.Throughput.Rx.Application
	if rx.TotalBytes == 0 || rx.TotalBytes != got.Bench.Peer.Received || !got.Bench.Peer.OK || rx.Steady <= 0 {
		t.Errorf("rx application %+v, peer %+v", rx, got.Bench.Peer)
	}
	if len(got.Bench.CPU) != 2 || got.Bench.CPU[1]["end"] != "peer" {
		t.Errorf("cpu %v", got.Bench.CPU)
	}
	for _, f := range got.Bench.CPU {
		if _, ok := f["process_cpu_s_per_gb"].(float64); !ok {
			t.Errorf("cpu figures %v: process_cpu_s_per_gb is not a number", f)
		}
	}
	if !strings.Contains(stderr.String(), "Gbit/s") || !strings.Contains(stderr.String(), "peer: received") {
		t.Errorf("no live line on stderr:\n%s", stderr.String())
	}
	testSweepCLI(t, bin)
}

func testSweepCLI(t *testing.T, bin string) {
	out := filepath.Join(t.TempDir(), "sweep")
	cmd := exec.Command(bin, "sweep", "--no-bpf", "--quiet", "--streams", "1,2", "--duration", "500ms", "--interval", "250ms", "--out", out)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, b)
	}
	t.Logf("sweep took %v:\n%s", time.Since(start).Round(time.Millisecond), b)
	for _, want := range []string{"streams1-block128KiB  1", "streams2-block128KiB  2", "steady state", "2/2 streams2-block128KiB: ok"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("sweep output lacks %q", want)
		}
	}
}

// bench --json-stream: one JSON line per recorded interval, whose rows are
// the trace's rows under the trace's names (the traffic rows' app_bytes
// add up to the trace's, per stream and role), then the end event with
// the --json report; --json with it is a usage error.
func TestBenchJSONStream(t *testing.T) {
	bin := buildBinary(t)
	testbedtest.Require(t)
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runBin(t, bin, nil, "bench", "--json-stream", "--quiet", "--streams", "2", "--duration", "2s",
		"--interval", "500ms", "--out", out)
	if code != 0 {
		t.Fatalf("bench --json-stream: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	type event struct {
		Event      string          `json:"event"`
		Time       string          `json:"time"`
		IntervalNs int64           `json:"interval_ns"`
		Data       json.RawMessage `json:"data"`
	}
	streamed := map[string]float64{} // role/local_addr/remote_addr -> app_bytes
	intervals := 0
	for i, l := range lines {
		var e event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if i == len(lines)-1 {
			var end struct {
				Report struct {
					Verdicts []any `json:"verdicts"`
				} `json:"report"`
			}
			if e.Event != "end" || json.Unmarshal(e.Data, &end) != nil || len(end.Report.Verdicts) == 0 {
				t.Errorf("last line %.200s: want the end event with the report", l)
			}
			break
		}
		if e.Event != "interval" || e.IntervalNs <= 0 {
			t.Fatalf("line %d: %.200s", i, l)
		}
		intervals++
		var rows struct {
			Traffic []map[string]any `json:"traffic"`
		}
		if err := json.Unmarshal(e.Data, &rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows.Traffic {
			streamed[fmt.Sprint(r["role"], "/", r["local_addr"], "/", r["remote_addr"])] += r["app_bytes"].(float64)
		}
	}
	run, err := trace.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	want, times := map[string]float64{}, map[time.Time]bool{}
	for _, r := range tr {
		want[r.Role+"/"+r.LocalAddr+"/"+r.RemoteAddr] += float64(r.AppBytes)
		times[r.Time] = true
	}
	if intervals != len(times) || len(want) != 4 || !maps.Equal(streamed, want) {
		t.Errorf("%d interval lines, the trace has %d intervals; streamed app bytes %v, trace %v", intervals, len(times), streamed, want)
	}
	if code, _, stderr := runBin(t, bin, nil, "bench", "--json-stream", "--json"); code != exitUsage || !strings.Contains(stderr, "exclude each other") {
		t.Errorf("--json with --json-stream: exit %d: %s", code, stderr)
	}
}
