package drops_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/probes/drops"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// load attaches the probe (closed when the test ends).
func load(t *testing.T) *drops.Reader {
	t.Helper()
	spec, err := drops.Spec()
	r, err := drops.NewReader(kerneltest.Load(t, spec, err))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// kfreeTrace is a tracefs instance recording skb:kfree_skb, on.
func kfreeTrace(t *testing.T) *kerneltest.Tracefs {
	t.Helper()
	tf := kerneltest.NewTracefs(t, "drops", 8192, kerneltest.TraceEvent{Name: "skb/kfree_skb"})
	tf.On(t)
	return tf
}

// traceReasons stops the instance and counts its kfree_skb events by the
// reason they print ("reason: NO_SOCKET"); "" for lines without one
// (before 5.17).
func traceReasons(t *testing.T, tf *kerneltest.Tracefs) map[string]uint64 {
	t.Helper()
	tf.Off(t)
	out := map[string]uint64{}
	tf.Lines(t, -1, func(l string) {
		if !strings.Contains(l, "kfree_skb:") {
			return
		}
		_, reason, _ := strings.Cut(l, "reason: ")
		out[strings.Fields(reason + " ")[0]]++
	})
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
