package testbed_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// connectTimes dials B from A n times and returns the TCP connect times
// (SYN out to SYN-ACK back: one round trip), sorted.
func connectTimes(t *testing.T, b *testbed.Bed, n int) []time.Duration {
	t.Helper()
	ln, err := b.B().Listen("tcp", net.JoinHostPort(b.B().Addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-accepted }()
	var out []time.Duration
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		start := time.Now()
		c, err := b.A().Dial(ctx, "tcp", ln.Addr().String())
		el := time.Since(start)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		out = append(out, el)
	}
	slices.Sort(out)
	return out
}

// Through the delay line a TCP handshake takes 2×delay plus the line's
// own few hundred µs (LAB: 0.2–0.5 ms): never less, and at best not much
// more (the median is only logged: a loaded machine stretches it). A
// 4-stream transfer passes whole.
func TestDelayedRTTAndThroughput(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 10 * time.Millisecond} {
		t.Run(d.String(), func(t *testing.T) {
			b := testbedtest.New(t, testbed.Options{Delay: d})
			if b.A().Addr != testbed.DefaultAddrA.Addr() || b.B().Addr != testbed.DefaultAddrB.Addr() {
				t.Errorf("addresses %s, %s", b.A().Addr, b.B().Addr)
			}
			if b.Delay() != d {
				t.Errorf("Delay() = %v", b.Delay())
			}
			for _, h := range []*testbed.Host{b.A(), b.B()} {
				out, err := exec.Command("ip", "-n", h.Name, "-d", "link", "show", "dev", h.Link).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "tun") {
					t.Errorf("%s %s is not a TUN: %v: %s", h.Name, h.Link, err, out)
				}
				if h.Ifindex() <= 0 {
					t.Errorf("%s: ifindex %d", h.Name, h.Ifindex())
				}
			}
			ct := connectTimes(t, b, 20)
			min, med := ct[0], ct[len(ct)/2]
			t.Logf("one-way delay %v: TCP connect time min %v, median %v, max %v (line overhead %v at min)",
				d, min, med, ct[len(ct)-1], min-2*d)
			if min < 2*d {
				t.Errorf("connect took %v, less than 2×delay %v", min, 2*d)
			}
			if min > 2*d+time.Millisecond+2*d/10 {
				t.Errorf("fastest connect %v, want within 2×delay %v + 10%% + 1 ms", min, 2*d)
			}
			total, elapsed, rx := runAB(t, b, 4)
			st, _ := b.DelayStats()
			t.Logf("delay line %v one way, 4 streams A->B: %.2f Gbit/s (app, whole run, incl. slow start); B %s rx %d bytes; A %s tx_dropped %d; line %+v",
				d, float64(total)*8/elapsed.Seconds()/1e9, b.B().Link, rx, b.A().Link, txDropped(t, b.A()), st)
			if st.AB.Packets == 0 || st.BA.Packets == 0 {
				t.Errorf("line forwarded nothing: %+v", st)
			}
		})
	}
}

// A queue too small for the bandwidth-delay product drops packets; the
// line counts them and TCP recovers (the transfer still completes).
func TestDelayedQueueDrops(t *testing.T) {
	b := testbedtest.New(t, testbed.Options{Delay: 10 * time.Millisecond, DelayQueueBytes: 256 << 10})
	runAB(t, b, 2)
	st, ok := b.DelayStats()
	t.Logf("256 KiB queue, 10 ms: %+v", st)
	if !ok || st.AB.Dropped == 0 || st.AB.DroppedBytes == 0 {
		t.Errorf("no drops counted in a 256 KiB queue at 10 ms: %+v", st)
	}
}

// Close stops the line, removes the TUNs with the namespaces, and a second
// Close is a no-op. (TestMain checks no descriptor or goroutine is left.)
func TestDelayedClose(t *testing.T) {
	testbedtest.Require(t)
	b, err := testbed.New(context.Background(), testbed.Options{Delay: time.Millisecond, AddrA: netip.MustParsePrefix("2001:2::1/64"), AddrB: netip.MustParsePrefix("2001:2::2/64")})
	if err != nil {
		t.Fatal(err)
	}
	runAB(t, b, 1)
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, h := range []*testbed.Host{b.A(), b.B()} {
		if nsExists(t, h.Name) {
			t.Errorf("%s left behind", h.Name)
		}
	}
	if err := b.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := os.Stat("/sys/class/net/" + b.A().Link); err == nil {
		t.Errorf("%s exists in the caller's namespace", b.A().Link)
	}
}

// Sysctls are set inside the namespaces only.
func TestSysctls(t *testing.T) {
	const key, val = "net.ipv4.tcp_wmem", "4096\t16384\t67108864"
	outside, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem")
	if err != nil {
		t.Fatal(err)
	}
	b := testbedtest.New(t, testbed.Options{Sysctls: map[string]string{key: "4096 16384 67108864"}})
	for _, h := range []*testbed.Host{b.A(), b.B()} {
		got, err := h.Sysctl(key)
		if err != nil || got != val {
			t.Errorf("%s: %s = %q, %v; want %q", h.Name, key, got, err, val)
		}
	}
	if now, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); string(now) != string(outside) {
		t.Errorf("caller's %s changed from %q to %q", key, outside, now)
	}
	if _, err := b.A().Sysctl("kernel.hostname"); err == nil {
		t.Error("Sysctl read a key outside net.")
	}
}

func txDropped(t *testing.T, h *testbed.Host) uint64 {
	t.Helper()
	nh, err := h.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	l, err := nh.LinkByIndex(h.Ifindex())
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Statistics.TxDropped
}
