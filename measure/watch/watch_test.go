package watch

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/measure/host"
	"github.com/netprof/netprof/measure/ifaces"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// send runs the generator from one host to the other for d and returns the
// payload bytes both ends agree on.
func send(ctx context.Context, from, to *testbed.Host, d time.Duration) (uint64, error) {
	ln, err := to.Listen("tcp", net.JoinHostPort(to.Addr.String(), "0"))
	if err != nil {
		return 0, err
	}
	cfg := traffic.Config{Streams: 2, Duration: d, BlockSize: traffic.DefaultBlockSize}
	r := traffic.NewReceiver(ln, cfg)
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	s := traffic.NewSender(from.Dial, ln.Addr().String(), cfg)
	runErr := s.Run(ctx)
	if err := errors.Join(runErr, <-done); err != nil {
		return 0, err
	}
	var sent uint64
	for _, st := range s.Sample() {
		sent += st.AppBytes
	}
	return sent, nil
}

// watchB runs watch in B's namespace in the background; wait returns its
// result once it is done.
func watchB(t *testing.T, bed *testbed.Bed, cfg Config) (wait func() *Result) {
	t.Helper()
	cfg.Host.Netns, cfg.Host.NetnsInode = bed.B().Do, bed.B().NetnsInode()
	if cfg.W == nil {
		cfg.W = &syncWriter{w: &strings.Builder{}}
	}
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Run(context.Background(), cfg, nil)
		done <- out{res, err}
	}()
	return func() *Result {
		o := <-done
		if o.err != nil {
			t.Fatalf("watch: %v", o.err)
		}
		t.Logf("watch output:\n%s", cfg.W.(*syncWriter).String())
		return o.res
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// B's veth is renamed while watch counts it and traffic flows: counting
// continues by ifindex, the rename is noted, the trace has rows under both
// names that add up to the generator's bytes (1.00x within 1%), and the
// Prometheus counters scraped over HTTP equal the trace's sums.
func TestWatchRenamePrometheusTrace(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	nh, err := bed.B().Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	exp := metrics.New()
	srv, err := metrics.Serve("127.0.0.1:0", exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "run")
	oldName, newName := bed.B().Link, bed.B().Link+"r"
	var renameErr error
	var mu sync.Mutex
	var sums []Summary
	first := make(chan struct{})
	wait := watchB(t, bed, Config{
		Host: host.Config{Select: ifaces.Selector{Names: []string{oldName}}}, Interval: 250 * time.Millisecond,
		Duration: 3500 * time.Millisecond, Out: dir, Metrics: exp,
		OnInterval: func(s Summary) {
			mu.Lock()
			defer mu.Unlock()
			sums = append(sums, s)
			if len(sums) == 1 {
				close(first) // the baseline is taken: traffic may start
			}
			if len(sums) == 5 {
				l, err := nh.LinkByName(oldName)
				if err == nil {
					err = nh.LinkSetName(l, newName)
				}
				renameErr = err
			}
		},
	})
	<-first
	payload, sendErr := send(context.Background(), bed.A(), bed.B(), 2*time.Second)
	res := wait()
	if sendErr != nil || renameErr != nil {
		t.Fatalf("send: %v; rename: %v", sendErr, renameErr)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "renamed to "+newName) {
		t.Errorf("notes %q lack the rename", res.Notes)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkFlowTable(t, run.Manifest, netdev.DefaultFlowEntries)
	rows, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	var rx uint64
	names := map[string]int{}
	for _, r := range rows {
		if int(r.Ifindex) != bed.B().Ifindex() {
			t.Errorf("row for ifindex %d (%s): only B's veth is counted", r.Ifindex, r.Ifname)
		}
		rx += r.RxBytes
		names[r.Ifname]++
	}
	ratio := float64(rx) / float64(payload)
	t.Logf("trace: %d rows %v, rx %d bytes for %d payload bytes = %.4fx", len(rows), names, rx, payload, ratio)
	if names[oldName] == 0 || names[newName] == 0 || ratio < 0.99 || ratio > 1.01 {
		t.Errorf("rows %v, ratio %.4f: want rows under both names and 1.00x +-1%%", names, ratio)
	}
	got := scrape(t, "http://"+srv.Addr()+"/metrics")
	var prom float64
	for _, m := range got["netprof_iface_rx_bytes_total"].GetMetric() {
		prom += m.GetCounter().GetValue()
	}
	t.Logf("prometheus netprof_iface_rx_bytes_total summed over %d series = %.0f", len(got["netprof_iface_rx_bytes_total"].GetMetric()), prom)
	if uint64(prom) != rx {
		t.Errorf("prometheus rx bytes %.0f, trace %d", prom, rx)
	}
	if n := got["netprof_intervals_total"].GetMetric(); len(n) != 1 || int(n[0].GetCounter().GetValue()) != res.Intervals {
		t.Errorf("netprof_intervals_total %v, watch saw %d intervals", n, res.Intervals)
	}
}

// checkFlowTable checks that the manifest lists the BPF flow table with
// entries entries (and memlock), as loaded.
func checkFlowTable(t *testing.T, m trace.Manifest, entries uint32) {
	t.Helper()
	for _, bm := range m.Maps {
		if bm.Probe == "netdev" && bm.Name == "np_nd_flows" {
			if bm.MaxEntries != entries || bm.MemlockBytes == nil {
				t.Errorf("manifest flow table %+v: want %d entries and memlock", bm, entries)
			}
			return
		}
	}
	t.Errorf("manifest maps %+v lack netdev's np_nd_flows", m.Maps)
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %v %s", err, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse scrape: %v\n%s", err, body)
	}
	return fams
}

