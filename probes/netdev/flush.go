package netdev

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/cpulist"
	"github.com/netprof/netprof/internal/osthread"
)

// The netdev programs keep each CPU's latest counts in a per-CPU cache and
// write them to the hash maps Read reads only now and then (see
// bpf/netdev_cache.h). Before each read, the flusher runs np_nd_flush on
// every online CPU so the hash maps hold everything counted so far.
//
// np_nd_flush must run in an IPI on its CPU (interrupts off, so no netdev
// program of that CPU runs half-way through it), never locally in process
// context: BPF_PROG_TEST_RUN with BPF_F_TEST_RUN_ON_CPU runs the program
// locally when the caller is on the target CPU. So the flusher pins its
// thread to one allowed CPU, flushes every other CPU, then pins itself to a
// second CPU and flushes the first. It needs two CPUs it may run on;
// otherwise the cache stays off and the programs count in the hash maps
// directly.

// flushTries bounds the retries of a CPU whose flush interrupted a netdev
// program (the program runs a few hundred ns; the CPU is in one for at most
// a few percent of its time).
const flushTries = 1000

// errBusy is returned when a CPU's flush kept interrupting netdev programs.
var errBusy = errors.New("netdev cache flush: cpu busy")

type flusher struct {
	prog *ebpf.Program
}

// flushAll flushes every online CPU. It runs on a goroutine of its own
// whose thread is discarded afterwards (its affinity was changed).
func (f *flusher) flushAll() error {
	var err error
	osthread.Disposable(func() { err = f.flushPinned() })
	return err
}

func (f *flusher) flushPinned() error {
	online, err := cpulist.Online()
	if err != nil {
		return fmt.Errorf("netdev cache flush: %w", err)
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return fmt.Errorf("netdev cache flush: sched_getaffinity: %w", err)
	}
	var mine []int
	for _, c := range online {
		if allowed.IsSet(c) {
			mine = append(mine, c)
			if len(mine) == 2 {
				break
			}
		}
	}
	if len(mine) < 2 {
		return fmt.Errorf("netdev cache flush: needs two CPUs to run on, has %d", len(mine))
	}
	var errs []error
	for i, home := range mine {
		var set unix.CPUSet
		set.Set(home)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("netdev cache flush: pin to cpu %d: %w", home, err)
		}
		for _, c := range online {
			// From the first home flush all but itself; from the second,
			// only the first.
			if c == home || (i == 1 && c != mine[0]) {
				continue
			}
			errs = append(errs, f.flushCPU(c))
		}
	}
	return errors.Join(errs...)
}

func (f *flusher) flushCPU(cpu int) error {
	for try := 0; try < flushTries; try++ {
		ret, err := f.prog.Run(&ebpf.RunOptions{CPU: uint32(cpu), Flags: unix.BPF_F_TEST_RUN_ON_CPU})
		if err != nil {
			if errors.Is(err, unix.ENXIO) {
				return nil // went offline: nothing runs there
			}
			return fmt.Errorf("netdev cache flush cpu %d: %w", cpu, err)
		}
		if ret == 0 {
			return nil
		}
		if try > 10 {
			time.Sleep(10 * time.Microsecond)
		}
	}
	return fmt.Errorf("%w: cpu %d after %d tries", errBusy, cpu, flushTries)
}
