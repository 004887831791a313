package cpustat

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A goroutine spinning until its thread has used 300 ms of CPU (the
// kernel's per-thread clock, an independent figure) must show as ≥ 250 ms
// of this process's user CPU (getrusage) and of host user+nice time
// (/proc/stat), and the host's total CPU time must match wall clock × CPUs.
func TestBusyLoop(t *testing.T) {
	a, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	var sink atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		giveUp := time.Now().Add(10 * time.Second) // on a badly overloaded host
		var x uint64
		start := threadCPU(t)
		for threadCPU(t)-start < 300*time.Millisecond && time.Now().Before(giveUp) {
			for i := range 1000 {
				x += uint64(i) * x
			}
		}
		sink.Store(x)
	}()
	<-done
	b, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	u := Delta(a, b)
	// The spinning thread's 300 ms of CPU clock are split between user and
	// system time by tick sampling (interrupts landing in the spin count as
	// system), so their sum is the ground truth.
	if got := b.ProcessUser - a.ProcessUser + b.ProcessSystem - a.ProcessSystem; got < 250*time.Millisecond {
		t.Errorf("process user+system CPU grew by %v, want >= 250ms", got)
	}
	if u.ProcessUserS+u.ProcessSystemS < 0.25 {
		t.Errorf("Usage.ProcessUserS+ProcessSystemS = %.3f, want >= 0.25", u.ProcessUserS+u.ProcessSystemS)
	}
	d := b.Host.Sub(a.Host)
	// Ticks are 10 ms per CPU: allow one tick of slack.
	if hostUser := d.User + d.Nice; hostUser < 240*time.Millisecond {
		t.Errorf("host user+nice grew by %v, want >= 240ms", hostUser)
	}
	// Independent figure: wall clock × CPUs, within 10% plus a tick per CPU.
	wall := b.Time.Sub(a.Time)
	want := wall * time.Duration(len(b.CPUs))
	slack := want/10 + time.Duration(len(b.CPUs))*clockTick()
	if tot := d.Total(); tot < want-slack || tot > want+slack {
		t.Errorf("host CPU time grew by %v over %v wall on %d CPUs, want %v ± %v", tot, wall, len(b.CPUs), want, slack)
	}
	var sum float64
	for _, p := range []float64{u.UserPct, u.NicePct, u.SystemPct, u.IdlePct, u.IOWaitPct, u.IRQPct, u.SoftIRQPct, u.StealPct} {
		sum += p
	}
	if sum < 99.99 || sum > 100.01 {
		t.Errorf("mode percentages add up to %.3f, want 100", sum)
	}
	if u.UserPct < 100*0.24/wall.Seconds()/float64(len(b.CPUs)) {
		t.Errorf("user %.1f%% is below what the busy loop alone used", u.UserPct)
	}
	if u.IntervalNs != wall.Nanoseconds() || u.CPUs != len(b.CPUs) {
		t.Errorf("interval %d ns, %d CPUs; want %d, %d", u.IntervalNs, u.CPUs, wall.Nanoseconds(), len(b.CPUs))
	}
	t.Logf("busy 300ms: process user %v, host %+v", b.ProcessUser-a.ProcessUser, u)
}

// The aggregate line is the sum of the per-CPU lines (to within the
// kernel's per-line rounding to ticks: one tick per CPU per mode).
func threadCPU(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Error(err)
		return time.Hour
	}
	return time.Duration(ts.Nano())
}

func TestTotalsAddUp(t *testing.T) {
	s, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.CPUs) == 0 || len(s.CPUs) < runtime.NumCPU() {
		t.Fatalf("%d CPU lines, runtime sees %d CPUs", len(s.CPUs), runtime.NumCPU())
	}
	var sum Times
	for _, c := range s.CPUs {
		sum = Times{
			User: sum.User + c.User, Nice: sum.Nice + c.Nice, System: sum.System + c.System,
			Idle: sum.Idle + c.Idle, IOWait: sum.IOWait + c.IOWait, IRQ: sum.IRQ + c.IRQ,
			SoftIRQ: sum.SoftIRQ + c.SoftIRQ, Steal: sum.Steal + c.Steal,
		}
	}
	diff := s.Host.Sub(sum)
	tol := time.Duration(len(s.CPUs)) * clockTick()
	for name, v := range map[string]time.Duration{
		"user": diff.User, "nice": diff.Nice, "system": diff.System, "idle": diff.Idle,
		"iowait": diff.IOWait, "irq": diff.IRQ, "softirq": diff.SoftIRQ, "steal": diff.Steal,
	} {
		if v < -tol || v > tol {
			t.Errorf("%s: aggregate differs from the per-CPU sum by %v (tolerance %v)", name, v, tol)
		}
	}
	if s.Host.Total() <= 0 {
		t.Error("zero total CPU time")
	}
}