// A veth's speed is a placeholder: reported unknown, so no utilisation; a
// --link-speed below the measured rate gives no utilisation above 100%
// either.
func TestWatchSpeedUnknownNoUtilAbove100(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	for _, c := range []struct {
		speeds map[string]int64
		want   string
	}{{nil, "rated speed unknown"}, {map[string]int64{"": 100}, "exceeds the rated 0.10 Gbit/s"}} {
		var mu sync.Mutex
		var utils []string
		first := make(chan struct{})
		var once sync.Once
		wait := watchB(t, bed, Config{
			Host:     host.Config{Select: ifaces.Selector{Names: []string{bed.B().Link}}, LinkSpeeds: c.speeds, NoBPF: true},
			Interval: 250 * time.Millisecond, Duration: 1500 * time.Millisecond,
			OnInterval: func(s Summary) {
				mu.Lock()
				defer mu.Unlock()
				once.Do(func() { close(first) })
				for _, r := range s.Ifaces {
					if r.RxBps > 1e9 {
						utils = append(utils, r.Util)
					}
				}
			},
		})
		<-first
		if _, err := send(context.Background(), bed.A(), bed.B(), time.Second); err != nil {
			t.Fatal(err)
		}
		wait()
		if len(utils) == 0 {
			t.Fatal("no busy interval seen")
		}
		for _, u := range utils {
			if pct, err := strconv.ParseFloat(strings.TrimSuffix(u, "%"), 64); err == nil && pct > 100 {
				t.Errorf("utilisation %s above 100%%", u)
			}
			if !strings.Contains(u, c.want) {
				t.Errorf("speeds %v: util %q, want it to say %q", c.speeds, u, c.want)
			}
		}
		t.Logf("speeds %v: %s", c.speeds, utils[0])
	}
}

