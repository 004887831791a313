package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
)

// needKernel returns the kernel tree name, fetched into the cache
// (kernel packages are reused from there, so make test-kernels and these
// tests download them once), or skips through kerneltest.Skip.
func needKernel(t *testing.T, name string) Tree {
	t.Helper()
	k, err := lookupKernel(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("busybox"); err != nil {
		kerneltest.Skip(t, "busybox not installed (apt-get install busybox-static)")
	}
	tree, err := fetchKernel(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), defaultCacheDir(), k)
	if err != nil {
		kerneltest.Skip(t, "kernel package unavailable: "+err.Error())
	}
	return tree
}

// The guest boots each kernel with the possible CPUs asked for, runs a
// guest command, and its output and exit status come back. 6.1 counts
// QEMU's hot-pluggable CPUs (240 possible, 2 online); 6.12 gets them
// present and held offline (a few, to keep the boot short).
func TestBootPossibleCPUs(t *testing.T) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		kerneltest.Skip(t, "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)")
	}
	for _, tc := range []struct {
		kernel   string
		possible int
	}{
		{"6.1", 240},
		// 6.12 counts only CPUs present at boot, so extra possible CPUs
		// must be present and kept offline; under TCG such a boot oopsed
		// (int3 in sched_clock_cpu while patching text) in 3 of 3 tries
		// at 6 and 240 CPUs. The matrix runs 6.12 with its online CPUs.
		{"6.12", 2},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			needKernel(t, tc.kernel)
			o := options{Kernel: tc.kernel, Machine: Machine{Online: 2, Possible: tc.possible, MemoryMB: 1024},
				Timeout: 3 * time.Minute, CacheDir: defaultCacheDir()}
			job := hostJob{Job: Job{Name: "cat", Dir: "/tmp/d", Argv: []string{"/bin/sh", "-c",
				"cat /sys/devices/system/cpu/possible /sys/devices/system/cpu/online; pwd; exit 3"}}}
			var out strings.Builder
			r, err := boot(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), o, []hostJob{job}, &out, nil)
			if err != nil {
				t.Fatalf("boot: %v\noutput: %s", err, out.String())
			}
			want := cpuRange(tc.possible) + "\n0-1\n/tmp/d\n"
			if out.String() != want || r.Possible != cpuRange(tc.possible) {
				t.Errorf("guest said %q (READY possible %s), want %q", out.String(), r.Possible, want)
			}
			if j := r.Jobs[0]; !j.Finished || j.Code != 3 {
				t.Errorf("job %+v, want exit status 3", j)
			}
			t.Logf("%s: boot %v, possible %s, online %s", r.Release, r.Boot.Round(100*time.Millisecond), r.Possible, r.Online)
		})
	}
}

// Modules are staged uncompressed with their dependencies, and depmod
// writes what busybox modprobe reads.
func TestStageModules(t *testing.T) {
	for _, k := range matrix {
		t.Run(k.Name, func(t *testing.T) {
			tree := needKernel(t, k.Name)
			bb, _ := exec.LookPath("busybox")
			root := t.TempDir()
			staged, err := stageModules(context.Background(), bb, tree, root, []string{"bridge", "sch_netem", "tcp_cubic"})
			if err != nil {
				t.Fatal(err)
			}
			// bridge needs stp, which needs llc: dependencies come first.
			if strings.Join(staged, ",") != "llc,stp,bridge,sch_netem" {
				t.Errorf("staged %v (tcp_cubic is built in)", staged)
			}
			dir := filepath.Join(root, "lib", "modules", tree.Release())
			dep, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(dep), "kernel/net/bridge/bridge.ko: ") || strings.Contains(string(dep), ".xz") {
				t.Errorf("modules.dep:\n%s", dep)
			}
		})
	}
}

// A version apt does not have fails naming the pinned table.
func TestFetchMissingVersion(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no apt-get")
	}
	k := Kernel{Name: "gone", Package: matrix[0].Package, Version: "0.0.0-netprof-none"}
	_, err := fetchKernel(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), t.TempDir(), k)
	if !errors.Is(err, errNotInArchive) || !strings.Contains(err.Error(), "tools/vmtest/kernels.go") {
		t.Errorf("err = %v", err)
	}
}