func TestParseStat(t *testing.T) {
	const stat = `cpu  10 1 20 300 4 5 6 7 8 9
cpu0 5 1 10 150 2 2 3 3 4 4
cpu2 5 0 10 150 2 3 3 4 4 5
intr 123 4 5
softirq 99 1 2 3
`
	s, err := parseStat([]byte(stat), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := Times{100 * time.Millisecond, 10 * time.Millisecond, 200 * time.Millisecond, 3 * time.Second,
		40 * time.Millisecond, 50 * time.Millisecond, 60 * time.Millisecond, 70 * time.Millisecond,
		80 * time.Millisecond, 90 * time.Millisecond}
	if s.Host != want {
		t.Errorf("host = %+v, want %+v", s.Host, want)
	}
	if len(s.CPUs) != 3 || s.CPUs[1] != (Times{}) || s.CPUs[2].SoftIRQ != 30*time.Millisecond {
		t.Errorf("CPUs = %+v", s.CPUs)
	}
	if s.Host.Total() != 3530*time.Millisecond {
		t.Errorf("Total = %v, want 3.53s (guest excluded)", s.Host.Total())
	}
	for _, bad := range []string{"intr 1\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 6 7 x\n", "cpu 1 2 3 4 5 6 7 8\ncpuX 1 2 3 4 5 6 7 8\n"} {
		if _, err := parseStat([]byte(bad), time.Millisecond); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
	// Busiest softirq CPU over a period.
	a, b := s, s
	b.CPUs = append([]Times(nil), s.CPUs...)
	b.CPUs[2].SoftIRQ += 90 * time.Millisecond
	b.CPUs[2].Idle += 10 * time.Millisecond
	b.CPUs[0].Idle += 100 * time.Millisecond
	b.Host.SoftIRQ += 90 * time.Millisecond
	b.Host.Idle += 110 * time.Millisecond
	u := Delta(a, b)
	if u.BusiestSoftIRQCPU != 2 || u.BusiestSoftIRQPct != 90 || u.SoftIRQPct != 45 {
		t.Errorf("Delta = %+v, want CPU 2 at 90%% softirq, host 45%%", u)
	}
}

// USER_HZ comes from the auxiliary vector; on amd64 and arm64 it is 100.
func TestClockTick(t *testing.T) {
	hz := auxClkTck()
	if hz == 0 {
		t.Fatal("AT_CLKTCK not found in /proc/self/auxv")
	}
	if (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && hz != 100 {
		t.Errorf("AT_CLKTCK = %d, want 100 on %s", hz, runtime.GOARCH)
	}
	if tk := clockTick(); tk != time.Second/time.Duration(hz) {
		t.Errorf("clockTick() = %v, want 1s/%d", tk, hz)
	}
}

// CPUDelta gives one CPU's time between two readings, and refuses a CPU
// missing from either (offline: no cpuN line) or whose counters went back.
func TestCPUDelta(t *testing.T) {
	tick := 10 * time.Millisecond
	a, err := parseStat([]byte("cpu 1 0 1 1 0 0 1 0\ncpu0 1 0 1 1 0 0 1 0\ncpu2 5 0 5 5 0 0 5 0\n"), tick)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseStat([]byte("cpu 9 0 9 9 0 0 9 0\ncpu0 3 1 4 10 2 1 6 1\ncpu1 1 1 1 1 1 1 1 1\ncpu2 4 0 5 5 0 0 5 0\n"), tick)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := CPUDelta(a, b, 0)
	if !ok || d.SoftIRQ != 5*tick || d.Busy() != (2+1+3+1+5)*tick || d.Total() != (2+1+3+9+2+1+5+1)*tick {
		t.Errorf("cpu0: %+v ok=%t; want softirq 50ms, busy 120ms (steal, idle, iowait out), total 240ms", d, ok)
	}
	for cpu, why := range map[int]string{1: "absent from the first reading", 2: "user went back", 3: "absent from both", -1: "negative"} {
		if _, ok := CPUDelta(a, b, cpu); ok {
			t.Errorf("cpu %d (%s): ok", cpu, why)
		}
	}
}