// watch --duration prints one line per full interval: the short final
// interval the recorder adds at the end is recorded but not printed (it
// printed the last line twice).
func TestWatchDurationLines(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	var b strings.Builder
	res, err := Run(context.Background(), Config{Host: host.Config{Select: ifaces.Selector{Names: []string{bed.B().Link}},
		Netns: bed.B().Do, NetnsInode: bed.B().NetnsInode(), NoBPF: true}, W: &b,
		Interval: 250 * time.Millisecond, Duration: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(b.String(), " elapsed, ")
	if lines != 4 || res.Intervals < 4 {
		t.Errorf("%d lines for %d intervals, want 4 lines:\n%s", lines, res.Intervals, b.String())
	}
}

// A name that matches nothing is a usage error listing what exists.
func TestWatchNoSuchInterface(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	_, err := Run(context.Background(), Config{Host: host.Config{Select: ifaces.Selector{Names: []string{"nosuch0"}},
		Netns: bed.B().Do, NetnsInode: bed.B().NetnsInode()}, W: io.Discard, Duration: time.Second}, nil)
	if !errors.Is(err, ErrUsage) || !errors.Is(err, ifaces.ErrNoMatch) {
		t.Fatalf("err %v: want ErrUsage and ifaces.ErrNoMatch", err)
	}
	for _, want := range []string{`"nosuch0"`, bed.B().Link + " (veth)", "lo ("} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// With the default probes (no per-packet hook) watch's top flows come from
// the socket iterator: payload rates (labelled) whose bytes over the run
// add up to what the generator moved (its receiving side in B: exactly the
// payload it read, plus the hello); B has the receiving ends only, named
// A -> B, their RTT n/a with the reason (a receiver's latest RTT sample is
// of its handshake); netdev and tcp are "not selected" in the manifest;
// the veth's netlink counters include L2 headers, and no line is wider
// than ViewWidth.
func TestWatchDefaultProbes(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	var mu sync.Mutex
	var top []FlowRate
	var softirqSource string
	first := make(chan struct{})
	dir := filepath.Join(t.TempDir(), "run")
	w := &syncWriter{w: &strings.Builder{}}
	wait := watchB(t, bed, Config{
		Host:     host.Config{Select: ifaces.Selector{Names: []string{bed.B().Link}}, Probes: probeset.Default},
		Interval: 250 * time.Millisecond, Duration: 2500 * time.Millisecond, Out: dir, W: w,
		OnInterval: func(s Summary) {
			mu.Lock()
			defer mu.Unlock()
			if top == nil {
				close(first)
				top = []FlowRate{}
			}
			top = append(top, s.Top...)
			if s.SoftirqOK {
				softirqSource = s.SoftirqSource
			}
		},
	})
	<-first
	sent, err := send(context.Background(), bed.A(), bed.B(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res := wait()
	for _, p := range res.Probes {
		if (p.Name == "np_nd_rx" || p.Name == "np_tcp_probe" || p.Name == "np_si_entry") && (p.Attached || p.Reason != probeset.NotSelected) {
			t.Errorf("probe %+v: want not selected", p)
		}
	}
	payload := 0
	for _, f := range top {
		if f.Payload && f.Bps > 0 {
			payload++
		}
		if f.Bps > 0 && (f.Ends != EndsReceiving || !strings.HasPrefix(f.Flow, bed.A().Addr.String()+":") || f.RTTP50 != 0 ||
			f.rttText() != "rtt n/a (receiving end: TCP samples RTT from ACKs of the data it sends)") {
			t.Errorf("flow %+v (%s): want B's receiving end, named A -> B, rtt n/a with the reason", f, f.rttText())
		}
	}
	if payload == 0 {
		t.Errorf("top flows %+v: want payload rates", top)
	}
	out := w.String()
	if long := longLines(out); len(long) > 0 {
		t.Errorf("lines over %d columns:\n%s", ViewWidth, strings.Join(long, "\n"))
	}
	if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, "interfaces by their netlink counters: L2 headers included") {
		t.Errorf("header does not say the veth's counters include L2 headers:\n%s", out)
	}
	run, err := trace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	flows, err := run.Flows()
	if err != nil {
		t.Fatal(err)
	}
	var received uint64
	for _, f := range flows {
		if f.TCPBytesReceived != nil {
			received += *f.TCPBytesReceived
		}
	}
	// Each stream's receiver also reads the generator's hello (and counts
	// the FIN): at most 64 bytes per stream beyond the payload.
	if received < sent || received > sent+2*64 {
		t.Errorf("B's sockets received %d payload bytes over the run, the generator sent %d", received, sent)
	}
	checkProcColumns(t, run, bed.B().Link)
	// The counted veth's driver statistics, every interval (nics table;
	// veth's per-queue XDP counters: no XDP here, so they do not move).
	nics, err := run.NICs()
	if err != nil {
		t.Fatal(err)
	}
	ivs := map[int64]bool{}
	for _, n := range nics {
		if n.Ifname != bed.B().Link || n.Stat == "peer_ifindex" {
			t.Errorf("nics row %+v: want only %s's counters", n, bed.B().Link)
		}
		ivs[n.Time.UnixNano()] = true
	}
	if len(nics) == 0 || len(ivs) < res.Intervals-1 {
		t.Errorf("%d nics rows over %d intervals, want rows in each of the %d intervals", len(nics), len(ivs), res.Intervals)
	}
	mu.Lock()
	defer mu.Unlock()
	if softirqSource != "all softirqs, /proc/stat" {
		t.Errorf("view's softirq source %q without the softirq probe, want /proc/stat's", softirqSource)
	}
}

// checkProcColumns: watch's cpus rows carry /proc/stat and softnet_stat
// figures for every CPU (measure.ProcSampler): each interval's proc_total_ns
// over its CPUs is its length times the CPUs within 10% plus a tick per
// CPU, and the packets softnet_stat says the CPUs processed over the run
// are at least those the counted veth (no NAPI: every packet goes through
// a CPU's backlog) received by netlink.
func checkProcColumns(t *testing.T, run *trace.Run, link string) {
	t.Helper()
	cpus, err := run.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	ifs, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	type ivSum struct {
		ns, total uint64
		n         int
	}
	byIv := map[int64]*ivSum{}
	var processed, rx uint64
	for _, c := range cpus {
		if c.ProcTotalNs == nil || c.SoftnetProcessed == nil {
			t.Fatalf("cpu %d at %v: proc_total_ns %v, softnet_processed %v: want both", c.CPU, c.Time, c.ProcTotalNs, c.SoftnetProcessed)
		}
		k := c.Time.UnixNano()
		if byIv[k] == nil {
			byIv[k] = &ivSum{ns: uint64(c.IntervalNs)}
		}
		byIv[k].total += *c.ProcTotalNs
		byIv[k].n++
		processed += *c.SoftnetProcessed
	}
	for _, r := range ifs {
		if r.Ifname == link {
			rx += r.RxPackets
		}
	}
	for k, s := range byIv {
		want := float64(s.ns) * float64(s.n)
		if d := math.Abs(float64(s.total) - want); d > 0.1*want+float64(s.n)*10e6 {
			t.Errorf("interval ending %v: proc_total_ns over %d CPUs %d, want %.0f (interval x CPUs)", time.Unix(0, k), s.n, s.total, want)
		}
	}
	if len(byIv) == 0 || processed < rx {
		t.Errorf("%d intervals; softnet processed %d packets, %s received %d (netlink)", len(byIv), processed, link, rx)
	}
	t.Logf("%d intervals with /proc/stat columns; softnet processed %d packets, %s received %d", len(byIv), processed, link, rx)
}

// longLines returns the lines of out wider than ViewWidth characters.
func longLines(out string) []string {
	var long []string
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > ViewWidth {
			long = append(long, l)
		}
	}
	return long
}

// Both ends of one connection on this host (lo): one entry, named
// sender -> receiver, with the sending end's bytes and RTT; a receiving
// end alone is named the same way, its RTT n/a with the reason; every
// printed line fits ViewWidth even with IPv6 ends, two interfaces and a
// long utilisation reason.
func TestFlowsOneEntryPerConnection(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	end := time.Unix(1e9, 0)
	iv := &trace.Interval{Flows: []trace.FlowRow{
		// lo: the sending socket (acked 1.25 GB, latest RTT 40 µs) and the
		// receiving socket of the same connection (no RTT sample).
		{Proto: 6, SrcAddr: "127.0.0.1", SrcPort: 48686, DstAddr: "127.0.0.1", DstPort: 5999,
			TCPBytesAcked: u64(1_250_000_000), TCPBytesReceived: u64(37), TCPLastRttUs: u32(40)},
		{Proto: 6, SrcAddr: "127.0.0.1", SrcPort: 5999, DstAddr: "127.0.0.1", DstPort: 48686,
			TCPBytesAcked: u64(37), TCPBytesReceived: u64(1_249_000_000), TCPLastRttUs: u32(0)},
		// a receiving end whose sender is elsewhere: its latest RTT sample
		// (of its handshake) is not the data path's
		{Proto: 6, SrcAddr: "2001:db8::2", SrcPort: 5001, DstAddr: "2001:db8:ffff:ffff:ffff:ffff:ffff:1", DstPort: 40000,
			TCPBytesAcked: u64(0), TCPBytesReceived: u64(125_000_000), TCPLastRttUs: u32(3)},
	}}
	top, p50, ok := flows(iv, 1, 3, nil)
	if len(top) != 2 {
		t.Fatalf("top %+v: want 2 connections", top)
	}
	lo, rcv := top[0], top[1]
	if lo.Flow != "127.0.0.1:48686 -> 127.0.0.1:5999" || lo.Ends != EndsBoth || lo.Bps != 8*(1_250_000_000+37) || lo.RTTP50 != 40 || !lo.Payload {
		t.Errorf("lo connection %+v: want the sender's end, its 10 Gbit/s and 40 µs", lo)
	}
	if rcv.Flow != "[2001:db8:ffff:ffff:ffff:ffff:ffff:1]:40000 -> [2001:db8::2]:5001" || rcv.Ends != EndsReceiving || rcv.Bps != 1e9 ||
		rcv.rttText() != "rtt n/a (receiving end: TCP samples RTT from ACKs of the data it sends)" {
		t.Errorf("receiving end %+v (%s): want sender -> receiver, 1 Gbit/s, rtt n/a with the reason", rcv, rcv.rttText())
	}
	if !ok || p50 != 40*time.Microsecond {
		t.Errorf("median RTT %v %v: want 40 µs (the sending end's; receiving ends' samples left out)", p50, ok)
	}
	s := Summary{End: end, Interval: time.Second, Top: top, SoftirqOK: true, CPU: 1, SoftirqRatio: 0.33, SoftirqSource: "all softirqs, /proc/stat",
		RTTP50: p50, RTTOK: true, Ifaces: []IfaceRate{{Name: "lo", RxBps: 10e9, TxBps: 10e9, Util: "n/a (rated speed unknown)"},
			{Name: "enp129s0f1np1", RxBps: 1e9, Util: "n/a (measured 97.12 Gbit/s exceeds the rated 25.00 Gbit/s (ethtool): not a limit here, set --link-speed)"}},
		Notes: []string{"interface enp129s0f1np1 (ifindex 7) renamed to enp129s0f1np1r: counting continues by ifindex, rows carry the new name"}}
	var b strings.Builder
	s.write(&b, 3*time.Second, 10*time.Second)
	out := b.String()
	t.Logf("\n%s", out)
	if long := longLines(out); len(long) > 0 {
		t.Errorf("lines over %d columns:\n%s", ViewWidth, strings.Join(long, "\n"))
	}
	for _, want := range []string{"flow 127.0.0.1:48686 -> 127.0.0.1:5999 (both ends)  10.00 Gbit/s payload  rtt 40 µs",
		"(receiving end)", "rtt n/a (receiving end: TCP samples RTT from ACKs of the data it sends)", "not a limit here, set --link-speed", "counting continues by ifindex"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("view lacks %q", want)
		}
	}
	if strings.Contains(out, "5999 -> 127.0.0.1:48686") {
		t.Errorf("the receiving end of the lo connection is listed too:\n%s", out)
	}
}

// watch --iface lo while the generator sends over B's own loopback (both
// ends in B): each connection is listed once, from its sending end, and
// its rates over the run add up to the payload the generator sent (both
// ends' rows merged, not added: one end's bytes); the header says lo
// counts IP packets without an L2 header; no line is wider than
// ViewWidth.
func TestWatchLoopbackConnections(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	var mu sync.Mutex
	var sums []Summary
	first := make(chan struct{})
	w := &syncWriter{w: &strings.Builder{}}
	wait := watchB(t, bed, Config{
		Host:     host.Config{Select: ifaces.Selector{Names: []string{"lo"}}, Probes: probeset.Default},
		Interval: 250 * time.Millisecond, Duration: 2500 * time.Millisecond, W: w,
		OnInterval: func(s Summary) {
			mu.Lock()
			defer mu.Unlock()
			if sums == nil {
				close(first)
			}
			sums = append(sums, s)
		},
	})
	<-first
	sent, err := send(context.Background(), bed.B(), bed.B(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wait()
	out := w.String()
	if long := longLines(out); len(long) > 0 {
		t.Errorf("lines over %d columns:\n%s", ViewWidth, strings.Join(long, "\n"))
	}
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "netlink counters: lo (loopback: IP packets, no L2 header)") || strings.Contains(flat, "L2 headers included") {
		t.Errorf("header does not say lo counts IP packets without an L2 header:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	var bytes float64
	conns := map[string]bool{}
	for _, s := range sums {
		seen := map[string]bool{}
		for _, f := range s.Top {
			a, b, _ := strings.Cut(f.Flow, " -> ")
			if seen[b+" -> "+a] {
				t.Errorf("interval ending %v lists both directions of %s", s.End, f.Flow)
			}
			seen[f.Flow] = true
			if f.Ends != EndsBoth || !f.Payload {
				t.Errorf("flow %s: ends %q payload %v, want both ends (merged), payload", f.Flow, f.Ends, f.Payload)
			}
			if f.Bps > 1e9 && f.RTTP50 == 0 {
				t.Errorf("flow %s at %.2f Gbit/s: no RTT (the sending end's sample)", f.Flow, f.Bps/1e9)
			}
			conns[f.Flow] = true
			bytes += f.Bps * s.Interval.Seconds() / 8
		}
	}
	t.Logf("%d connections %v; their bytes over the run %.0f, the generator sent %d payload bytes", len(conns), conns, bytes, sent)
	// Each stream's sender also writes the generator's hello (< 64 B).
	if len(conns) != 2 || bytes < float64(sent) || bytes > float64(sent)+2*64 {
		t.Errorf("%d connections, %.0f bytes: want the 2 streams once each and the %d payload bytes sent (+ hellos)", len(conns), bytes, sent)
	}
}

// A bulk connection keeps its name when, in a later interval, only its
// receiver sends (a reply at the end): the end that sent more since watch
// saw it is the sender; an end gone from an interval is forgotten.
func TestConnectionDirectionKept(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	ivOf := func(sentA, sentB uint64) *trace.Interval {
		return &trace.Interval{Flows: []trace.FlowRow{
			{Proto: 6, SrcAddr: "127.0.0.1", SrcPort: 40000, DstAddr: "127.0.0.1", DstPort: 5001, TCPBytesAcked: u64(sentA), TCPBytesReceived: u64(sentB)},
			{Proto: 6, SrcAddr: "127.0.0.1", SrcPort: 5001, DstAddr: "127.0.0.1", DstPort: 40000, TCPBytesAcked: u64(sentB), TCPBytesReceived: u64(sentA)},
		}}
	}
	hist := connHistory{}
	for i, iv := range []*trace.Interval{ivOf(1e9, 0), ivOf(0, 37)} {
		top, _, _ := flows(iv, 1, 3, &hist)
		if len(top) != 1 || top[0].Flow != "127.0.0.1:40000 -> 127.0.0.1:5001" || top[0].Ends != EndsBoth {
			t.Errorf("interval %d: %+v, want the sender 40000 -> 5001", i, top)
		}
	}
	if h := hist["6 127.0.0.1:40000>127.0.0.1:5001"]; h != [2]uint64{1e9, 37} || len(hist) != 2 {
		t.Errorf("history %v", hist)
	}
	flows(&trace.Interval{}, 1, 3, &hist)
	if len(hist) != 0 {
		t.Errorf("history %v after an interval without the connection, want empty", hist)
	}
}
