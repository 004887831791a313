package testbed_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// A 1 Gbit/s HTB on the router caps a 4-stream transfer near 1 Gbit/s and
// drops in its bfifo; the three namespaces go away on Close.
func TestRoutedShaped(t *testing.T) {
	testbedtest.Require(t)
	b, err := testbed.NewRouted(context.Background(), testbed.RoutedOptions{RateBps: 1e9, QueueBytes: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if b.A().Addr != testbed.RoutedAddrA.Addr() || b.B().Addr != testbed.RoutedAddrB.Addr() || b.R() == nil {
		t.Fatalf("hosts %s, %s, router %v", b.A().Addr, b.B().Addr, b.R())
	}
	out, err := exec.Command("tc", "-n", b.R().Name, "qdisc", "show", "dev", testbed.RouterLinkB).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "htb 1: root") || !strings.Contains(string(out), "bfifo 10: parent 1:10 limit 128Kb") {
		t.Errorf("tc qdisc show: %v: %s", err, out)
	}
	out, err = exec.Command("tc", "-n", b.R().Name, "class", "show", "dev", testbed.RouterLinkB).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rate 1Gbit ceil 1Gbit burst 26") {
		t.Errorf("tc class show: %v: %s", err, out)
	}
	total, elapsed, _, midBps := runABMid(t, b, 4)
	gbps := float64(total) * 8 / elapsed.Seconds() / 1e9
	drops, err := b.QdiscDrops()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("routed, HTB 1 Gbit/s, bfifo 128 KiB, 4 streams: %.3f Gbit/s (app, whole run, %v); B's rx %.3f Gbit/s (L2, 0.3-0.9 s); qdisc drops %d",
		gbps, elapsed.Round(time.Millisecond), midBps/1e9, drops)
	// The steady middle of the run: near the rate (L2 bytes, a little
	// above the shaper's count at most), never far above. The whole-run
	// figure can halve when a FIN is retransmitted behind the full queue
	// (0.40 Gbit/s seen in CI), so it only must not exceed the rate.
	if midBps > 1.05e9 || midBps < 0.7e9 || gbps > 1.0 {
		t.Errorf("%.3f Gbit/s in the middle of the run (%.3f whole run) through a 1 Gbit/s shaper", midBps/1e9, gbps)
	}
	if drops == 0 {
		t.Error("no qdisc drops")
	}
	names := []string{b.A().Name, b.B().Name, b.R().Name}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if nsExists(t, n) {
			t.Errorf("%s left behind", n)
		}
	}
}

// Unshaped, the router forwards at veth speed.
func TestRoutedUnshaped(t *testing.T) {
	testbedtest.Require(t)
	b, err := testbed.NewRouted(context.Background(), testbed.RoutedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	total, elapsed, _ := runAB(t, b, 2)
	t.Logf("routed, unshaped, 2 streams: %.2f Gbit/s", float64(total)*8/elapsed.Seconds()/1e9)
	if _, err := b.QdiscDrops(); err != nil {
		t.Error(err)
	}
}

func TestRoutedInvalid(t *testing.T) {
	testbedtest.Require(t)
	for _, o := range []testbed.RoutedOptions{{QueueBytes: 1000}, {Prefix: "bad/prefix"}, {Sysctls: map[string]string{"kernel.x": "1"}}} {
		if b, err := testbed.NewRouted(context.Background(), o); err == nil {
			b.Close()
			t.Errorf("%+v accepted", o)
		}
	}
}
