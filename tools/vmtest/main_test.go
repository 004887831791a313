package main

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	// go test -exec 'vmtest -kernel 6.1' appends the binary and its flags.
	c, err := parseFlags([]string{"-kernel", "6.1", "/tmp/go-build1/b001/loader.test", "-test.paniconexit0", "-test.timeout=10m0s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.test || c.Kernel != "6.1" || c.Machine.Online != 2 || c.Machine.Possible != 2 || c.timeoutSet ||
		!slices.Equal(c.args, []string{"/tmp/go-build1/b001/loader.test", "-test.paniconexit0", "-test.timeout=10m0s"}) {
		t.Errorf("exec form: %+v", c)
	}
	if d, ok := testTimeoutArg(c.args[1:]); !ok || d != 10*time.Minute {
		t.Errorf("test timeout %v %v", d, ok)
	}

	c, err = parseFlags([]string{"-kernel", "6.12", "-possible", "240", "-timeout", "5m", "--", "prog", "-x"}, io.Discard)
	if err != nil || c.Machine.Possible != 240 || c.Timeout != 5*time.Minute || !c.timeoutSet || !slices.Equal(c.args, []string{"prog", "-x"}) {
		t.Errorf("program form: %+v %v", c, err)
	}

	c, err = parseFlags([]string{"-kernel", "6.1", "-test", "-v", "-pkg-run", "./bench=^TestCounting", "./loader", "./bench", "--", "-test.count=1"}, io.Discard)
	if err != nil || !c.test || !slices.Equal(c.args, []string{"./loader", "./bench"}) ||
		!slices.Equal(c.testArgs, []string{"-test.count=1"}) || c.pkgRun["./bench"] != "^TestCounting" {
		t.Errorf("test form: %+v %v", c, err)
	}
	bench := testBinary{ImportPath: "example.com/m/bench", Dir: "/nowhere/bench"}
	if got := bench.args(c); !slices.Equal(got, []string{"-test.timeout=10m0s", "-test.v", "-test.count=1"}) {
		t.Errorf("test binary args %v", got)
	}
	c.pkgRun["example.com/m/bench"] = "^TestX$"
	if got := runFor(c, bench); got != "^TestX$" {
		t.Errorf("-pkg-run by import path: %q", got)
	}
}

func TestParseFlagsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"prog"},                   // no kernel
		{"-kernel", "5.4", "prog"}, // not in the matrix
		{"-kernel", "6.1"},         // nothing to run
		{"-kernel", "6.1", "-cpus", "4", "-possible", "2", "prog"},
		{"-kernel", "6.1", "-test", "--", "-test.v"},
		{"-kernel", "6.1", "-pkg-run", "nopackage", "-test", "./x"},
	} {
		if _, err := parseFlags(args, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: err %v, want usage", args, err)
		}
	}
}

func TestMatrix(t *testing.T) {
	for _, k := range matrix {
		if k.Name == "" || k.Version == "" || k.Release() == k.Package {
			t.Errorf("matrix entry %+v", k)
		}
	}
	k, err := lookupKernel("6.12")
	if err != nil || k.Release() != "6.12.117+deb12-cloud-amd64" {
		t.Errorf("6.12: %+v %v", k, err)
	}
	if got := (Kernel{Package: "linux-image-x", Version: "1:2.3-4"}).debName(); got != "linux-image-x_1%3a2.3-4_amd64.deb" {
		t.Errorf("debName with an epoch: %q", got)
	}
}
