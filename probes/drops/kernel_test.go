package drops_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/drops"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// load attaches the probe (closed when the test ends).
func load(t *testing.T) *drops.Reader {
	t.Helper()
	kerneltest.RequireRoot(t)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	spec, err := drops.Spec()
	if err != nil {
		t.Fatal(err)
	}
	l, err := loader.Load(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, st := range l.Status {
		if !st.Attached {
			t.Fatalf("%s (%s) not attached: %s", st.Name, st.Hook, st.Reason)
		}
	}
	r, err := drops.NewReader(l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// kfreeTrace is a tracefs instance recording skb:kfree_skb.
func kfreeTrace(t *testing.T) string {
	t.Helper()
	root := "/sys/kernel/tracing"
	if _, err := os.Stat(filepath.Join(root, "instances")); err != nil {
		if out, err := exec.Command("mount", "-t", "tracefs", "tracefs", root).CombinedOutput(); err != nil {
			kerneltest.Skip(t, fmt.Sprintf("tracefs not available: %v: %s", err, out))
		}
	}
	dir := filepath.Join(root, "instances", fmt.Sprintf("netprof-drops-%d", os.Getpid()))
	_ = os.Remove(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		kerneltest.Skip(t, fmt.Sprintf("create tracefs instance: %v", err))
	}
	w := func(f, v string) error { return os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644) }
	t.Cleanup(func() {
		_ = w("tracing_on", "0")
		_ = w("events/skb/kfree_skb/enable", "0")
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove tracefs instance: %v", err)
		}
	})
	for _, c := range [][2]string{{"tracing_on", "0"}, {"buffer_size_kb", "8192"}, {"events/skb/kfree_skb/enable", "1"}, {"tracing_on", "1"}} {
		if err := w(c[0], c[1]); err != nil {
			t.Fatalf("tracefs %s: %v", c[0], err)
		}
	}
	return dir
}

// traceReasons counts the instance's kfree_skb events by the reason they
// print ("reason: NO_SOCKET"); "" for lines without one (before 5.17).
func traceReasons(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "tracing_on"), []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "trace"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "#") || !strings.Contains(l, "kfree_skb:") {
			continue
		}
		_, reason, _ := strings.Cut(l, "reason: ")
		out[strings.Fields(reason + " ")[0]]++
	}
	return out
}

// UDP datagrams to a port nobody listens on are dropped by the receiving
// namespace's UDP with reason NO_SOCKET: the probe counts at least the
// datagrams the test sent (its own count of sends that succeeded), and (over the same window, tracefs enabled
// before the first read and read after the last) as many NO_SOCKET drops
// as tracefs's own skb:kfree_skb events, within the few a window edge may
// hold (other processes' drops land in either, not both, only there).
func TestNoSocketDropsMatchTracefs(t *testing.T) {
	const tries = 300
	bed := testbedtest.New(t, testbed.Options{})
	r := load(t)
	tr := kfreeTrace(t)
	s := drops.NewSampler(r)
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	c, err := bed.A().Dial(context.Background(), "udp", net.JoinHostPort(bed.B().Addr.String(), "9"))
	if err != nil {
		t.Fatal(err)
	}
	sent := 0 // datagrams that left: the app's own count
	for range tries {
		if _, err := c.Write([]byte("netprof drops test")); err != nil {
			// The port-unreachable ICMP comes back as ECONNREFUSED on
			// the next send of a connected socket, which then sends
			// nothing.
			if !strings.Contains(err.Error(), "refused") {
				t.Fatal(err)
			}
			continue
		}
		sent++
	}
	c.Close()
	time.Sleep(200 * time.Millisecond)
	var iv trace.Interval
	if err := s.Sample(&iv, 1e9); err != nil {
		t.Fatal(err)
	}
	byReason := map[string]uint64{}
	for _, d := range iv.Drops {
		byReason[d.Reason] += d.Packets
	}
	tf := traceReasons(t, tr)
	got, want := byReason["NO_SOCKET"], tf["NO_SOCKET"]
	t.Logf("%d datagrams sent; probe drops by reason %v; tracefs %v", sent, byReason, tf)
	if _, ok := byReason[drops.ReasonUnknown]; ok {
		// A kernel without reasons: the datagrams count as unknown.
		got, want = byReason[drops.ReasonUnknown], tf[""]
	}
	if got < uint64(sent) || want < uint64(sent) {
		t.Errorf("NO_SOCKET drops: probe %d, tracefs %d; want at least the %d datagrams sent", got, want, sent)
	}
	if diff := int64(got) - int64(want); diff < -5 || diff > 5 {
		t.Errorf("NO_SOCKET drops: probe %d, tracefs %d over the same window", got, want)
	}
}
