package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// Bad usage of ifaces, path and watch exits 2 with one clear line.
func TestNewCommandsUsage(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ifaces", "extra"}, "takes no arguments"},
		{[]string{"ifaces", "--iface", "nosuch0"}, `"nosuch0" not found; interfaces here: lo (loopback)`},
		{[]string{"ifaces", "--link-speed", "fast"}, "--link-speed"},
		{[]string{"path"}, "exactly one PEER"},
		{[]string{"path", "not-an-ip"}, "literal IP"},
		{[]string{"path", "--port", "0", "127.0.0.1"}, "--port"},
		{[]string{"watch", "--interval", "1ms"}, "--interval"},
		{[]string{"watch", "--iface", "nosuch0", "--no-bpf", "--duration", "1s"}, `"nosuch0" not found`},
	} {
		code, _, stderr := runBin(t, bin, nil, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d stderr %q, want exit %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// Inside a test-bed namespace with a macvlan over the veth end: ifaces
// reports the pair and counts the veth end once; path to the other end of
// the veth (nothing listening) gets RTT samples from the RSTs and no
// hairpin verdict; watch records a trace.
func TestCommandsInTestBed(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	bin := buildBinary(t)
	b := bed.B()
	if _, err := b.AddMacvlan(context.Background(), "mv0"); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := b.Exec(context.Background(), bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("netprof %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	var got struct {
		Interfaces []struct {
			Name     string `json:"name"`
			Driver   string `json:"driver"`
			Counted  bool   `json:"counted"`
			Mirror   bool   `json:"mirror"`
			MirrorOf string `json:"mirror_of"`
			Speed    *int64 `json:"rated_speed_mbps"`
		} `json:"interfaces"`
		Groups []struct {
			Shape   string   `json:"shape"`
			Members []string `json:"members"`
			Counted []string `json:"counted"`
		} `json:"groups"`
		WouldCount []string `json:"would_count"`
	}
	out := run("ifaces", "--json", "--iface", "mv0")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("ifaces --json: %v\n%s", err, out)
	}
	if len(got.WouldCount) != 1 || got.WouldCount[0] != b.Link {
		t.Errorf("would count %v, want [%s]", got.WouldCount, b.Link)
	}
	for _, i := range got.Interfaces {
		if i.Name == "mv0" && (!i.Mirror || i.MirrorOf != b.Link || i.Counted || i.Driver != "macvlan") {
			t.Errorf("mv0: %+v", i)
		}
		if i.Speed != nil {
			t.Errorf("%s: rated speed %d invented for a virtual device", i.Name, *i.Speed)
		}
	}
	text := run("ifaces", "--iface", "mv0")
	t.Logf("netprof ifaces:\n%s", text)
	if !strings.Contains(text, "stacked ["+b.Link+", mv0]") || !strings.Contains(text, "netprof would count: "+b.Link) {
		t.Errorf("ifaces text lacks the group or the counted interface")
	}
	text = run("path", "--port", "9", "--count", "5", bed.A().Addr.String())
	t.Logf("netprof path:\n%s", text)
	if !strings.Contains(text, "5 refused") || !strings.Contains(text, "on-link dev mv0") || strings.Contains(text, "hairpin") {
		t.Errorf("path output unexpected")
	}
	dir := t.TempDir() + "/run"
	text = run("watch", "--iface", "mv0", "--duration", "1500ms", "--interval", "500ms", "--out", dir)
	t.Logf("netprof watch:\n%s", text)
	if !strings.Contains(text, "counting (stacked)") || strings.Count(text, b.Link+" rx ") < 3 {
		t.Errorf("watch output lacks the counted interface's lines")
	}
	if _, err := exec.Command("test", "-s", dir+"/ifaces/part-000000.parquet").CombinedOutput(); err != nil {
		t.Errorf("no ifaces/part-000000.parquet in %s", dir)
	}
	checkWatchJSONStream(t, b, bin)
}

// watch --json-stream prints, instead of the view, a line per interval
// with the trace's rows (its ifaces rows' rx_bytes add up to the trace's)
// and an end line counting them.
func checkWatchJSONStream(t *testing.T, b *testbed.Host, bin string) {
	t.Helper()
	dir := t.TempDir() + "/stream"
	cmd := b.Exec(context.Background(), bin, "watch", "--iface", "mv0", "--no-bpf", "--json-stream", "--duration", "1500ms",
		"--interval", "500ms", "--out", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("watch --json-stream: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var streamed float64
	for _, l := range lines[:len(lines)-1] {
		var e struct {
			Event string `json:"event"`
			Data  struct {
				Ifaces []map[string]any `json:"ifaces"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Event != "interval" {
			t.Fatalf("line %q: %v", l, err)
		}
		for _, r := range e.Data.Ifaces {
			streamed += r["rx_bytes"].(float64)
		}
	}
	var end struct {
		Event string `json:"event"`
		Data  struct {
			Intervals int    `json:"intervals"`
			Status    string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.Event != "end" ||
		end.Data.Intervals != len(lines)-1 || end.Data.Status != "ok" {
		t.Errorf("end line %q (%v): want %d intervals, status ok", lines[len(lines)-1], err, len(lines)-1)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	var recorded float64
	for _, r := range rows {
		recorded += float64(r.RxBytes)
	}
	if len(lines) < 4 || streamed != recorded {
		t.Errorf("%d lines; streamed ifaces rx_bytes %.0f, trace %.0f", len(lines), streamed, recorded)
	}
}
