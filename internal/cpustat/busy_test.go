package cpustat

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// spinFor is how much CPU the busy loop burns (its thread's own clock).
const spinFor = 300 * time.Millisecond

// A thread spins for spinFor of its own CPU clock between two Reads. The
// ground truth for the window between them is this process's CPU time
// from getrusage (exact: the kernel sums its threads' runtimes), which
// the spin alone makes at least spinFor. /proc/stat counts whole ticks, so
// the host's figures must cover the process's to within tickSlack:
//
//   - host busy (user+nice+system+irq+softirq) + steal >= process
//     user+system: the process's CPU time is part of the host's;
//   - host user+nice >= process user: the spin is user time, and the
//     process's user/system split comes from the same ticks.
//
// The host's total must also match wall clock × CPUs listed.
func TestBusyLoop(t *testing.T) {
	a, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	spun := spin(t, spinFor)
	b, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	procUser, procSys := b.ProcessUser-a.ProcessUser, b.ProcessSystem-a.ProcessSystem
	if spun < spinFor {
		t.Fatalf("the loop spun only %v of CPU (gave up after 10 s of wall clock)", spun)
	}
	// Both clocks are the kernel's runtime accounting: the process's
	// total includes the spinning thread's, exactly.
	if procUser+procSys < spun {
		t.Errorf("process user+system CPU grew by %v, less than the %v its spinning thread used", procUser+procSys, spun)
	}
	d := b.Host.Sub(a.Host)
	busy := d.Busy() + d.Steal
	if slack := tickSlack(6); busy < procUser+procSys-slack {
		t.Errorf("host busy+steal grew by %v, want >= process user+system %v - %v", busy, procUser+procSys, slack)
	}
	if slack := tickSlack(2); d.User+d.Nice < procUser-slack {
		t.Errorf("host user+nice grew by %v, want >= process user %v - %v", d.User+d.Nice, procUser, slack)
	}
	checkWall(t, a, b)
	t.Logf("spun %v; process user %v system %v; host user+nice %v (margin %v), busy+steal %v (margin %v); tick %v",
		spun, procUser, procSys, d.User+d.Nice, d.User+d.Nice-procUser, busy, busy-procUser-procSys, clockTick())
}

// tickSlack is how far a /proc/stat figure adding modes modes can fall
// short of the exact CPU time of a process over the same window, in
// ticks: each reading truncates each mode to whole ticks (< 1 tick per
// mode in a difference); the tick only samples what runs, so the
// process's exact runtime and its ticks differ by < 1 tick for each run of
// it bordered by idle time (its busy-looping thread is one run; the rest
// of the process is a few µs here and there: 1 tick for all); and Read
// calls getrusage just before the kernel generates /proc/stat, so the
// process's CPU in between (one syscall) is in its window only (1 ms).
func tickSlack(modes int) time.Duration {
	return time.Duration(modes+1)*clockTick() + time.Millisecond
}

// checkWall checks the host's total CPU time from a to b against wall
// clock × CPUs listed, within 10% plus a tick per CPU, and the Usage
// percentages derived from it.
func checkWall(t *testing.T, a, b Sample) {
	t.Helper()
	wall, cpus := b.Time.Sub(a.Time), b.Listed()
	want := wall * time.Duration(cpus)
	slack := want/10 + time.Duration(cpus)*clockTick()
	if tot := b.Host.Sub(a.Host).Total(); tot < want-slack || tot > want+slack {
		t.Errorf("host CPU time grew by %v over %v wall on %d CPUs, want %v ± %v", tot, wall, cpus, want, slack)
	}
	u := Delta(a, b)
	var sum float64
	for _, p := range []float64{u.UserPct, u.NicePct, u.SystemPct, u.IdlePct, u.IOWaitPct, u.IRQPct, u.SoftIRQPct, u.StealPct} {
		sum += p
	}
	if sum < 99.99 || sum > 100.01 {
		t.Errorf("mode percentages add up to %.3f, want 100", sum)
	}
	if u.IntervalNs != wall.Nanoseconds() || u.CPUs != cpus {
		t.Errorf("interval %d ns, %d CPUs; want %d, %d", u.IntervalNs, u.CPUs, wall.Nanoseconds(), cpus)
	}
}

// spin burns CPU on a thread of its own until that thread's CPU clock
// advanced by d (or 10 s of wall clock passed, on a badly overloaded
// host), and returns how much it advanced.
func spin(t *testing.T, d time.Duration) time.Duration {
	var sink atomic.Uint64
	done := make(chan time.Duration)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		giveUp := time.Now().Add(10 * time.Second)
		var x uint64
		start := threadCPU(t)
		used := time.Duration(0)
		for used < d && time.Now().Before(giveUp) {
			// ~100 µs of arithmetic per clock read: reading a thread's
			// CPU clock is a system call, and reading it every µs made a
			// third of the "busy loop" system time.
			for i := range 100_000 {
				x += uint64(i) * x
			}
			used = threadCPU(t) - start
		}
		sink.Store(x)
		done <- used
	}()
	return <-done
}

// threadCPU returns the calling thread's CPU clock.
func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Error(err)
		return time.Hour
	}
	return time.Duration(ts.Nano())
}
