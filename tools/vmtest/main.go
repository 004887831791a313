// Command vmtest runs a program, or Go test binaries, inside a QEMU VM
// (TCG) booted with one of Debian's kernels, so netprof's kernel tests run
// on the kernels users have (issue 11). It fetches the pinned kernel
// package with apt-get download (cached in .cache/vmtest), builds an
// initramfs of busybox, iproute2, the needed modules and the program, boots
// it, and exits with the program's exit status; the program's output comes
// out on stdout.
//
//	vmtest -kernel 6.1 [-cpus 2] [-possible 240] [-timeout 20m] -- PROGRAM ARGS...
//	go test -exec 'vmtest -kernel 6.12' ./loader
//	vmtest -kernel 6.1 -test [-run RE] [-pkg-run PKG=RE]... PKG... [-- TESTFLAGS]
//
// The third form builds each package's test binary (CGO_ENABLED=0) and
// runs them all in one boot, each in its package directory, printing go
// test's ok/FAIL line with the time it took in the VM. NETPROF_* variables
// are passed to the guest. Exit status: the program's, or 1 when a test
// binary failed or the VM did not run to the end (timeout, panic), 2 for
// bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	options
	test        bool
	run         string
	pkgRun      pkgRuns
	testTimeout time.Duration
	verbose     bool
	args        []string // PROGRAM ARGS..., or packages in -test mode
	testArgs    []string // -test mode: flags after "--" for every test binary
	timeoutSet  bool
}

// pkgRuns collects -pkg-run PKG=REGEX flags.
type pkgRuns map[string]string

func (p pkgRuns) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pkgRuns) Set(v string) error {
	pkg, re, ok := strings.Cut(v, "=")
	if !ok || pkg == "" {
		return errors.New("want PKG=REGEX")
	}
	p[pkg] = re
	return nil
}

var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{pkgRun: pkgRuns{}}
	fs := flag.NewFlagSet("vmtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: vmtest -kernel K [flags] [--] PROGRAM ARGS...\n"+
			"       vmtest -kernel K [flags] -test [-run RE] [-pkg-run PKG=RE]... PKG... [-- TESTFLAGS]\n"+
			"kernels: %s\n", kernelNames())
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Kernel, "kernel", "", "kernel of the matrix to boot: "+kernelNames())
	fs.IntVar(&c.Machine.Online, "cpus", 2, "online CPUs")
	fs.IntVar(&c.Machine.Possible, "possible", 0, "possible CPUs (QEMU maxcpus; default -cpus). 6.12 needs them present and offline, which oopsed under TCG in 3 of 3 boots: use it on 6.1")
	fs.IntVar(&c.Machine.MemoryMB, "memory", 3072, "guest memory, MiB")
	fs.DurationVar(&c.Timeout, "timeout", 20*time.Minute, "limit for the whole run, boot included; QEMU is killed after it")
	fs.StringVar(&c.CacheDir, "cache", defaultCacheDir(), "where kernel packages are kept (NETPROF_VMTEST_CACHE)")
	fs.BoolVar(&c.Console, "console", false, "show the guest kernel's log")
	fs.BoolVar(&c.test, "test", false, "arguments are Go packages: build their tests and run them all in one boot")
	fs.StringVar(&c.run, "run", "", "-test: -test.run for every package")
	fs.Var(c.pkgRun, "pkg-run", "-test: `PKG=REGEX` -test.run for one package (as written in the arguments or its import path); repeatable")
	fs.DurationVar(&c.testTimeout, "test-timeout", 10*time.Minute, "-test: -test.timeout for each test binary")
	fs.BoolVar(&c.verbose, "v", false, "-test: -test.v")
	if err := fs.Parse(args); err != nil {
		return c, errUsage
	}
	fs.Visit(func(f *flag.Flag) { c.timeoutSet = c.timeoutSet || f.Name == "timeout" })
	c.args = fs.Args()
	if c.test {
		// Packages come before "--"; flag.Parse has already eaten a "--"
		// that directly follows the flags.
		if n := len(args) - len(c.args); n > 0 && args[n-1] == "--" {
			c.args, c.testArgs = nil, c.args
		} else if i := slices.Index(c.args, "--"); i >= 0 {
			c.args, c.testArgs = c.args[:i], c.args[i+1:]
		}
	}
	return c, validate(&c, fs)
}

func validate(c *config, fs *flag.FlagSet) error {
	if c.Machine.Possible == 0 {
		c.Machine.Possible = c.Machine.Online
	}
	var problem string
	switch {
	case c.Kernel == "":
		problem = "-kernel is required"
	case c.Machine.Online < 1 || c.Machine.Possible < c.Machine.Online:
		problem = "want 1 <= -cpus <= -possible"
	case len(c.args) == 0 && c.test:
		problem = "-test needs packages"
	case len(c.args) == 0:
		problem = "no program to run"
	}
	if problem != "" {
		fmt.Fprintln(fs.Output(), "vmtest:", problem)
		fs.Usage()
		return errUsage
	}
	if _, err := lookupKernel(c.Kernel); err != nil {
		fmt.Fprintln(fs.Output(), "vmtest:", err)
		return errUsage
	}
	return nil
}

func kernelNames() string {
	var n []string
	for _, k := range matrix {
		n = append(n, k.Name)
	}
	return strings.Join(n, ", ")
}

// run is main without the exit: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel()}))
	c, err := parseFlags(args, stderr)
	if err != nil {
		return 2
	}
	if c.test {
		return runTests(ctx, log, c, stdout)
	}
	return runProgram(ctx, log, c, stdout)
}

// logLevel is Debug with NETPROF_VMTEST_DEBUG=1.
func logLevel() slog.Level {
	if os.Getenv("NETPROF_VMTEST_DEBUG") == "1" {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
