package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// options say which kernel to boot and how.
type options struct {
	Kernel   string // matrix name
	Machine  Machine
	Timeout  time.Duration // whole boot, QEMU killed after it
	CacheDir string
	Console  bool // show the kernel's log
}

// hostJob is a Job with the host files it needs.
type hostJob struct {
	Job
	program string // host file copied to Argv[0]; "" when Argv[0] is a guest file
	data    string // host directory copied to Data/testdata; "" for none
}

// newHostJob returns a job running the host program with args in dir, with
// dir's testdata/ (if any) copied along. The program goes to
// /vmtest/bin/N/ in the guest; the job keeps the host's working directory
// path.
func newHostJob(n int, name, program string, args []string, dir string) hostJob {
	j := hostJob{program: program}
	j.Name = name
	j.Dir = dir
	j.Argv = append([]string{path.Join("/vmtest/bin", strconv.Itoa(n), filepath.Base(program))}, args...)
	if st, err := os.Stat(filepath.Join(dir, "testdata")); err == nil && st.IsDir() {
		j.data = filepath.Join(dir, "testdata")
		j.Data = path.Join("/vmtest/data", strconv.Itoa(n))
	}
	return j
}

// stageJobs copies each job's program (with its libraries) and test data.
func stageJobs(s stager, jobs []hostJob) error {
	for _, j := range jobs {
		if j.program != "" {
			if err := s.copyExecutable(j.program, j.Argv[0]); err != nil {
				return err
			}
		}
		if j.data != "" {
			if err := s.copyTree(j.data, path.Join(j.Data, "testdata")); err != nil {
				return fmt.Errorf("stage %s: %w", j.data, err)
			}
		}
	}
	return nil
}

// boot runs jobs in one boot of o.Kernel, writing their output to out and
// calling onExit as each ends. The error is about the VM (kernel fetch,
// initramfs, QEMU, timeout, possible CPUs not as asked), not the jobs'
// exit codes, which are in Run.
func boot(ctx context.Context, log *slog.Logger, o options, jobs []hostJob, out io.Writer, onExit func(JobResult)) (Run, error) {
	k, err := lookupKernel(o.Kernel)
	if err != nil {
		return Run{}, err
	}
	o.Machine.AllPresent = !k.HotplugPossible
	tree, err := fetchKernel(ctx, log, o.CacheDir, k)
	if err != nil {
		return Run{}, err
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return Run{}, fmt.Errorf("busybox (the guest's shell and tools; apt-get install busybox-static): %w", err)
	}
	work, err := os.MkdirTemp(o.CacheDir, "boot-")
	if err != nil {
		return Run{}, fmt.Errorf("work dir: %w", err)
	}
	defer os.RemoveAll(work)
	marker, err := newMarker()
	if err != nil {
		return Run{}, err
	}
	initrd := filepath.Join(work, "initramfs.cpio")
	start := time.Now()
	if err := buildInitramfs(ctx, log, stager{root: filepath.Join(work, "root"), busybox: busybox}, tree, marker, jobs, initrd); err != nil {
		return Run{}, err
	}
	log.Debug("initramfs built", "took", time.Since(start).Round(time.Millisecond))
	s := &session{marker: marker, out: out, console: o.Console, onExit: onExit, check: possibleCheck(o.Machine)}
	for _, j := range jobs {
		s.run.Jobs = append(s.run.Jobs, JobResult{Job: j.Job})
	}
	return runQEMU(ctx, log, qemuArgs(o.Machine, tree.Vmlinuz(), initrd, o.Console), s, o.Timeout)
}

// buildInitramfs stages the guest and writes it to initrd.
func buildInitramfs(ctx context.Context, log *slog.Logger, s stager, tree Tree, marker string, jobs []hostJob, initrd string) error {
	modules, err := stageBase(ctx, log, s, tree)
	if err != nil {
		return err
	}
	if err := stageJobs(s, jobs); err != nil {
		return err
	}
	// NETPROF_EMULATED tells the tests they run under TCG emulation, where
	// the vCPUs take turns on one host thread (see qemuArgs): a test that
	// compares clocks read in two different callbacks loosens its bound.
	g := Guest{Marker: marker, Modules: modules, Env: append(netprofEnv(os.Environ()), "NETPROF_EMULATED=tcg-single")}
	for _, j := range jobs {
		g.Jobs = append(g.Jobs, j.Job)
	}
	if err := writeFile(s.guest("init"), []byte(initScript(g)), 0o755); err != nil {
		return fmt.Errorf("stage /init: %w", err)
	}
	return writeCpio(ctx, s.busybox, s.root, initrd)
}

// netprofEnv returns the NETPROF_* entries of environ.
func netprofEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "NETPROF_") {
			env = append(env, kv)
		}
	}
	return env
}

// newMarker returns a marker no program output contains by chance.
func newMarker() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("marker: %w", err)
	}
	return "VMTEST-" + hex.EncodeToString(b), nil
}

// cpuRange is how sysfs writes CPUs 0..n-1.
func cpuRange(n int) string {
	if n == 1 {
		return "0"
	}
	return fmt.Sprintf("0-%d", n-1)
}

// possibleCheck refuses a guest whose possible or online CPUs are not what
// m asked for: a many-CPU test on a kernel that ignored maxcpus would pass
// without testing anything.
func possibleCheck(m Machine) func(Run) error {
	return func(r Run) error {
		if r.Possible != cpuRange(m.Possible) || r.Online != cpuRange(m.Online) {
			return fmt.Errorf("guest kernel %s has possible CPUs %s, online %s; asked for possible %s, online %s",
				r.Release, r.Possible, r.Online, cpuRange(m.Possible), cpuRange(m.Online))
		}
		return nil
	}
}
