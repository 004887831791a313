package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// An interrupted command (Ctrl-C cancels the context) ends with
// "netprof: interrupted", exit 1, never the bare "context canceled".
func TestExitCodeInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b strings.Builder
	if code := exitCode(ctx, fmt.Errorf("connect: %w", context.Canceled), &b); code != exitFailed || b.String() != "netprof: interrupted\n" {
		t.Errorf("interrupted: exit %d, %q", code, b.String())
	}
	// Not interrupted: the error as it is.
	b.Reset()
	if code := exitCode(context.Background(), fmt.Errorf("x: %w", context.Canceled), &b); code != exitFailed || !strings.Contains(b.String(), "context canceled") {
		t.Errorf("not interrupted: exit %d, %q", code, b.String())
	}
	b.Reset()
	if code := exitCode(ctx, usageError{errors.New("bad flag")}, &b); code != exitUsage || b.String() != "netprof: bad flag\n" {
		t.Errorf("usage: exit %d, %q", code, b.String())
	}
	if code := exitCode(ctx, nil, &b); code != 0 {
		t.Errorf("nil: exit %d", code)
	}
}

// bench --peer where nothing listens fails before recording: exit 1, one
// line naming the refused connection and asking whether `netprof traffic
// serve` runs there, no trace (the run directory is never created).
func TestBenchPeerUnreachable(t *testing.T) {
	bin := buildBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runBin(t, bin, nil, "bench", "--no-bpf", "--quiet", "--duration", "1s", "--peer", addr, "--out", out)
	if code != exitFailed || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "is `netprof traffic serve` running there") {
		t.Errorf("exit %d, stdout %q, stderr %q: want exit %d and one line with the refusal and the serve hint", code, stdout, stderr, exitFailed)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory %s: %v, want none (no trace before the peer answers)", out, err)
	}
}

// Ctrl-C during bench: the report of what was recorded (status
// interrupted), exit 1, and no trailing "netprof: context canceled".
func TestBenchInterrupted(t *testing.T) {
	bin := buildBinary(t)
	testbedtest.Require(t)
	cmd := exec.Command(bin, "bench", "--no-bpf", "--duration", "20s", "--interval", "250ms", "--out", filepath.Join(t.TempDir(), "run"))
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailed {
		t.Fatalf("exit %v, want %d\n%s", err, exitFailed, e.String())
	}
	if !strings.Contains(o.String(), "status interrupted") || strings.Contains(e.String(), "context canceled") ||
		!strings.HasSuffix(e.String(), "netprof: interrupted\n") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", o.String(), e.String())
	}
}

// kill -9 during bench leaves its namespaces (nothing runs its clean-up);
// the next bench recognises them by the bed's marker (the killed PID) and
// removes them and the marker, saying so, while a namespace of the same
// naming pattern with no marker (a stranger's) stays.
func TestBenchRemovesKilledRunsBed(t *testing.T) {
	bin := buildBinary(t)
	testbedtest.Require(t)
	stranger := fmt.Sprintf("np%08x-a", uint32(time.Now().UnixNano()))
	if out, err := exec.Command("ip", "netns", "add", stranger).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", stranger, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", stranger).Run() })
	cmd := exec.Command(bin, "bench", "--no-bpf", "--duration", "20s", "--out", filepath.Join(t.TempDir(), "killed"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := fmt.Sprint(cmd.Process.Pid)
	var prefix string
	for deadline := time.Now().Add(10 * time.Second); prefix == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ents, _ := os.ReadDir(testbed.MarkerDir)
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(testbed.MarkerDir, e.Name())); err == nil && strings.TrimSpace(string(b)) == pid {
				prefix = e.Name()
			}
		}
	}
	if prefix == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("no bed marker of PID %s in %s", pid, testbed.MarkerDir)
	}
	time.Sleep(time.Second) // the bed is up and traffic runs
	_ = cmd.Process.Kill()  // our own child, by PID
	_ = cmd.Wait()
	left := []string{prefix + "-a", prefix + "-b"}
	t.Cleanup(func() {
		for _, n := range left {
			_ = exec.Command("ip", "netns", "del", n).Run()
		}
	})
	for _, n := range left {
		if !netnsExists(n) {
			t.Fatalf("namespace %s gone after kill -9: nothing to clean up, the test proves nothing", n)
		}
	}
	code, _, stderr := runBin(t, bin, nil, "bench", "--no-bpf", "--quiet", "--duration", "1s", "--out", filepath.Join(t.TempDir(), "next"))
	if code != 0 {
		t.Fatalf("next bench: exit %d: %s", code, stderr)
	}
	for _, n := range left {
		if netnsExists(n) {
			t.Errorf("namespace %s of the killed run still there after the next bench", n)
		}
	}
	if _, err := os.Stat(filepath.Join(testbed.MarkerDir, prefix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("marker of the killed run: %v, want it removed", err)
	}
	if !strings.Contains(stderr, "removed the test bed a killed netprof run left behind") || !strings.Contains(stderr, prefix+"-a") {
		t.Errorf("next bench did not say what it removed:\n%s", stderr)
	}
	if !netnsExists(stranger) {
		t.Errorf("namespace %s without a marker removed", stranger)
	}
}

