package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// lddPaths returns the files ldd says prog loads, symlinks resolved.
func lddPaths(t *testing.T, prog string) []string {
	t.Helper()
	out, err := exec.Command("ldd", prog).Output()
	if err != nil {
		t.Skipf("ldd %s: %v", prog, err)
	}
	var paths []string
	for _, m := range regexp.MustCompile(`(?m)(?:=> )?(/\S+) \(0x`).FindAllStringSubmatch(string(out), -1) {
		paths = append(paths, realPath(t, m[1]))
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// elfDeps finds exactly the files the dynamic loader loads (ldd is the
// ground truth), including libraries only other libraries need.
func TestElfDepsMatchesLdd(t *testing.T) {
	for _, tool := range []string{"ip", "ss"} {
		prog, err := lookHostTool(tool)
		if err != nil {
			t.Skipf("%s not installed", tool)
		}
		deps, err := elfDeps(prog)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range deps {
			got = append(got, realPath(t, d))
		}
		slices.Sort(got)
		got = slices.Compact(got)
		want := lddPaths(t, prog)
		if !slices.Equal(got, want) {
			t.Errorf("%s: elfDeps = %v\nldd     = %v", tool, got, want)
		}
		if !slices.Contains(deps, "/lib64/ld-linux-x86-64.so.2") {
			t.Errorf("%s: no program interpreter in %v", tool, deps)
		}
	}
}

// A static executable needs nothing.
func TestElfDepsStatic(t *testing.T) {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("no busybox")
	}
	if out, _ := exec.Command("ldd", bb).CombinedOutput(); !regexp.MustCompile(`not a dynamic executable|statically linked`).Match(out) {
		t.Skipf("busybox is dynamic here: %s", out)
	}
	deps, err := elfDeps(bb)
	if err != nil || len(deps) != 0 {
		t.Errorf("elfDeps(static busybox) = %v, %v; want none", deps, err)
	}
}

func TestFindLibMissing(t *testing.T) {
	prog, err := lookHostTool("ip")
	if err != nil {
		t.Skip("ip not installed")
	}
	deps, err := elfDeps(prog)
	if err != nil || len(deps) == 0 {
		t.Fatalf("%v %v", deps, err)
	}
	save := libDirs
	t.Cleanup(func() { libDirs = save })
	libDirs = []string{t.TempDir()}
	if _, err := elfDeps(prog); err == nil {
		t.Error("no error with an empty library path")
	}
}
