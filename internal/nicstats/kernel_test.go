package nicstats

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// ethtoolS runs `ethtool -S ifname` in the host's namespace and parses its
// "name: value" lines.
func ethtoolS(t *testing.T, h *testbed.Host, ifname string) map[string]uint64 {
	t.Helper()
	out, err := h.Exec(context.Background(), "ethtool", "-S", ifname).Output()
	if err != nil {
		t.Fatalf("ethtool -S %s: %v", ifname, err)
	}
	m := map[string]uint64{}
	for _, l := range strings.Split(string(out), "\n")[1:] {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ": ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("ethtool -S line %q: %v", l, err)
		}
		m[k] = n
	}
	return m
}

// The statistics read through the sampler's ethtool socket inside the
// bed's namespace are the values `ethtool -S` prints there (veth: per-queue
// XDP and drop counters, which no traffic here moves), and an interval's
// rows cover every one of them but peer_ifindex, at zero change.
func TestVethStatsEqualEthtoolS(t *testing.T) {
	testbedtest.Require(t)
	if _, err := exec.LookPath("ethtool"); err != nil {
		if os.Getenv("NETPROF_REQUIRE_KERNEL_TESTS") == "1" {
			t.Fatal("ethtool not installed (apt-get install ethtool) but NETPROF_REQUIRE_KERNEL_TESTS=1")
		}
		t.Skip("ethtool not installed")
	}
	bed := testbedtest.New(t, testbed.Options{})
	h := bed.A()
	s, err := New([]Link{{Netns: h.NetnsInode(), Do: h.Do, Ifname: h.Link}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.read[0](h.Link)
	if err != nil {
		t.Fatal(err)
	}
	want := ethtoolS(t, h, h.Link)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%d statistics read, ethtool -S prints %d: %v vs %v", len(got), len(want), got, want)
	}
	for k, v := range want {
		if k == "peer_ifindex" {
			continue
		}
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: read %d (present %v), ethtool -S %d", k, g, ok, v)
		}
	}
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	var iv trace.Interval
	if err := s.Sample(&iv, 1e9); err != nil {
		t.Fatal(err)
	}
	if len(iv.NICs) != len(want)-1 {
		t.Errorf("%d rows, want one per statistic but peer_ifindex (%d)", len(iv.NICs), len(want)-1)
	}
	for _, r := range iv.NICs {
		if r.Ifname != h.Link || r.Netns != h.NetnsInode() || r.Queue == nil {
			t.Errorf("row %+v: want %s in netns %d with its queue", r, h.Link, h.NetnsInode())
		}
	}
}