func netnsExists(name string) bool {
	_, err := os.Stat(filepath.Join(testbed.NetnsDir, name))
	return err == nil
}

// A recorder killed with SIGKILL leaves a readable trace: every interval
// up to its last checkpoint, exactly as it streamed them (--json-stream is
// the ground truth: printed as each interval completed), at most the open
// part's span lost; analyze reads it and says the run was cut short.
func TestKilledWatchKeepsCheckpointedIntervals(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "killed")
	cmd := exec.Command(bin, "watch", "--iface", "lo", "--no-bpf", "--json-stream", "--interval", "500ms",
		"--duration", "20s", "--out", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type streamed struct {
		time    time.Time
		rxBytes uint64
	}
	lines := make(chan streamed, 100)
	go func() { // ends when the killed process's stdout closes
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e struct {
				Event string    `json:"event"`
				Time  time.Time `json:"time"`
				Data  struct {
					Ifaces []struct {
						RxBytes uint64 `json:"rx_bytes"`
					} `json:"ifaces"`
				} `json:"data"`
			}
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "interval" && len(e.Data.Ifaces) == 1 {
				lines <- streamed{e.Time, e.Data.Ifaces[0].RxBytes}
			}
		}
	}()
	var got []streamed
	for deadline := time.After(15 * time.Second); len(got) < 10; {
		select {
		case s, ok := <-lines:
			if !ok {
				t.Fatalf("watch ended after %d intervals", len(got))
			}
			got = append(got, s)
		case <-deadline:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("%d intervals streamed in 15 s, want 10", len(got))
		}
	}
	_ = cmd.Process.Kill() // our own child, by PID: SIGKILL, no clean-up
	_ = cmd.Wait()
	for s := range lines {
		got = append(got, s)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if m.Status != trace.StatusRecording || m.Checkpoint == nil {
		t.Fatalf("killed run: status %q, checkpoint %+v", m.Status, m.Checkpoint)
	}
	rows, err := run.Ifaces()
	if err != nil {
		t.Fatalf("reading the killed run: %v", err)
	}
	if int64(len(rows)) != m.Checkpoint.Intervals || len(rows) == 0 || len(rows) > len(got) {
		t.Fatalf("%d ifaces rows, checkpoint %d intervals, %d streamed", len(rows), m.Checkpoint.Intervals, len(got))
	}
	for i, r := range rows {
		if !r.Time.Equal(got[i].time.Truncate(time.Microsecond)) || r.RxBytes != got[i].rxBytes {
			t.Errorf("row %d: %v rx %d B, streamed %v rx %d B", i, r.Time, r.RxBytes, got[i].time, got[i].rxBytes)
		}
	}
	lost := got[len(got)-1].time.Sub(rows[len(rows)-1].Time)
	t.Logf("killed after %d intervals: %d kept (checkpoint %v), last %v lost", len(got), len(rows), m.Checkpoint.Time, lost)
	if lost > trace.DefaultPartSpan+time.Second {
		t.Errorf("lost the last %v, want at most the part span %v (+ an interval)", lost, trace.DefaultPartSpan)
	}
	code, out, stderr := runBin(t, bin, nil, "analyze", "--json", dir)
	if code != 0 || !strings.Contains(out, "run cut short") || !strings.Contains(out, fmt.Sprintf("the %d intervals closed by", len(rows))) {
		t.Errorf("analyze of the killed run: exit %d, %s\n%s", code, stderr, out)
	}
}
