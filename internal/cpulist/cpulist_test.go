package cpulist

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func seq(lo, hi int) List {
	var l List
	for c := lo; c <= hi; c++ {
		l = append(l, c)
	}
	return l
}

func TestParse(t *testing.T) {
	for in, want := range map[string]List{
		"":                nil,
		"\n":              nil,
		"0":               {0},
		"0-3\n":           {0, 1, 2, 3},
		"0-3,8-11":        {0, 1, 2, 3, 8, 9, 10, 11},
		"5,0-1":           {0, 1, 5},
		"0-1,1-2":         {0, 1, 2},
		"0-7:2":           {0, 2, 4, 6},
		" 2 , 4-5 ":       {2, 4, 5},
		"0-287":           seq(0, 287),
		"0-1,240-255\n\n": append(List{0, 1}, seq(240, 255)...),
	} {
		got, err := Parse(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "1-", "-1", "3-1", "0,,1", "1:2", "0-3:0", "65536", "0-99999999", "0 1"} {
		if l, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, l)
		}
	}
}

func TestString(t *testing.T) {
	for want, l := range map[string]List{
		"":                nil,
		"0":               {0},
		"0-1":             {0, 1},
		"0-3,8-11":        {0, 1, 2, 3, 8, 9, 10, 11},
		"0,2,4":           {0, 2, 4},
		"0-239":           seq(0, 239),
		"1,3-5,7,100-287": append(List{1, 3, 4, 5, 7}, seq(100, 287)...),
	} {
		if got := l.String(); got != want {
			t.Errorf("%v.String() = %q, want %q", l, got, want)
		}
		if back, err := Parse(want); err != nil || !slices.Equal(back, l) {
			t.Errorf("Parse(%q) = %v, %v; want %v back", want, back, err, l)
		}
	}
}

// A list as long as a machine with every other CPU of 65536 online is
// read whole; longer input is refused, not truncated.
func TestReadLong(t *testing.T) {
	var b strings.Builder
	for c := 0; c < maxCPU; c += 2 {
		if c > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
	}
	b.WriteByte('\n')
	if b.Len() < 64<<10 {
		t.Fatalf("test list is only %d bytes", b.Len())
	}
	p := filepath.Join(t.TempDir(), "online")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Read(p)
	if err != nil || len(l) != maxCPU/2 || l[len(l)-1] != maxCPU-2 {
		t.Fatalf("Read: %d CPUs (last %v), %v; want %d", len(l), l[len(l)-1:], err, maxCPU/2)
	}
	if _, err := ReadFrom(strings.NewReader(strings.Repeat("0,", maxListBytes))); err == nil {
		t.Error("ReadFrom of 2 MiB succeeded")
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

// The machine's lists: online within possible, and this process's
// affinity (what runtime.NumCPU counts) within online.
func TestMachine(t *testing.T) {
	on, err := Online()
	if err != nil {
		t.Fatal(err)
	}
	poss, err := Possible()
	if err != nil {
		t.Fatal(err)
	}
	if len(on) == 0 || len(poss) < len(on) || !slices.Equal(poss.Union(on), poss) {
		t.Errorf("online %v not within possible %v", on, poss)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() != runtime.NumCPU() || set.Count() > len(on) {
		t.Errorf("affinity %d CPUs, runtime.NumCPU %d, online %v", set.Count(), runtime.NumCPU(), on)
	}
	for c := range 1024 {
		if set.IsSet(c) && !on.Contains(c) {
			t.Errorf("cpu %d in the affinity mask but not online %v", c, on)
		}
	}
	// The kernel's own string comes back from ours.
	raw, _ := os.ReadFile(OnlinePath)
	if got, want := on.String(), strings.TrimSpace(string(raw)); got != want {
		t.Errorf("String() = %q, file says %q", got, want)
	}
}

// Seen: a CPU online at any Update keeps its rows after it goes offline;
// one never online has none unless it counted something; an unreadable
// list keeps everything.
func TestSeen(t *testing.T) {
	lists := []List{{0, 1}, {0}, {0, 2}}
	var fail error
	i := 0
	s := NewSeenFrom(func() (List, error) {
		if fail != nil {
			return nil, fail
		}
		l := lists[min(i, len(lists)-1)]
		i++
		return l, nil
	})
	keep := func(active bool, want ...int) {
		t.Helper()
		var got []int
		for c := range 240 {
			if s.Keep(c, active && c == 7) {
				got = append(got, c)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("kept %v, want %v", got, want)
		}
	}
	for _, step := range []struct {
		active bool
		want   []int
	}{
		{false, []int{0, 1}},       // start: 0-1
		{false, []int{0, 1}},       // 1 went offline: kept
		{true, []int{0, 1, 2, 7}},  // 2 came online; 7 counted between two reads
		{false, []int{0, 1, 2, 7}}, // 7 stays
	} {
		if err := s.Update(); err != nil {
			t.Fatal(err)
		}
		keep(step.active, step.want...)
	}
	fail = errors.New("no sysfs")
	if err := s.Update(); err == nil {
		t.Fatal("Update succeeded with a failing reader")
	}
	keep(false, seq(0, 239)...)
	fail = nil
	if err := s.Update(); err != nil {
		t.Fatal(err)
	}
	keep(false, 0, 1, 2, 7)
	if got := s.CPUs().String(); got != "0-2,7" {
		t.Errorf("CPUs() = %q, want 0-2,7", got)
	}
}
