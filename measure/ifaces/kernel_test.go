package ifaces_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/ifaces"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// openNS opens discovery handles inside a test-bed host's namespace.
func openNS(t *testing.T, h *testbed.Host) *linkstats.NS {
	t.Helper()
	ns, err := linkstats.OpenNS(h.Do, h.NetnsInode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	return ns
}

// transfer sends from one host to the other for d with 2 streams and
// returns the payload bytes both ends agree on.
func transfer(t *testing.T, from, to *testbed.Host, d time.Duration) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, err := to.Listen("tcp", net.JoinHostPort(to.Addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := traffic.Config{Streams: 2, Duration: d, BlockSize: traffic.DefaultBlockSize}
	r := traffic.NewReceiver(ln, cfg)
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	s := traffic.NewSender(from.Dial, ln.Addr().String(), cfg)
	runErr := s.Run(ctx)
	if err := <-done; err != nil || runErr != nil {
		t.Fatalf("send: %v; receive: %v", runErr, err)
	}
	var sent, recv uint64
	for _, st := range s.Sample() {
		sent += st.AppBytes
	}
	for _, st := range r.Sample() {
		recv += st.AppBytes
	}
	if sent != recv || sent == 0 {
		t.Fatalf("sent %d, received %d", sent, recv)
	}
	return sent
}

// probes loads the netdev probe when this host can, else skips BPF checks
// (a failure when kernel tests are required).
func loadNetdev(t *testing.T) *netdev.Reader {
	t.Helper()
	spec, err := netdev.Spec(netdev.Options{})
	r, err := netdev.NewReader(kerneltest.Load(t, spec, err))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recorder counts the selected interfaces of ns with netlink, the netdev
// probe and the fold, like `netprof watch`.
type recorder struct {
	rec  *measure.Recorder
	rows []trace.IfaceRow
}

func newRecorder(tr *ifaces.Tracker, nd *netdev.Reader) *recorder {
	r := &recorder{}
	r.rec = &measure.Recorder{
		Period: 200 * time.Millisecond,
		Samplers: []measure.Sampler{&ifaces.LinkSampler{T: tr}, netdev.NewSampler(nd, tr.Scope),
			&ifaces.FoldSampler{T: tr}},
		OnInterval: func(_ time.Time, iv *trace.Interval) { r.rows = append(r.rows, iv.Ifaces...) },
	}
	return r
}

// during records while fn runs and returns the summed rows per ifindex.
func (r *recorder) during(t *testing.T, fn func()) map[int32]trace.IfaceRow {
	t.Helper()
	r.rows = nil
	if _, err := r.rec.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.rec.Run(ctx) }()
	fn()
	time.Sleep(300 * time.Millisecond) // let the last ACKs and counters land
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sum := map[int32]trace.IfaceRow{}
	for _, row := range r.rows {
		s := sum[row.Ifindex]
		s.Ifname, s.Ifindex = row.Ifname, row.Ifindex
		s.RxBytes += row.RxBytes
		s.TxBytes += row.TxBytes
		if row.BpfRxBytes != nil {
			rx, tx := *row.BpfRxBytes+ptrVal(s.BpfRxBytes), *row.BpfTxBytes+ptrVal(s.BpfTxBytes)
			s.BpfRxBytes, s.BpfTxBytes = &rx, &tx
		}
		sum[row.Ifindex] = s
	}
	return sum
}

func ptrVal(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// Macvlan and bridge over veth: B's traffic crosses two interfaces that
// both count it; the plan counts one, and the counted bytes are the
// generator's payload (1.00x within 1%) in both directions, from netlink and
// from the BPF probe alike.
func TestCountedOnceStacked(t *testing.T) {
	nd := loadNetdev(t)
	for _, shape := range []string{"macvlan", "bridge"} {
		t.Run(shape, func(t *testing.T) {
			bed := testbedtest.New(t, testbed.Options{})
			ctx := context.Background()
			var upper int
			var err error
			if shape == "macvlan" {
				upper, err = bed.B().AddMacvlan(ctx, "mv0")
			} else {
				upper, err = bed.B().AddBridge(ctx, "br0")
			}
			if err != nil {
				t.Fatal(err)
			}
			ns := openNS(t, bed.B())
			links, err := linkstats.Discover(ns)
			if err != nil {
				t.Fatal(err)
			}
			groups := ifaces.Plan(links)
			sel, err := ifaces.Select(ns.Handle, links, groups, ifaces.Selector{Names: []string{"mv0", "br0"}[map[string]int{"macvlan": 0, "bridge": 1}[shape]:][:1]})
			if err != nil {
				t.Fatal(err)
			}
			counted := sel.Counted()
			want := map[string]int{"macvlan": bed.B().Ifindex(), "bridge": upper}[shape]
			if len(sel.Groups) != 1 || len(counted) != 1 || counted[0].Index != want || len(sel.Groups[0].Members) != 2 {
				t.Fatalf("selection %+v: want one group of 2 counting ifindex %d", sel, want)
			}
			t.Logf("%s: %s", sel.Groups[0].Shape, sel.Groups[0].Reason)
			tr := ifaces.NewTracker(ns, sel, nil, nil)
			rec := newRecorder(tr, nd)
			for _, dir := range []struct {
				name     string
				from, to *testbed.Host
				rx       bool
			}{{"A->B (rx)", bed.A(), bed.B(), true}, {"B->A (tx)", bed.B(), bed.A(), false}} {
				var payload uint64
				sums := rec.during(t, func() { payload = transfer(t, dir.from, dir.to, time.Second) })
				if len(sums) != 1 {
					t.Fatalf("%s: rows for %d interfaces, want only the counted one: %+v", dir.name, len(sums), sums)
				}
				row := sums[int32(want)]
				nl, bpf := row.TxBytes, ptrVal(row.BpfTxBytes)
				if dir.rx {
					nl, bpf = row.RxBytes, ptrVal(row.BpfRxBytes)
				}
				for _, c := range []struct {
					what  string
					bytes uint64
				}{{"netlink", nl}, {"bpf", bpf}} {
					ratio := float64(c.bytes) / float64(payload)
					t.Logf("%s %s %s: counted %d bytes on %s for %d payload bytes = %.4fx", shape, dir.name, c.what, c.bytes, row.Ifname, payload, ratio)
					if ratio < 0.99 || ratio > 1.01 {
						t.Errorf("%s %s %s: %.4fx of the generator's bytes, want 1.00x +-1%%", shape, dir.name, c.what, ratio)
					}
				}
			}
		})
	}
}

// The tracker follows its interfaces by index: a rename and a removal
// are both noted, and the group is re-planned without the removed member.
func TestTrackerRenameAndRemove(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	mvIndex, err := bed.B().AddMacvlan(context.Background(), "mv0")
	if err != nil {
		t.Fatal(err)
	}
	ns := openNS(t, bed.B())
	links, err := linkstats.Discover(ns)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ifaces.Select(ns.Handle, links, ifaces.Plan(links), ifaces.Selector{Names: []string{"mv0"}})
	if err != nil {
		t.Fatal(err)
	}
	tr := ifaces.NewTracker(ns, sel, nil, nil)
	if notes, err := tr.Refresh(); err != nil || len(notes) != 0 {
		t.Fatalf("first refresh: %v %v", notes, err)
	}
	veth, err := ns.Handle.LinkByIndex(bed.B().Ifindex())
	if err != nil {
		t.Fatal(err)
	}
	// Linux < 6.2 renames only a link that is down (EBUSY otherwise),
	// as udev does before bringing it up.
	if err := ns.Handle.LinkSetDown(veth); err != nil {
		t.Fatal(err)
	}
	if err := ns.Handle.LinkSetName(veth, "uplink0"); err != nil {
		t.Fatal(err)
	}
	if err := ns.Handle.LinkSetUp(veth); err != nil {
		t.Fatal(err)
	}
	mv, err := ns.Handle.LinkByIndex(mvIndex)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Handle.LinkDel(mv); err != nil {
		t.Fatal(err)
	}
	notes, err := tr.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(notes, "\n")
	t.Logf("notes:\n%s", joined)
	if !strings.Contains(joined, "renamed to uplink0: still counted by index") || !strings.Contains(joined, "mv0 (ifindex") || !strings.Contains(joined, "disappeared") {
		t.Errorf("notes %q: want the rename and the removal", notes)
	}
	g := tr.Groups()
	if len(g) != 1 || g[0].Shape != ifaces.ShapeSingle || g[0].Counted[0].Name != "uplink0" {
		t.Errorf("groups after the change: %+v", g)
	}
}
