package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/trace"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// Counters add up the rows of every observed interval; a renamed interface
// gets a new series under the same ifindex.
func TestObserveSumsRows(t *testing.T) {
	e := New()
	u := func(v uint64) *uint64 { return &v }
	for _, name := range []string{"eth0", "eth0", "uplink"} {
		e.Observe(&trace.Interval{
			Ifaces: []trace.IfaceRow{{Netns: 1, Ifindex: 2, Ifname: name, Driver: "mana", RxBytes: 1000, TxBytes: 10, BpfRxBytes: u(999)}},
			CPUs:   []trace.CPURow{{CPU: 1, NetRxSoftirqNs: u(250_000_000), NetRxSoftirqCount: u(5)}},
		})
	}
	if got := testutil.ToFloat64(e.rxB.WithLabelValues("1", "2", "eth0", "mana")); got != 2000 {
		t.Errorf("eth0 rx %v, want 2000", got)
	}
	if got := testutil.ToFloat64(e.rxB.WithLabelValues("1", "2", "uplink", "mana")); got != 1000 {
		t.Errorf("uplink rx %v, want 1000", got)
	}
	if got := testutil.ToFloat64(e.bpfR.WithLabelValues("1", "2", "eth0", "mana")); got != 1998 {
		t.Errorf("bpf rx %v", got)
	}
	if got := testutil.ToFloat64(e.softirq.WithLabelValues("1")); got != 0.75 {
		t.Errorf("softirq seconds %v, want 0.75", got)
	}
	if got := testutil.ToFloat64(e.intervals); got != 3 {
		t.Errorf("intervals %v", got)
	}
}

func TestServeClose(t *testing.T) {
	e := New()
	e.Observe(&trace.Interval{Ifaces: []trace.IfaceRow{{Ifname: "lo", RxBytes: 42}}})
	s, err := Serve("127.0.0.1:0", e, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `netprof_iface_rx_bytes_total{driver="",ifindex="0",ifname="lo",netns="0"} 42`) {
		t.Errorf("scrape lacks the counter:\n%s", body)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := Serve(s.Addr()+"x", e, nil); err == nil {
		t.Error("bad address accepted")
	}
}
