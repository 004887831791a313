package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
)

// analyze's flags: --html, --units, --link-speed, --target, --compare and
// their usage errors (exit 2).
func TestAnalyzeFlags(t *testing.T) {
	dir := t.TempDir()
	runA, runB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := (analysistest.Scenario{Streams: 4, RetxFraction: 0.001}).Write(runA); err != nil {
		t.Fatal(err)
	}
	if err := (analysistest.Scenario{Streams: 8, RetxFraction: 0.004}).Write(runB); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	html := filepath.Join(dir, "r.html")
	ok := []struct {
		args []string
		want []string
	}{
		{[]string{"analyze", "--full", "--html", html, "--link-speed", "100Gbit", "--target", "80Gbit", runA},
			[]string{"rated link speed  100.00 Gbit/s (--link-speed)", "80.00 Gbit/s (--target)", "verdicts"}},
		{[]string{"analyze", "--full", "--units", "binary", runA}, []string{"Gibit/s = 2^30 bit/s", "GiB/s (2^30 byte/s)"}},
		{[]string{"analyze", "--units", "binary", runA}, []string{"throughput, Gibit/s = 2^30 bit/s", "ceiling: ", "hot core     cpu0"}},
		{[]string{"analyze", "--compare", runA, runB}, []string{"netprof compare (2 runs", "rate-limiter signature",
			"streams 4 -> 8 did not move throughput"}},
		{[]string{"analyze", "--compare", "--json", runA, runB}, []string{`"flags": [`, `"streams": 8`}},
	}
	for _, c := range ok {
		code, stdout, stderr := runBin(t, bin, nil, c.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, w, stdout)
			}
		}
		if strings.Contains(stdout, "\x1b[") {
			t.Errorf("%v: colour on a pipe", c.args)
		}
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "echarts.init") {
		t.Errorf("--html wrote no report: %v", err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "--compare", runA}, "at least two"},
		{[]string{"analyze", "--link-speed", "fast", runA}, "--link-speed"},
		{[]string{"analyze", "--units", "furlongs", runA}, "--units"},
		{[]string{"analyze", "--compare", "--html", html, runA, runB}, "--html"},
		{[]string{"analyze", runA, runB}, "exactly one RUN_DIR"},
	}
	for _, c := range bad {
		code, _, stderr := runBin(t, bin, nil, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}
