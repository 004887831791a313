package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
