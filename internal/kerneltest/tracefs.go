package kerneltest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TracefsRoot is where tracefs is (mounted there if it is not).
const TracefsRoot = "/sys/kernel/tracing"

// Tracefs is a ftrace instance of a test's own (instances/netprof-NAME-PID):
// the kernel's own record of tracepoint events, the ground truth for the
// probes attached to the same tracepoints. Its buffers are per CPU, its
// clock CLOCK_MONOTONIC (bpf_ktime_get_ns's), tracing off until On.
type Tracefs struct {
	Dir    string
	events []string
}

// TraceEvent is an event to record ("irq/softirq_entry") and its filter
// ("vec == 3"; "" for none).
type TraceEvent struct {
	Name, Filter string
}

// NewTracefs creates the instance with bufferKB of buffer per CPU and
// enables events in it; t.Cleanup turns tracing off, disables them and
// removes the instance, also when the test fails. It skips (see Skip)
// where tracefs cannot be mounted or an instance made.
func NewTracefs(t testing.TB, name string, bufferKB int, events ...TraceEvent) *Tracefs {
	t.Helper()
	if _, err := os.Stat(filepath.Join(TracefsRoot, "instances")); err != nil {
		if out, err := exec.Command("mount", "-t", "tracefs", "tracefs", TracefsRoot).CombinedOutput(); err != nil {
			Skip(t, fmt.Sprintf("tracefs not available: %v: %s", err, out))
		}
	}
	tf := &Tracefs{Dir: filepath.Join(TracefsRoot, "instances", fmt.Sprintf("netprof-%s-%d", name, os.Getpid()))}
	_ = os.Remove(tf.Dir) // a leftover of this pid's earlier test
	if err := os.Mkdir(tf.Dir, 0o755); err != nil {
		Skip(t, fmt.Sprintf("create tracefs instance: %v", err))
	}
	t.Cleanup(func() {
		_ = tf.Write("tracing_on", "0")
		for _, ev := range tf.events {
			_ = tf.Write("events/"+ev+"/enable", "0")
		}
		if err := os.Remove(tf.Dir); err != nil {
			t.Errorf("remove tracefs instance: %v", err)
		}
	})
	tf.Must(t, "tracing_on", "0")
	tf.Must(t, "buffer_size_kb", strconv.Itoa(bufferKB))
	tf.Must(t, "trace_clock", "mono")
	for _, ev := range events {
		if ev.Filter != "" {
			tf.Must(t, "events/"+ev.Name+"/filter", ev.Filter)
		}
		tf.Must(t, "events/"+ev.Name+"/enable", "1")
		tf.events = append(tf.events, ev.Name)
	}
	return tf
}

// Write writes val to the instance's file.
func (tf *Tracefs) Write(file, val string) error {
	return os.WriteFile(filepath.Join(tf.Dir, file), []byte(val), 0o644)
}

// Must is Write that fails t on error.
func (tf *Tracefs) Must(t testing.TB, file, val string) {
	t.Helper()
	if err := tf.Write(file, val); err != nil {
		t.Fatalf("tracefs %s: %v", file, err)
	}
}

// On starts recording; Off stops it.
func (tf *Tracefs) On(t testing.TB)  { t.Helper(); tf.Must(t, "tracing_on", "1") }
func (tf *Tracefs) Off(t testing.TB) { t.Helper(); tf.Must(t, "tracing_on", "0") }

// CPUs returns the CPU numbers the instance has buffers for.
func (tf *Tracefs) CPUs(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(tf.Dir, "per_cpu"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "cpu")); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// CheckNoOverrun fails t if any CPU's buffer overwrote or dropped events:
// totals from the trace would then be too low.
func (tf *Tracefs) CheckNoOverrun(t testing.TB) {
	t.Helper()
	for _, cpu := range tf.CPUs(t) {
		b, err := os.ReadFile(filepath.Join(tf.Dir, "per_cpu", fmt.Sprintf("cpu%d", cpu), "stats"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "overrun" || k == "commit overrun" || k == "dropped events") && strings.TrimSpace(v) != "0" {
				t.Fatalf("tracefs cpu%d %s: %s", cpu, k, strings.TrimSpace(v))
			}
		}
	}
}

// Lines calls fn for every event line of the trace, of one CPU's buffer
// (cpu ≥ 0, in time order) or of all (cpu < 0), skipping the header.
func (tf *Tracefs) Lines(t testing.TB, cpu int, fn func(line string)) {
	t.Helper()
	p := filepath.Join(tf.Dir, "trace")
	if cpu >= 0 {
		p = filepath.Join(tf.Dir, "per_cpu", fmt.Sprintf("cpu%d", cpu), "trace")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); !strings.HasPrefix(l, "#") {
			fn(l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
