package analysis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis/analysistest"
)

// The report header's config line shows what the run was asked — not
// only streams and block size — with units, whether the config is bench's
// in-memory map or read back from manifest.json (numbers as float64).
func TestConfigLine(t *testing.T) {
	mem := map[string]any{
		"command": "bench", "streams": 4, "block_size": 131072, "direction": "reverse",
		"duration_ns": int64(2 * time.Second), "warmup_ns": int64(time.Second), "cooldown_ns": int64(0),
		"interval_ns": int64(250 * time.Millisecond), "rtt_ns": int64(5 * time.Millisecond),
		"socket_options": map[string]any{"window_bytes": 1 << 20, "congestion": "cubic", "mss_bytes": 1400,
			"nodelay": false, "pacing_rate_bit_per_s": int64(1e9)},
		"probes": []string{"tcp", "netdev"}, "bpf_stats": false, "ipv6": true, ConfigExpectRTT: int64(2 * time.Millisecond),
		"no_bpf": false,
	}
	raw, err := json.Marshal(mem)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON map[string]any
	if err := json.Unmarshal(raw, &fromJSON); err != nil {
		t.Fatal(err)
	}
	want := "streams 4, block size 128 KiB, reverse (the far end sends), duration 2s, warm-up 1s, interval 250ms, " +
		"rtt 5ms (delay line), window 1.00 MiB, congestion cubic, mss 1400 B, Nagle on (--nodelay=false), " +
		"pacing 1.00 Gbit/s per stream, probes tcp,netdev, BPF stats off, IPv6, expect-rtt 2ms"
	for name, c := range map[string]map[string]any{"in memory": mem, "from JSON": fromJSON} {
		if got := configLine(c); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	if got := configLine(map[string]any{"streams": 4.0, "block_size": 131072.0, "socket_options": map[string]any{"window_bytes": 262144.0}}); got != "streams 4, block size 128 KiB, window 256 KiB" {
		t.Errorf("window: %s", got)
	}
	if got := configLine(map[string]any{"streams": 1.0, "no_bpf": true, "probes": []any{"tcp"}}); got != "streams 1, probes off (--no-bpf)" {
		t.Errorf("no-bpf: %s", got)
	}
	if got := configLine(nil); got != "-" {
		t.Errorf("empty config: %q", got)
	}
	// And in the report header.
	r := scen(t, analysistest.Scenario{RateBps: flat(5e9)}, Options{})
	r.Manifest.Config = fromJSON
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "config            "+want+"\n") {
		t.Errorf("header lacks the config line:\n%s", b.String()[:min(b.Len(), 800)])
	}
}

// Compare rows carry the window (socket buffer, or autotuning) and the
// delay line's RTT, so a sweep's --window auto and 1MiB runs are told
// apart by more than their path, in text and JSON.
func TestCompareWindowRTT(t *testing.T) {
	row := func(dir string, so map[string]any, rtt time.Duration) CompareRow {
		r := scen(t, analysistest.Scenario{Streams: 4, RateBps: flat(5e9)}, Options{})
		r.Dir = dir
		r.Manifest.Config["command"] = "bench"
		if so != nil {
			r.Manifest.Config["socket_options"] = so
		}
		if rtt > 0 {
			r.Manifest.Config["rtt_ns"] = float64(rtt)
		}
		return CompareRowOf(r)
	}
	c := Compare([]CompareRow{row("auto", nil, 0), row("w1m", map[string]any{"window_bytes": float64(1 << 20)}, 20*time.Millisecond)},
		Thresholds{}, Decimal)
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 4 || !strings.Contains(lines[1], "window") || !strings.Contains(lines[1], "rtt") {
		t.Fatalf("no window/rtt columns:\n%s", b.String())
	}
	if f := strings.Fields(lines[2]); len(f) < 6 || f[0] != "auto" || f[4] != "auto" || f[5] != "-" {
		t.Errorf("autotuned row %q", lines[2])
	}
	if !strings.Contains(lines[3], "1.00 MiB") || !strings.Contains(lines[3], "20ms") {
		t.Errorf("window row %q", lines[3])
	}
	j := c.JSON()
	if r := j.Runs[0]; r.WindowBytes != nil || !r.WindowAutotuned || r.RTTMs != nil {
		t.Errorf("JSON autotuned row %+v", r)
	}
	if r := j.Runs[1]; r.WindowBytes == nil || *r.WindowBytes != 1<<20 || r.WindowAutotuned || r.RTTMs == nil || *r.RTTMs != 20 {
		t.Errorf("JSON window row %+v", r)
	}
	// Without any RTT the column is left out.
	b.Reset()
	_ = Compare([]CompareRow{row("a", nil, 0)}, Thresholds{}, Decimal).WriteText(&b)
	if strings.Contains(strings.Split(b.String(), "\n")[1], "rtt") {
		t.Errorf("rtt column without any rtt:\n%s", b.String())
	}
}
