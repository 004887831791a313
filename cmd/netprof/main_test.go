package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/trace"
)

// buildBinary compiles netprof into a directory anyone can read.
func buildBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "netprof-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "netprof")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runBin(t *testing.T, bin string, cred *syscall.Credential, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = os.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

// Bad usage and missing privilege exit 2 with one clear line, no stack trace.
func TestExitCodes(t *testing.T) {
	bin := buildBinary(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bench with an argument", []string{"bench", "extra"}, "takes no arguments"},
		{"unknown command", []string{"nosuchcmd"}, "unknown command"},
		{"zero streams", []string{"bench", "--streams", "0"}, "stream count"},
		{"bad block size", []string{"bench", "--block-size", "12 parsecs"}, "--block-size"},
		{"unknown flag", []string{"bench", "--no-such-flag"}, "unknown flag --no-such-flag (see netprof bench --help)"},
		{"unknown flag of a subcommand", []string{"blob", "pull", "--no-such-flag", "x"}, "unknown flag --no-such-flag (see netprof blob pull --help)"},
		{"duration without unit", []string{"path", "--expect-rtt", "10", "127.0.0.1"}, `--expect-rtt "10": a duration needs a unit, e.g. 150us`},
		{"not a duration", []string{"bench", "--duration", "soon"}, `--duration "soon": not a duration`},
		{"not a number", []string{"bench", "--streams", "many"}, `--streams "many": want a whole number`},
		{"flag without value", []string{"bench", "--streams"}, "--streams needs a value"},
		{"analyze without dir", []string{"analyze"}, "exactly one RUN_DIR"},
		{"analyze missing dir", []string{"analyze", "/nonexistent/run"}, "manifest.json"},
	}
	for _, c := range cases {
		code, _, stderr := runBin(t, bin, nil, c.args...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d (stderr %q)", c.name, code, exitUsage, stderr)
		}
		if !strings.Contains(stderr, c.want) || strings.Contains(stderr, "goroutine") {
			t.Errorf("%s: stderr %q, want a line mentioning %q", c.name, stderr, c.want)
		}
	}
}

// Not root: bench says what is missing and how to get it, exit 2.
func TestBenchNotRoot(t *testing.T) {
	kerneltest.RequireRoot(t) // needs root to drop to another user
	bin := buildBinary(t)
	code, stdout, stderr := runBin(t, bin, &syscall.Credential{Uid: 65534, Gid: 65534}, "bench", "--duration", "1s")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
	}
	if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 || !strings.Contains(stderr, "root") || !strings.Contains(stderr, "sudo") {
		t.Errorf("stderr %q: want one line naming root and sudo", stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
}

// analyze works from the files alone, without root.
func TestAnalyzeFromFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := trace.Create(dir, trace.Manifest{Start: start, IntervalNs: 1e9,
		Interfaces: []trace.Interface{{Name: "veth-b", Role: trace.RoleReceiver}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		end := start.Add(time.Duration(i) * time.Second)
		// 1.25 GB per 1 s interval = 10 Gbit/s payload.
		err := w.WriteInterval(trace.Interval{
			Traffic: []trace.TrafficRow{{Time: end, IntervalNs: 1e9, Role: trace.RoleReceiver, AppBytes: 1_250_000_000}},
			Ifaces:  []trace.IfaceRow{{Time: end, IntervalNs: 1e9, Ifname: "veth-b", RxBytes: 1_300_000_000}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(start.Add(5*time.Second), trace.StatusOK); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	code, stdout, stderr := runBin(t, bin, nil, "analyze", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`application \(receiver payload\)\s+10\.00\s+10\.00\s+10\.00`).MatchString(stdout) {
		t.Errorf("report lacks the 10.00 Gbit/s application row:\n%s", stdout)
	}
	code, stdout, _ = runBin(t, bin, nil, "analyze", "--json", dir)
	if code != 0 || !strings.Contains(stdout, `"whole_run_gbit_per_s": 10`) {
		t.Errorf("json report (exit %d):\n%s", code, stdout)
	}
}
