package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// bootAllowance is added to a test binary's -test.timeout for the boot and
// initramfs when -timeout is not given.
const bootAllowance = 3 * time.Minute

// runProgram runs one host program in the VM and returns its exit status.
func runProgram(ctx context.Context, log *slog.Logger, c config, stdout io.Writer) int {
	prog, err := lookHostProgram(c.args[0])
	if err != nil {
		log.Error("vmtest", "err", err)
		return 2
	}
	wd, err := os.Getwd()
	if err != nil {
		log.Error("vmtest", "err", err)
		return 1
	}
	if d, ok := testTimeoutArg(c.args[1:]); ok && !c.timeoutSet && d > 0 {
		c.Timeout = d + bootAllowance
	}
	job := newHostJob(0, filepath.Base(prog), prog, c.args[1:], wd)
	r, err := boot(ctx, log, c.options, []hostJob{job}, stdout, nil)
	logRun(log, c, r)
	if err != nil {
		log.Error("vmtest: the VM failed", "kernel", c.Kernel, "err", err)
		return 1
	}
	if !r.Jobs[0].Finished {
		log.Error("vmtest: the program's exit status never came back", "kernel", c.Kernel)
		return 1
	}
	return r.Jobs[0].Code
}

// lookHostProgram returns the absolute path of the program to copy in: as
// given when it contains a slash, else found in PATH.
func lookHostProgram(p string) (string, error) {
	if !strings.Contains(p, "/") {
		found, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("program %s: %w", p, err)
		}
		p = found
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("program %s: %w", p, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("program: %w", err)
	}
	return abs, nil
}

// testTimeoutArg returns the value of a -test.timeout flag in args (go
// test passes one to the test binary).
func testTimeoutArg(args []string) (time.Duration, bool) {
	for i, a := range args {
		var v string
		switch {
		case strings.HasPrefix(a, "-test.timeout="):
			v = strings.TrimPrefix(a, "-test.timeout=")
		case a == "-test.timeout" && i+1 < len(args):
			v = args[i+1]
		default:
			continue
		}
		d, err := time.ParseDuration(v)
		return d, err == nil
	}
	return 0, false
}

// logRun says what the guest was (kernel, CPUs) and how long it took, if
// it booted.
func logRun(log *slog.Logger, c config, r Run) {
	if r.Release == "" {
		return
	}
	attrs := []any{"kernel", c.Kernel, "release", r.Release, "possible", r.Possible, "online", r.Online,
		"boot", r.Boot.Round(100 * time.Millisecond)}
	for _, j := range r.Jobs {
		if j.Finished {
			attrs = append(attrs, j.Job.Name, fmt.Sprintf("exit %d in %v", j.Code, j.Duration.Round(100*time.Millisecond)))
		}
	}
	log.Info("vmtest", attrs...)
}

// runTests builds the test binaries of c.args' packages, runs them in one
// boot and prints go test's ok/FAIL line for each. It returns 0 when every
// binary exited 0.
func runTests(ctx context.Context, log *slog.Logger, c config, stdout io.Writer) int {
	bin, err := os.MkdirTemp("", "vmtest-tests-")
	if err != nil {
		log.Error("vmtest", "err", err)
		return 1
	}
	defer os.RemoveAll(bin)
	tests, err := buildTests(ctx, log, c, bin)
	if err != nil {
		log.Error("vmtest: building the tests failed", "err", err)
		return 1
	}
	var jobs []hostJob
	for i, t := range tests {
		jobs = append(jobs, newHostJob(i, t.ImportPath, t.Binary, t.args(c), t.Dir))
	}
	r, err := boot(ctx, log, c.options, jobs, stdout, func(j JobResult) { fmt.Fprintln(stdout, resultLine(j)) })
	logRun(log, c, r)
	code := 0
	for _, j := range r.Jobs {
		if !j.Finished {
			fmt.Fprintln(stdout, resultLine(j))
		}
		if !j.Finished || j.Code != 0 {
			code = 1
		}
	}
	if err != nil {
		log.Error("vmtest: the VM failed", "kernel", c.Kernel, "err", err)
		return 1
	}
	return code
}

// resultLine is go test's summary line for one test binary, with the time
// it ran in the VM.
func resultLine(j JobResult) string {
	d := fmt.Sprintf("%.3fs", j.Duration.Seconds())
	switch {
	case !j.Started:
		return fmt.Sprintf("FAIL\t%s\t(not run)", j.Job.Name)
	case !j.Finished:
		return fmt.Sprintf("FAIL\t%s\t(did not finish)", j.Job.Name)
	case j.Code != 0:
		return fmt.Sprintf("FAIL\t%s\t%s (exit status %d)", j.Job.Name, d, j.Code)
	}
	return fmt.Sprintf("ok  \t%s\t%s", j.Job.Name, d)
}

// testBinary is one package's compiled tests.
type testBinary struct {
	ImportPath, Dir, Binary string
	Run                     string // -test.run, "" for all
}

// args returns the test binary's flags.
func (t testBinary) args(c config) []string {
	a := []string{"-test.timeout=" + c.testTimeout.String()}
	if t.Run != "" {
		a = append(a, "-test.run="+t.Run)
	}
	if c.verbose {
		a = append(a, "-test.v")
	}
	return append(a, c.testArgs...)
}

// buildTests lists c.args' packages and builds the tests of each that has
// any into dir, with CGO_ENABLED=0 (the guest has no C library for them).
func buildTests(ctx context.Context, log *slog.Logger, c config, dir string) ([]testBinary, error) {
	list := exec.CommandContext(ctx, "go", append([]string{"list", "-f",
		"{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}"}, c.args...)...)
	list.Stderr = os.Stderr
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var tests []testBinary
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 || (f[2] == "0" && f[3] == "0") {
			continue
		}
		t := testBinary{ImportPath: f[0], Dir: f[1], Binary: filepath.Join(dir, strconv.Itoa(len(tests))+".test")}
		t.Run = runFor(c, t)
		if err := goTestC(ctx, log, t); err != nil {
			return nil, err
		}
		tests = append(tests, t)
	}
	return tests, nil
}

// runFor returns the -test.run for t: a -pkg-run naming its import path or
// directory, else -run.
func runFor(c config, t testBinary) string {
	for pkg, re := range c.pkgRun {
		if pkg == t.ImportPath {
			return re
		}
		if abs, err := filepath.Abs(pkg); err == nil && abs == t.Dir {
			return re
		}
	}
	return c.run
}

func goTestC(ctx context.Context, log *slog.Logger, t testBinary) error {
	log.Debug("building test binary", "package", t.ImportPath)
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", t.Binary, t.ImportPath)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go test -c %s: %w\n%s", t.ImportPath, err, stderr.Bytes())
	}
	return nil
}
