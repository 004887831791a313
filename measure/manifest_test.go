package measure

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/linkstats"
)

func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The host facts every command's manifest carries, against the kernel's
// own files.
func TestNewManifestHostFacts(t *testing.T) {
	before := time.Now().UTC()
	cfg := map[string]any{"command": "test"}
	m := NewManifest("v9", []string{"netprof", "x"}, 250*time.Millisecond, cfg)
	if m.Kernel != readTrim(t, "/proc/sys/kernel/osrelease") || m.Host != readTrim(t, "/proc/sys/kernel/hostname") {
		t.Errorf("kernel %q host %q", m.Kernel, m.Host)
	}
	if m.CPUsOnline != readTrim(t, "/sys/devices/system/cpu/online") || m.CPUsPossible != readTrim(t, "/sys/devices/system/cpu/possible") {
		t.Errorf("cpus online %q possible %q", m.CPUsOnline, m.CPUsPossible)
	}
	if m.CPUCount < 1 || m.IntervalNs != 250e6 || m.ToolVersion != "v9" || len(m.Argv) != 2 || m.Config["command"] != "test" {
		t.Errorf("manifest %+v", m)
	}
	if m.Start.Before(before.Add(-time.Second)) || m.Start.After(time.Now().UTC()) || m.Start.Location() != time.UTC {
		t.Errorf("start %v, test began %v", m.Start, before)
	}
}

// An interface of this namespace gets its queue map from /sys.
func TestInterfaceOwnNamespace(t *testing.T) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		t.Skip(err)
	}
	qs, _ := filepath.Glob("/sys/class/net/lo/queues/rx-*")
	i := Interface(linkstats.Link{Netns: st.Ino, Name: "lo", Index: 1, Driver: "loopback", MTU: 65536}, "sender", nil)
	if i.Name != "lo" || i.Role != "sender" || i.MTU != 65536 || i.Queues == nil || len(i.Queues.RxQueues) != len(qs) {
		t.Errorf("interface %+v (queues %+v; sysfs has %d rx queues)", i, i.Queues, len(qs))
	}
	if i := Interface(linkstats.Link{Netns: st.Ino + 1, Name: "lo"}, "", nil); i.Queues != nil {
		t.Errorf("another namespace without do: queues %+v", i.Queues)
	}
}
