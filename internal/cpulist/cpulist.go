// Package cpulist reads the machine's CPU sets from sysfs and converts the
// kernel's CPU list format ("0-3,8-11", see cpuset(7) "List format") to and
// from a sorted list of CPU numbers.
//
// These are the machine's CPUs, not the process's: runtime.NumCPU and
// sched_getaffinity follow the process's affinity (taskset, cgroup
// cpusets), while per-CPU BPF maps hold a value for every possible CPU and
// softirqs run on every online one.
package cpulist

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Paths of the machine's CPU lists (Documentation/ABI/testing/sysfs-devices-system-cpu).
const (
	// OnlinePath lists the CPUs online now (scheduled on, running softirqs).
	OnlinePath = "/sys/devices/system/cpu/online"
	// PossiblePath lists every CPU that could ever be online (hot-plug
	// included): the count per-CPU BPF maps are sized and read for.
	PossiblePath = "/sys/devices/system/cpu/possible"
)

// maxCPU bounds the CPU numbers Parse accepts (the kernel's NR_CPUS tops
// out at 8192 on x86-64; 1<<16 leaves room and keeps a corrupt file from
// allocating gigabytes).
const maxCPU = 1 << 16

// maxListBytes bounds how much of a list file Read takes: the longest list
// a machine with maxCPU CPUs can have ("0,2,4,...") is under 400 KiB.
const maxListBytes = 1 << 20

// List is a set of CPU numbers, ascending and without duplicates.
type List []int

// Parse parses the kernel's list format: comma-separated CPU numbers and
// inclusive ranges "a-b", surrounding white space and a trailing newline
// allowed; "" is the empty list. Ranges with a stride ("0-7:2", cpuset(7))
// are accepted too. It returns an error for anything else, for a range
// whose end is below its start, or for a CPU number above 65535.
func Parse(s string) (List, error) {
	s = strings.TrimSpace(s)
	var out List
	if s == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, stride, err := parseRange(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		for c := lo; c <= hi; c += stride {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// parseRange parses "a", "a-b" or "a-b:stride".
func parseRange(part string) (lo, hi, stride int, err error) {
	r, st, hasStride := strings.Cut(part, ":")
	a, b, isRange := strings.Cut(r, "-")
	stride = 1
	if lo, err = cpuNumber(a); err != nil {
		return 0, 0, 0, err
	}
	hi = lo
	if isRange {
		if hi, err = cpuNumber(b); err != nil {
			return 0, 0, 0, err
		}
	}
	if hasStride {
		if stride, err = strconv.Atoi(st); err != nil || stride < 1 {
			return 0, 0, 0, fmt.Errorf("bad stride in %q", part)
		}
	}
	if hi < lo || (hasStride && !isRange) {
		return 0, 0, 0, fmt.Errorf("bad range %q", part)
	}
	return lo, hi, stride, nil
}

func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxCPU-1 {
		return 0, fmt.Errorf("bad cpu number %q", s)
	}
	return n, nil
}

// String returns l in the kernel's list format with the shortest ranges
// ("0-3,8-11"; "" for an empty list). l must be sorted (as Parse returns).
func (l List) String() string {
	var b strings.Builder
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] == l[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(l[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(l[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Contains reports whether cpu is in l (binary search: l is sorted).
func (l List) Contains(cpu int) bool {
	_, ok := slices.BinarySearch(l, cpu)
	return ok
}

// Union returns the CPUs in l or m (both sorted), sorted.
func (l List) Union(m List) List {
	out := append(append(make(List, 0, len(l)+len(m)), l...), m...)
	slices.Sort(out)
	return slices.Compact(out)
}

// ReadFrom parses a list from r (at most 1 MiB of it).
func ReadFrom(r io.Reader) (List, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read cpu list: %w", err)
	}
	if len(b) > maxListBytes {
		return nil, errors.New("read cpu list: longer than 1 MiB")
	}
	return Parse(string(b))
}

// Read parses the list file at path (OnlinePath, PossiblePath, or a
// test's file). The error wraps os.ErrNotExist when the file is missing
// (sysfs not mounted).
func Read(path string) (List, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cpu list: %w", err)
	}
	defer f.Close()
	l, err := ReadFrom(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// Online returns the machine's online CPUs now (OnlinePath).
func Online() (List, error) { return Read(OnlinePath) }

// Possible returns the machine's possible CPUs (PossiblePath).
func Possible() (List, error) { return Read(PossiblePath) }

// Seen is the set of CPUs online at any point of a recording so far, for
// a sampler that turns per-CPU BPF map values (one for every possible CPU)
// into rows: a CPU that was never online has no row, one that went offline
// mid-run keeps its rows. The zero value is not usable; use NewSeen. Not
// safe for concurrent use.
type Seen struct {
	read func() (List, error)
	cpus List
	// unknown is true while the online list could not be read: then every
	// CPU is kept (rows as before the filter; analysis filters them).
	unknown bool
}

// NewSeen returns a Seen that reads OnlinePath at each Update.
func NewSeen() *Seen { return NewSeenFrom(Online) }

// NewSeenFrom returns a Seen whose Update calls read (tests pass their own).
func NewSeenFrom(read func() (List, error)) *Seen { return &Seen{read: read} }

// Update adds the CPUs online now. When the list cannot be read it returns
// the error and Keep keeps every CPU until an Update succeeds.
func (s *Seen) Update() error {
	l, err := s.read()
	if err != nil {
		s.unknown = true
		return err
	}
	s.unknown = false
	s.cpus = s.cpus.Union(l)
	return nil
}

// Keep reports whether cpu gets a row: it was online at some Update, or
// active is true (its counters moved, so it ran: it came and went between
// two Updates), in which case it is added to the set.
func (s *Seen) Keep(cpu int, active bool) bool {
	if s.unknown {
		return true
	}
	i, ok := slices.BinarySearch(s.cpus, cpu)
	if !ok && active {
		s.cpus = slices.Insert(s.cpus, i, cpu)
		return true
	}
	return ok
}

// CPUs returns the CPUs seen online so far (sorted; the caller must not
// modify it).
func (s *Seen) CPUs() List { return s.cpus }
