package cpustat

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// The aggregate line is the sum of the per-CPU lines (to within the
// kernel's per-line rounding to ticks: one tick per CPU per mode).
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
	s, err := ParseStat(strings.NewReader(stat), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := Times{100 * time.Millisecond, 10 * time.Millisecond, 200 * time.Millisecond, 3 * time.Second,
		40 * time.Millisecond, 50 * time.Millisecond, 60 * time.Millisecond, 70 * time.Millisecond,
		80 * time.Millisecond, 90 * time.Millisecond}
	if s.Host != want {
		t.Errorf("host = %+v, want %+v", s.Host, want)
	}
	if len(s.CPUs) != 3 || s.CPUs[1] != (Times{}) || s.CPUs[2].SoftIRQ != 30*time.Millisecond || s.Listed() != 2 {
		t.Errorf("CPUs = %+v", s.CPUs)
	}
	if s.Host.Total() != 3530*time.Millisecond {
		t.Errorf("Total = %v, want 3.53s (guest excluded)", s.Host.Total())
	}
	for _, bad := range []string{"intr 1\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 6 7 x\n", "cpu 1 2 3 4 5 6 7 8\ncpuX 1 2 3 4 5 6 7 8\n"} {
		if _, err := ParseStat(strings.NewReader(bad), time.Millisecond); err == nil {
			t.Errorf("ParseStat(%q) succeeded", bad)
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
	a, err := ParseStat(strings.NewReader("cpu 1 0 1 1 0 0 1 0\ncpu0 1 0 1 1 0 0 1 0\ncpu2 5 0 5 5 0 0 5 0\n"), tick)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseStat(strings.NewReader("cpu 9 0 9 9 0 0 9 0\ncpu0 3 1 4 10 2 1 6 1\ncpu1 1 1 1 1 1 1 1 1\ncpu2 4 0 5 5 0 0 5 0\n"), tick)
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
