package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// ratedJSON is what TestBenchRatedFlags reads from `analyze --json`.
type ratedJSON struct {
	RatedGbps   *float64 `json:"rated_link_speed_gbit_per_s"`
	RatedSource string   `json:"rated_link_speed_source"`
	Verdicts    []struct {
		Rule       string   `json:"rule"`
		Thresholds []string `json:"thresholds"`
	} `json:"verdicts"`
}

// hairpinThresholds returns the hairpin rule's thresholds.
func (r ratedJSON) hairpinThresholds() string {
	for _, v := range r.Verdicts {
		if v.Rule == analysis.RuleHairpin {
			return strings.Join(v.Thresholds, "; ")
		}
	}
	return ""
}

// `bench --link-speed --expect-rtt` records both in the manifest; bench's
// report and a later `analyze RUN_DIR` take them as defaults, and
// analyze's own flags override them. Bad values are usage errors.
func TestBenchRatedFlags(t *testing.T) {
	bin := buildBinary(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--link-speed", "fast"}, "--link-speed"},
		{[]string{"bench", "--link-speed", "0Gbit"}, "--link-speed"},
		{[]string{"bench", "--expect-rtt", "-1ms"}, "--expect-rtt"},
		// A rated speed needs a unit: a bare number (ethtool's 10000 is
		// Mb/s) was bit/s, and bench ran with "rated 0.00 Gbit/s".
		{[]string{"bench", "--link-speed", "10"}, "--link-speed: rate \"10\": a bare number has no unit: write e.g. 10Gbit"},
		{[]string{"sweep", "--link-speed", "10000"}, "ethtool's 10000 is Mb/s: 10000Mbit"},
		{[]string{"analyze", "--link-speed", "10000", "/nonexistent"}, "--link-speed: rate \"10000\": a bare number"},
		{[]string{"analyze", "--target", "80", "/nonexistent"}, "--target: rate \"80\": a bare number"},
		{[]string{"ifaces", "--link-speed", "10000"}, "--link-speed: rate \"10000\": a bare number"},
		{[]string{"ifaces", "--link-speed", "eth0=25"}, "--link-speed: rate \"25\": a bare number"},
		{[]string{"watch", "--link-speed", "100"}, "10000Mbit"},
	} {
		if code, _, stderr := runBin(t, bin, nil, c.args...); code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
	testbedtest.Require(t)
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runBin(t, bin, nil, "bench", "--no-bpf", "--quiet", "--details", "--duration", "1s", "--interval", "250ms",
		"--link-speed", "5Gbit", "--expect-rtt", "3ms", "--out", out)
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "5.00 Gbit/s (bench --link-speed, manifest config link_speed_bps)") {
		t.Errorf("bench's report does not use its --link-speed:\n%s", stdout)
	}
	for _, c := range []struct {
		args            []string
		gbps            float64
		source, hairpin string
	}{
		{nil, 5, "bench --link-speed, manifest config " + analysis.ConfigLinkSpeed, "3.00 ms expected"},
		{[]string{"--link-speed", "7Gbit", "--expect-rtt", "1ms"}, 7, "--link-speed", "1.00 ms expected"},
	} {
		code, stdout, stderr := runBin(t, bin, nil, append(append([]string{"analyze", "--json"}, c.args...), out)...)
		var got ratedJSON
		if code != 0 || json.Unmarshal([]byte(stdout), &got) != nil {
			t.Fatalf("analyze %v: exit %d: %s\n%s", c.args, code, stderr, stdout)
		}
		if got.RatedGbps == nil || *got.RatedGbps != c.gbps || got.RatedSource != c.source {
			t.Errorf("analyze %v: rated %v Gbit/s from %q, want %g from %q", c.args, got.RatedGbps, got.RatedSource, c.gbps, c.source)
		}
		if h := got.hairpinThresholds(); !strings.Contains(h, c.hairpin) {
			t.Errorf("analyze %v: hairpin thresholds %q, want %q", c.args, h, c.hairpin)
		}
	}
	// The text report of analyze ends with the summary bench printed (CPU
	// of both ends from /proc/stat and getrusage, phases): the same lines.
	_, text, _ := runBin(t, bin, nil, "analyze", "--full", out)
	const head = "cpu over the measured intervals"
	i, j := strings.Index(stdout, head), strings.Index(text, head)
	if i < 0 || j < 0 || stdout[i:] != text[j:] {
		t.Errorf("bench's summary (at %d) and analyze's (at %d) differ:\n%s\n---\n%s", i, j, stdout[max(i, 0):], text[max(j, 0):])
	}
}
