package cpustat

import (
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/cpulist"
)

const envMachineChild = "NETPROF_CPUSTAT_MACHINE_CHILD"

// machineSeen is what a pinned child process sees.
type machineSeen struct {
	NumCPU, OnlineCount int
	Online, Possible    string
}

// TestMachineChild is the child of TestReadMachineAffinity.
func TestMachineChild(t *testing.T) {
	if os.Getenv(envMachineChild) != "1" {
		t.Skip("child of TestReadMachineAffinity")
	}
	m := ReadMachine()
	b, _ := json.Marshal(machineSeen{runtime.NumCPU(), m.OnlineCount, m.Online.String(), m.Possible.String()})
	os.Stdout.Write(append([]byte("\nSEEN "), append(b, '\n')...)) //nolint:errcheck // read by the parent
}

// A process pinned to one CPU (as under taskset -c 1) sees one CPU in
// runtime.NumCPU, but ReadMachine still counts the machine's online CPUs:
// the same as sysfs and as /proc/stat's cpuN lines.
func TestReadMachineAffinity(t *testing.T) {
	online, err := cpulist.Online()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if s.Listed() != len(online) {
		t.Fatalf("/proc/stat lists %d CPUs, sysfs online %q", s.Listed(), online)
	}
	out := runPinned(t, online[len(online)-1])
	var seen machineSeen
	if err := json.Unmarshal([]byte(out), &seen); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	possible, _ := cpulist.Possible()
	if seen.NumCPU != 1 || seen.OnlineCount != len(online) || seen.Online != online.String() || seen.Possible != possible.String() {
		t.Errorf("pinned child saw %+v; want NumCPU 1, %d online (%s), possible %s", seen, len(online), online, possible)
	}
}

// runPinned runs TestMachineChild in a child process forked from a thread
// pinned to cpu (a child inherits its parent thread's affinity) and
// returns what it printed after "SEEN ".
func runPinned(t *testing.T, cpu int) string {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &old) //nolint:errcheck // best effort; the thread is locked
	cmd := exec.Command(os.Args[0], "-test.run=^TestMachineChild$", "-test.v")
	cmd.Env = append(os.Environ(), envMachineChild+"=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	_, after, ok := strings.Cut(string(b), "\nSEEN ")
	if !ok {
		t.Fatalf("child printed no SEEN line:\n%s", b)
	}
	line, _, _ := strings.Cut(after, "\n")
	return line
}
