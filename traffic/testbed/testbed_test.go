package testbed_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
	"golang.org/x/sys/unix"
)

func nsExists(t *testing.T, name string) bool {
	t.Helper()
	_, err := os.Lstat(filepath.Join(testbed.NetnsDir, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestNewTrafficClose(t *testing.T) {
	b := testbedtest.New(t, testbed.Options{})
	a, bh := b.A(), b.B()
	ctx := context.Background()
	for _, h := range []*testbed.Host{a, bh} {
		if !nsExists(t, h.Name) {
			t.Fatalf("%s missing under %s", h.Name, testbed.NetnsDir)
		}
		out, err := exec.Command("ip", "-n", h.Name, "-o", "addr", "show", "dev", h.Link).CombinedOutput()
		if err != nil {
			t.Fatalf("ip -n %s addr: %v: %s", h.Name, err, out)
		}
		if !strings.Contains(string(out), h.Prefix.String()) {
			t.Errorf("ip -n %s addr shows %q, want %s", h.Name, out, h.Prefix)
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(testbed.NetnsDir, h.Name), &st); err != nil {
			t.Fatal(err)
		}
		if h.NetnsInode() != st.Ino || h.Ifindex() <= 0 {
			t.Errorf("%s: inode %d (want %d), ifindex %d", h.Name, h.NetnsInode(), st.Ino, h.Ifindex())
		}
		// Exec runs inside: the namespace's own interface list.
		out, err = h.Exec(ctx, "cat", "/proc/net/dev").CombinedOutput()
		if err != nil || !strings.Contains(string(out), h.Link+":") {
			t.Errorf("exec in %s: %v: %s", h.Name, err, out)
		}
	}
	if a.Addr != testbed.DefaultAddrA.Addr() || bh.Addr != testbed.DefaultAddrB.Addr() {
		t.Errorf("addresses %s, %s", a.Addr, bh.Addr)
	}

	total, elapsed, rx := runAB(t, b, 2)
	t.Logf("veth A->B 2 streams: %d payload bytes in %v = %.2f Gbit/s (app, whole run); B %s rx %d bytes (+%.1f%% headers)",
		total, elapsed.Round(time.Millisecond), float64(total)*8/elapsed.Seconds()/1e9, bh.Link, rx,
		100*(float64(rx)-float64(total))/float64(total))

	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, h := range []*testbed.Host{a, bh} {
		if nsExists(t, h.Name) {
			t.Errorf("%s still exists after Close", h.Name)
		}
		if err := h.Do(func() error { return nil }); err == nil {
			t.Errorf("Do after Close succeeded")
		}
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// runAB sends streams from A to B for 1 s with this package's traffic
// generator and checks the byte counts against each other and against B's
// veth counter. It returns payload bytes, the time from the end of the
// handshakes to the end of the run, and veth rx bytes.
func runAB(t *testing.T, b *testbed.Bed, streams int) (uint64, time.Duration, uint64) {
	t.Helper()
	total, elapsed, rx, _ := runABMid(t, b, streams)
	return total, elapsed, rx
}

// runABMid is runAB that also returns B's received L2 rate (netlink
// rx_bytes, bit/s) between 0.3 s and 0.9 s into the 1 s run: the steady
// middle, which neither start-up nor a FIN retransmitted behind a full
// queue at the end (Run then returns a second late) can move.
func runABMid(t *testing.T, b *testbed.Bed, streams int) (uint64, time.Duration, uint64, float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rxBefore := rxBytes(t, b.B())
	ln, err := b.B().Listen("tcp", net.JoinHostPort(b.B().Addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := traffic.Config{Streams: streams, Duration: time.Second, BlockSize: traffic.DefaultBlockSize}
	r := traffic.NewReceiver(ln, cfg)
	serveErr := make(chan error, 1)
	go func() { serveErr <- r.Serve(ctx) }()
	s := traffic.NewSender(b.A().Dial, ln.Addr().String(), cfg)
	// The handshakes are not part of the rate: behind a full shaper queue
	// a dropped SYN costs a 1 s retransmit (seen: 2.0 s for a 1 s run,
	// 0.49 Gbit/s through a 1 Gbit/s shaper).
	if err := s.Connect(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
	start := time.Now()
	mid := make(chan float64, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		a := rxBytesErr(b.B())
		t0 := time.Now()
		time.Sleep(600 * time.Millisecond)
		z := rxBytesErr(b.B())
		mid <- float64(z-a) * 8 / time.Since(t0).Seconds()
	}()
	runErr := s.Run(ctx)
	elapsed := time.Since(start)
	midBps := <-mid
	if err := <-serveErr; err != nil || runErr != nil {
		t.Fatalf("run: %v; serve: %v", runErr, err)
	}
	snd, rcv := s.Sample(), r.Sample()
	if len(snd) != streams || len(rcv) != streams {
		t.Fatalf("%d sender, %d receiver samples", len(snd), len(rcv))
	}
	var total uint64
	for i := range snd {
		if snd[i].AppBytes != rcv[i].AppBytes || snd[i].AppBytes == 0 {
			t.Errorf("stream %d: sent %d, received %d", i, snd[i].AppBytes, rcv[i].AppBytes)
		}
		if from, _ := netip.ParseAddrPort(snd[i].LocalAddr); from.Addr() != b.A().Addr {
			t.Errorf("stream %d left from %s, not A's %s", i, snd[i].LocalAddr, b.A().Addr)
		}
		total += snd[i].AppBytes
	}
	rx := rxBytes(t, b.B()) - rxBefore
	if rx < total {
		t.Errorf("%s rx grew by %d bytes, less than the %d payload bytes", b.B().Link, rx, total)
	}
	return total, elapsed, rx, midBps
}

// rxBytesErr is rxBytes for a goroutine that cannot fail the test: 0 when
// the counters cannot be read (the rate then comes out wrong, and the test
// fails on it).
func rxBytesErr(h *testbed.Host) uint64 {
	nh, err := h.Handle()
	if err != nil {
		return 0
	}
	defer nh.Close()
	l, err := nh.LinkByIndex(h.Ifindex())
	if err != nil || l.Attrs().Statistics == nil {
		return 0
	}
	return l.Attrs().Statistics.RxBytes
}

func rxBytes(t *testing.T, h *testbed.Host) uint64 {
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
	return l.Attrs().Statistics.RxBytes
}

func TestIPv6(t *testing.T) {
	b := testbedtest.New(t, testbed.Options{
		AddrA: netip.MustParsePrefix("2001:2::1/64"),
		AddrB: netip.MustParsePrefix("2001:2::2/64"),
	})
	runAB(t, b, 1) // works at once: addresses are added without DAD
}

func TestDoSwitchesThread(t *testing.T) {
	b := testbedtest.New(t, testbed.Options{})
	var st unix.Stat_t
	if err := b.A().Do(func() error { return unix.Stat("/proc/thread-self/ns/net", &st) }); err != nil {
		t.Fatal(err)
	}
	if st.Ino != b.A().NetnsInode() {
		t.Errorf("inside Do the thread is in netns %d, want %d", st.Ino, b.A().NetnsInode())
	}
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &self); err != nil {
		t.Fatal(err)
	}
	if self.Ino == b.A().NetnsInode() {
		t.Error("the process's main thread is in the test namespace")
	}
	if _, err := b.A().Listen("tcp", "localhost:0"); err == nil {
		t.Error("Listen accepted a host name")
	}
}

func TestNewInvalidOptions(t *testing.T) {
	testbedtest.Require(t)
	for _, opt := range []testbed.Options{
		{Prefix: "np-bad/name"},
		{Prefix: "averyveryverylongprefix"},
		{Prefix: "npinv", AddrA: netip.MustParsePrefix("10.0.0.1/30"), AddrB: netip.MustParsePrefix("10.0.0.2/30")},
		{Prefix: "npinv", AddrA: netip.MustParsePrefix("198.18.0.1/30"), AddrB: netip.MustParsePrefix("198.18.0.1/30")},
		{Prefix: "npinv", AddrA: netip.MustParsePrefix("198.18.0.1/30"), AddrB: netip.MustParsePrefix("198.18.1.2/30")},
		{Prefix: "npinv", AddrA: netip.MustParsePrefix("198.18.0.1/30")},
		{Prefix: "npinv", Queues: -1},
		{Prefix: "npinv", Queues: testbed.MaxQueues + 1},
		{Prefix: "npinv", Queues: 2, Delay: time.Millisecond},
	} {
		b, err := testbed.New(context.Background(), opt)
		if err == nil {
			b.Close()
			t.Errorf("New(%+v) succeeded", opt)
			continue
		}
		if nsExists(t, opt.Prefix+"-a") || nsExists(t, opt.Prefix+"-b") {
			t.Errorf("New(%+v) left a namespace behind", opt)
		}
	}
}

// A name clash on the second namespace fails New after the first was made:
// the first must be removed, the pre-existing one left alone.
func TestNewNameClash(t *testing.T) {
	testbedtest.Require(t)
	prefix := randomPrefix(t, "npc")
	out, err := exec.Command("ip", "netns", "add", prefix+"-b").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", prefix+"-b").Run() })
	_, err = testbed.New(context.Background(), testbed.Options{Prefix: prefix})
	if err == nil || !strings.Contains(err.Error(), prefix+"-b") {
		t.Fatalf("New with a clashing name: %v", err)
	}
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("error %v does not wrap fs.ErrExist", err)
	}
	if nsExists(t, prefix+"-a") {
		t.Error("first namespace left behind")
	}
	if !nsExists(t, prefix+"-b") {
		t.Error("pre-existing namespace was deleted")
	}
}

func randomPrefix(t *testing.T, base string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return base + hex.EncodeToString(b[:])
}

func TestCleanup(t *testing.T) {
	b := testbedtest.New(t, testbed.Options{})
	prefix := strings.TrimSuffix(b.A().Name, "-a")
	// A stale namespace: same prefix, nobody holds it.
	stale := prefix + "x-a"
	if out, err := exec.Command("ip", "netns", "add", stale).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", stale).Run() })
	removed, err := testbed.Cleanup(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != stale {
		t.Errorf("Cleanup removed %v, want [%s]", removed, stale)
	}
	if !nsExists(t, b.A().Name) || !nsExists(t, b.B().Name) {
		t.Error("Cleanup removed a live bed")
	}
	if _, err := testbed.Cleanup(""); err == nil {
		t.Error("Cleanup with an empty prefix succeeded")
	}
}

// CleanupLeftovers removes a bed whose marker names a dead process and
// whose namespaces nobody uses (with its marker); it leaves a live bed, a
// dead process's bed whose namespace is still held open, and namespaces
// without a marker.
func TestCleanupLeftovers(t *testing.T) {
	live := testbedtest.New(t, testbed.Options{})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprint(gone.Process.Pid)
	base := fmt.Sprintf("nl%06x", uint32(time.Now().UnixNano())&0xffffff)
	stale, held, unmarked := base+"s", base+"h", base+"u"
	for _, n := range []string{stale + "-a", stale + "-b", held + "-a", unmarked + "-a"} {
		if out, err := exec.Command("ip", "netns", "add", n).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", n, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n).Run() })
	}
	for _, p := range []string{stale, held} {
		if err := os.WriteFile(filepath.Join(testbed.MarkerDir, p), []byte(dead+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(filepath.Join(testbed.MarkerDir, p)) })
	}
	f, err := os.Open(filepath.Join(testbed.NetnsDir, held+"-a"))
	if err != nil {
		t.Fatal(err)
	}
	removed, err := testbed.CleanupLeftovers()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if !slices.Equal(removed, []string{stale + "-a", stale + "-b"}) {
		t.Errorf("removed %v, want the stale bed's two namespaces", removed)
	}
	for n, want := range map[string]bool{stale + "-a": false, stale + "-b": false, held + "-a": true, unmarked + "-a": true,
		live.A().Name: true, live.B().Name: true} {
		if nsExists(t, n) != want {
			t.Errorf("namespace %s exists %v, want %v", n, !want, want)
		}
	}
	if _, err := os.Stat(filepath.Join(testbed.MarkerDir, stale)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale marker: %v, want removed", err)
	}
	f.Close()
	if removed, err := testbed.CleanupLeftovers(); err != nil || !slices.Equal(removed, []string{held + "-a"}) {
		t.Errorf("after its descriptor closed: removed %v (%v), want %s-a", removed, err, held)
	}
}
