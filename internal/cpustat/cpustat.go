// Package cpustat samples CPU time without BPF: the host's time per mode from
// /proc/stat (user, system, softirq, ...) and this process's own user and
// system time from getrusage(RUSAGE_SELF). Take a Sample before and after
// a period and Delta gives the period's usage.
//
// /proc/stat counts in USER_HZ ticks (the AT_CLKTCK auxv entry, 100 on
// common architectures), so host figures have a resolution of 10 ms per CPU;
// getrusage is exact to the microsecond.
package cpustat

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Times is CPU time per mode, as in a /proc/stat "cpu" line (see proc(5)).
// Guest and GuestNice are already included in User and Nice by the kernel,
// so Total leaves them out.
type Times struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal, Guest, GuestNice time.Duration
}

// Total returns the sum of every mode except Guest and GuestNice (which the
// kernel also counts in User and Nice).
func (t Times) Total() time.Duration {
	return t.User + t.Nice + t.System + t.Idle + t.IOWait + t.IRQ + t.SoftIRQ + t.Steal
}

// Busy returns the time in every mode but Idle, IOWait and Steal: user,
// nice, system, irq and softirq (guest time is inside user and nice).
func (t Times) Busy() time.Duration {
	return t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ
}

// Sub returns t - u per mode.
func (t Times) Sub(u Times) Times {
	return Times{
		User: t.User - u.User, Nice: t.Nice - u.Nice, System: t.System - u.System,
		Idle: t.Idle - u.Idle, IOWait: t.IOWait - u.IOWait, IRQ: t.IRQ - u.IRQ,
		SoftIRQ: t.SoftIRQ - u.SoftIRQ, Steal: t.Steal - u.Steal,
		Guest: t.Guest - u.Guest, GuestNice: t.GuestNice - u.GuestNice,
	}
}

// Sample is the cumulative CPU time at one moment.
type Sample struct {
	// Time is when the sample was taken (monotonic clock reading included).
	Time time.Time
	// Host is the "cpu" line of /proc/stat: every CPU added up.
	Host Times
	// CPUs holds the "cpuN" lines, indexed by N (offline CPUs are absent
	// from /proc/stat and left zero here).
	CPUs []Times
	// ProcessUser and ProcessSystem are this process's own CPU time
	// (getrusage RUSAGE_SELF: every thread, including exited ones).
	ProcessUser, ProcessSystem time.Duration
}

// Listed returns how many per-CPU lines s's /proc/stat had (the online
// CPUs at that moment; CPUs holds a zero entry for each absent number).
func (s Sample) Listed() int {
	n := 0
	for _, c := range s.CPUs {
		if c.Total() > 0 {
			n++
		}
	}
	return n
}

// CPUDelta returns CPU cpu's time from a to b (b taken after a). ok is
// false when the CPU is missing from either sample (offline, or beyond the
// lines /proc/stat listed) or one of its counters went backwards.
func CPUDelta(a, b Sample, cpu int) (d Times, ok bool) {
	if cpu < 0 || cpu >= len(a.CPUs) || cpu >= len(b.CPUs) || a.CPUs[cpu].Total() == 0 || b.CPUs[cpu].Total() == 0 {
		return Times{}, false
	}
	d = b.CPUs[cpu].Sub(a.CPUs[cpu])
	for _, v := range []time.Duration{d.User, d.Nice, d.System, d.Idle, d.IOWait, d.IRQ, d.SoftIRQ, d.Steal, d.Guest, d.GuestNice} {
		if v < 0 {
			return Times{}, false
		}
	}
	return d, true
}

// StatPath is the kernel's CPU time accounting file (proc(5)).
const StatPath = "/proc/stat"

// Read takes a Sample. It returns an error if /proc/stat cannot be read or
// parsed (wrapping os.ErrNotExist when /proc is not mounted) or getrusage
// fails.
func Read() (Sample, error) {
	f, err := os.Open(StatPath)
	if err != nil {
		return Sample{}, fmt.Errorf("cpustat: %w", err)
	}
	defer f.Close()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Sample{}, fmt.Errorf("cpustat: getrusage: %w", err)
	}
	s, err := ParseStat(f, clockTick())
	if err != nil {
		return Sample{}, fmt.Errorf("cpustat: %s: %w", StatPath, err)
	}
	s.Time = time.Now()
	s.ProcessUser = time.Duration(ru.Utime.Nano())
	s.ProcessSystem = time.Duration(ru.Stime.Nano())
	return s, nil
}

