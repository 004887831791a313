package cpustat

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// bigStat returns a /proc/stat of a host with cpus CPUs (all but the
// offline ones listed) and an intr line of vectors counters of 16 digits
// each, and the times it holds: CPU c's mode m is (c+1)*100 + m ticks.
func bigStat(cpus int, offline map[int]bool, vectors int) (string, []Times) {
	var b, lines strings.Builder
	var agg [10]uint64
	want := make([]Times, cpus)
	for c := range cpus {
		if offline[c] {
			continue
		}
		fmt.Fprintf(&lines, "cpu%d", c)
		var v [10]time.Duration
		for m := range 10 {
			n := uint64((c+1)*100 + m)
			agg[m] += n
			v[m] = time.Duration(n) * 10 * time.Millisecond
			fmt.Fprintf(&lines, " %d", n)
		}
		lines.WriteByte('\n')
		want[c] = Times{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]}
	}
	fmt.Fprintf(&b, "cpu  %d %d %d %d %d %d %d %d %d %d\n", agg[0], agg[1], agg[2], agg[3], agg[4], agg[5], agg[6], agg[7], agg[8], agg[9])
	b.WriteString(lines.String())
	b.WriteString("intr 123456789012")
	for i := range vectors {
		fmt.Fprintf(&b, " %d", 1_000_000_000_000_000+i)
	}
	b.WriteString("\nctxt 987654321\nbtime 1767225600\nprocesses 12345\nprocs_running 3\nprocs_blocked 0\n")
	b.WriteString("softirq 1 2 3 4 5 6 7 8 9 10 11\n")
	return b.String(), want
}

// A 288-vCPU host: 288 cpu lines and an intr line of 4,000 vectors
// (68 KB, over bufio.Scanner's 64 KiB limit) parse exactly, through any
// read pattern; CPUs listed count the online ones only.
func TestParseStat288(t *testing.T) {
	offline := map[int]bool{7: true, 100: true}
	stat, want := bigStat(288, offline, 4000)
	longest := 0
	for l := range strings.Lines(stat) {
		longest = max(longest, len(l))
	}
	if longest <= bufio.MaxScanTokenSize {
		t.Fatalf("longest line %d bytes: not over bufio.Scanner's %d", longest, bufio.MaxScanTokenSize)
	}
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(stat),
		"one byte": iotest.OneByteReader(strings.NewReader(stat)),
		"half":     iotest.HalfReader(strings.NewReader(stat)),
		"data+EOF": iotest.DataErrReader(strings.NewReader(stat)),
	} {
		s, err := ParseStat(r, 10*time.Millisecond)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(s.CPUs) != 288 || s.Listed() != 286 {
			t.Fatalf("%s: %d CPUs, %d listed; want 288, 286", name, len(s.CPUs), s.Listed())
		}
		for c := range want {
			if s.CPUs[c] != want[c] {
				t.Fatalf("%s: cpu%d = %+v, want %+v", name, c, s.CPUs[c], want[c])
			}
		}
		// cpu line: sum over CPUs of (c+1)*100 (+ m) ticks, offline left out.
		n := 0
		for c := range 288 {
			if !offline[c] {
				n += (c + 1) * 100
			}
		}
		if s.Host.User != time.Duration(n)*10*time.Millisecond || s.Host.Steal != time.Duration(n+7*286)*10*time.Millisecond {
			t.Fatalf("%s: host %+v, want user %d ticks", name, s.Host, n)
		}
	}
}

// A file with no final newline, a cpu line after a long line, and an
// intr line of 1 MiB parse; a cpu line over 1 MiB is refused, not cut.
func TestParseStatEdges(t *testing.T) {
	long := "intr" + strings.Repeat(" 1234567", 150_000) + "\n"
	s, err := ParseStat(strings.NewReader(long+"cpu 1 2 3 4 5 6 7 8\ncpu3 1 2 3 4 5 6 7 8"), time.Second)
	if err != nil || s.Host.Idle != 4*time.Second || len(s.CPUs) != 4 || s.CPUs[3].Steal != 8*time.Second {
		t.Fatalf("ParseStat = %+v, %v", s, err)
	}
	huge := "cpu 1 2 3 4 5 6 7 8" + strings.Repeat(" 1", maxKeptLine) + "\n"
	if _, err := ParseStat(strings.NewReader(huge), time.Second); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a 2 MiB cpu line: %v, want a length error", err)
	}
	if _, err := ParseStat(iotest.ErrReader(io.ErrUnexpectedEOF), time.Second); err == nil {
		t.Error("a failing reader parsed")
	}
}

// 288 CPUs' worth of /proc/stat parses in well under the 1 s interval
// (it is read every interval).
func BenchmarkParseStat288(b *testing.B) {
	stat, _ := bigStat(288, nil, 4000)
	b.SetBytes(int64(len(stat)))
	for b.Loop() {
		if _, err := ParseStat(strings.NewReader(stat), 10*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}
