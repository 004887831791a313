package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Machine is the VM's shape.
type Machine struct {
	Online   int // CPUs online after boot
	Possible int // CPUs the kernel counts as possible (/sys/devices/system/cpu/possible)
	MemoryMB int
	// AllPresent makes all Possible CPUs present and has the kernel bring
	// up only Online (maxcpus=), for kernels that do not count QEMU's
	// hot-pluggable CPUs as possible. Otherwise Possible-Online CPUs are
	// hot-pluggable and never plugged, which boots much faster.
	AllPresent bool
}

// smp returns QEMU's -smp value for m.
func (m Machine) smp() string {
	if m.AllPresent {
		return strconv.Itoa(m.Possible)
	}
	return fmt.Sprintf("%d,maxcpus=%d", m.Online, m.Possible)
}

// qemuArgs returns qemu-system-x86_64's arguments: TCG (nested KVM does not
// work on the lab machines) with one host thread for all vCPUs, serial
// console on stdio, no NIC, exit instead of rebooting.
//
// Multi-threaded TCG (a host thread per vCPU) ran the guests about twice
// as fast but oopsed 6.12 under the tests: an int3 left by the kernel's
// live code patching (text_poke_bp, as tracepoints and static keys are
// switched on and off) hit by the other vCPU after the patch was done
// (`Oops: int3` in __schedule during TestSoftirqVsTracefs; and at boot
// with 240 CPUs, in sched_clock_cpu). One thread runs the vCPUs in turn,
// never in the middle of each other's code.
func qemuArgs(m Machine, vmlinuz, initrd string, verbose bool) []string {
	return []string{
		"-M", "q35", "-accel", "tcg,thread=single", "-cpu", "max",
		"-m", strconv.Itoa(m.MemoryMB),
		"-smp", m.smp(),
		"-nographic", "-no-reboot", "-nic", "none",
		"-kernel", vmlinuz, "-initrd", initrd,
		"-append", kernelCmdline(m, verbose),
	}
}

// event is one marker line /init printed: READY, BEGIN, EXIT or DONE and
// its fields.
type event struct {
	Kind   string
	Fields []string
}

// parseConsoleLine splits one console line (\r already stripped) into the
// text before the marker, which is program output, and the marker event.
// A program's last line without a newline ends up before the marker on the
// same line; the marker is random per run, so program output cannot fake it.
func parseConsoleLine(line, marker string) (text string, ev event, ok bool) {
	i := strings.Index(line, marker+" ")
	if i < 0 {
		return line, event{}, false
	}
	f := strings.Fields(line[i+len(marker):])
	if len(f) == 0 {
		return line, event{}, false
	}
	return line[:i], event{Kind: f[0], Fields: f[1:]}, true
}

// JobResult is how one job ended.
type JobResult struct {
	Job      Job
	Started  bool
	Finished bool
	Code     int
	Duration time.Duration // between its BEGIN and EXIT reaching the host
}

// Run is what one boot produced.
type Run struct {
	Release  string // the guest's uname -r
	Possible string // /sys/devices/system/cpu/possible
	Online   string
	Boot     time.Duration // QEMU start to READY
	Jobs     []JobResult
	Done     bool // /init reached its end
}

// session follows a boot's console.
type session struct {
	marker  string
	out     io.Writer       // program output
	console bool            // also copy firmware and kernel output to out
	onExit  func(JobResult) // called as each job ends
	check   func(Run) error // called at READY; an error stops the VM
	start   time.Time
	run     Run
	ready   bool     // READY seen: output from here to DONE is the jobs'
	early   []string // the last lines before READY: firmware, kernel
	begun   time.Time
}

// maxEarly is how many lines before READY are kept to show when the guest
// never gets there.
const maxEarly = 200

// handle processes one console line; a check error means stop. Lines
// before READY and after DONE (firmware, kernel) are shown with -console
// only.
func (s *session) handle(line string) error {
	text, ev, ok := parseConsoleLine(line, s.marker)
	switch {
	case (ok && text == "") || (!s.ready && !s.console) || (s.run.Done && !s.console):
		if !s.ready && !ok {
			s.early = append(s.early, text)
			if len(s.early) > maxEarly {
				s.early = s.early[1:]
			}
		}
	default:
		if _, err := fmt.Fprintln(s.out, text); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	if !ok {
		return nil
	}
	return s.apply(ev)
}

func (s *session) apply(ev event) error {
	now := time.Now()
	switch ev.Kind {
	case "READY":
		s.ready = true
		if len(ev.Fields) >= 3 {
			s.run.Release, s.run.Possible, s.run.Online = ev.Fields[0], ev.Fields[1], ev.Fields[2]
		}
		s.run.Boot = now.Sub(s.start)
		if s.check != nil {
			return s.check(s.run)
		}
	case "BEGIN":
		if i, ok := s.jobIndex(ev); ok {
			s.run.Jobs[i].Started, s.begun = true, now
		}
	case "EXIT":
		if i, ok := s.jobIndex(ev); ok && len(ev.Fields) >= 2 {
			r := &s.run.Jobs[i]
			r.Finished, r.Duration = true, now.Sub(s.begun)
			r.Code, _ = strconv.Atoi(ev.Fields[1])
			if s.onExit != nil {
				s.onExit(*r)
			}
		}
	case "DONE":
		s.run.Done = true
	}
	return nil
}

func (s *session) jobIndex(ev event) (int, bool) {
	if len(ev.Fields) == 0 {
		return 0, false
	}
	i, err := strconv.Atoi(ev.Fields[0])
	return i, err == nil && i >= 0 && i < len(s.run.Jobs)
}

// errTimeout wraps a run that hit the -timeout.
var errTimeout = errors.New("timeout")

// runQEMU boots the VM and follows its console until QEMU exits: the guest
// powered off, the kernel panicked, check refused the guest, or timeout
// passed (QEMU, the process started here, is then killed).
func runQEMU(ctx context.Context, log *slog.Logger, args []string, s *session, timeout time.Duration) (Run, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%w: %v passed", errTimeout, timeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return s.run, fmt.Errorf("qemu: %w", err)
	}
	s.start = time.Now()
	if err := cmd.Start(); err != nil {
		return s.run, fmt.Errorf("start qemu: %w", err)
	}
	log.Debug("qemu started", "pid", cmd.Process.Pid, "args", args)
	var stopped error
	r := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, rerr := r.ReadString('\n')
		if line != "" && stopped == nil {
			if err := s.handle(strings.TrimRight(line, "\r\n")); err != nil {
				stopped = err
				cancel()
			}
		}
		if rerr != nil {
			break
		}
	}
	werr := cmd.Wait()
	switch {
	case stopped != nil:
		return s.run, stopped
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errTimeout):
		return s.run, fmt.Errorf("%w: killed QEMU (pid %d)", context.Cause(ctx), cmd.Process.Pid)
	case ctx.Err() != nil:
		return s.run, fmt.Errorf("killed QEMU (pid %d): %w", cmd.Process.Pid, context.Cause(ctx))
	case werr != nil:
		return s.run, fmt.Errorf("qemu: %w", werr)
	case !s.ready:
		return s.run, fmt.Errorf("the guest stopped before /init started; its console:\n%s", strings.Join(s.early, "\n"))
	case !s.run.Done:
		return s.run, errors.New("the guest stopped before /init finished (kernel panic? -console shows the kernel log)")
	}
	return s.run, nil
}