// ParseStat reads the cpu lines of a /proc/stat file from r; tick is the
// length of one USER_HZ tick. Lines may be of any length (a host with
// hundreds of CPUs has an "intr" line of thousands of counters, far over
// bufio.Scanner's 64 KiB): lines other than "cpu..." are skipped without
// being kept. It returns an error when a cpu line does not parse, a CPU
// number is above 65535, or the aggregate "cpu" line is missing. Only
// Host and CPUs are set.
func ParseStat(r io.Reader, tick time.Duration) (Sample, error) {
	var s Sample
	found := false
	err := eachLine(r, []byte("cpu"), func(line []byte) error {
		f := strings.Fields(string(line))
		t, err := parseTimes(f[1:], tick)
		if err != nil {
			return fmt.Errorf("%s: %w", f[0], err)
		}
		if f[0] == "cpu" {
			s.Host, found = t, true
			return nil
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || n < 0 || n > 1<<16 {
			return fmt.Errorf("bad cpu line %q", f[0])
		}
		for len(s.CPUs) <= n {
			s.CPUs = append(s.CPUs, Times{})
		}
		s.CPUs[n] = t
		return nil
	})
	if err != nil {
		return Sample{}, err
	}
	if !found {
		return Sample{}, fmt.Errorf("no aggregate cpu line")
	}
	return s, nil
}

// maxKeptLine bounds a line eachLine hands over (a cpu line is under
// 200 bytes; this only stops a corrupt file from growing without bound).
const maxKeptLine = 1 << 20

// eachLine calls fn with every line of r that starts with prefix, without
// its newline. Other lines are read through a fixed buffer and dropped, so
// their length does not matter. It returns fn's first error, a read error,
// or an error for a kept line over 1 MiB.
func eachLine(r io.Reader, prefix []byte, fn func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 4096)
	var line []byte
	atStart, keep := true, false
	for {
		chunk, err := br.ReadSlice('\n')
		if atStart && len(chunk) > 0 {
			// A chunk at a line's start holds the whole line or a full
			// buffer, so it holds the prefix if the line has it.
			keep, line = bytes.HasPrefix(chunk, prefix), line[:0]
		}
		if keep {
			if line = append(line, chunk...); len(line) > maxKeptLine {
				return fmt.Errorf("line %.20q... longer than %d bytes", line, maxKeptLine)
			}
		}
		atStart = err == nil // a full line ended with the chunk
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return err
		}
		if keep && (err == nil || (err == io.EOF && len(line) > 0)) {
			if ferr := fn(bytes.TrimSuffix(line, []byte("\n"))); ferr != nil {
				return ferr
			}
			keep = false
		}
		if err == io.EOF {
			return nil
		}
	}
}

func parseTimes(f []string, tick time.Duration) (Times, error) {
	if len(f) < 8 {
		return Times{}, fmt.Errorf("%d fields, want at least 8", len(f))
	}
	var v [10]time.Duration
	for i := 0; i < len(f) && i < len(v); i++ {
		n, err := strconv.ParseUint(f[i], 10, 63)
		if err != nil {
			return Times{}, fmt.Errorf("field %d: %w", i+1, err)
		}
		v[i] = time.Duration(n) * tick
	}
	return Times{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]}, nil
}

var (
	tickOnce sync.Once
	tick     time.Duration
)

// clockTick returns the length of one USER_HZ tick, from the AT_CLKTCK auxv
// entry the kernel passes every process (sysconf(_SC_CLK_TCK) reads the
// same); 10 ms if it cannot be read.
func clockTick() time.Duration {
	tickOnce.Do(func() {
		tick = 10 * time.Millisecond
		if hz := auxClkTck(); hz > 0 {
			tick = time.Second / time.Duration(hz)
		}
	})
	return tick
}

const atClkTck = 17 // AT_CLKTCK in <elf.h>

func auxClkTck() uint64 {
	data, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0
	}
	word := strconv.IntSize / 8 // (key, value) pairs of native words
	get := func(b []byte) uint64 {
		if word == 4 {
			return uint64(binary.NativeEndian.Uint32(b))
		}
		return binary.NativeEndian.Uint64(b)
	}
	for i := 0; i+2*word <= len(data); i += 2 * word {
		key := get(data[i:])
		if key == atClkTck {
			return get(data[i+word:])
		}
		if key == 0 {
			break
		}
	}
	return 0
}
