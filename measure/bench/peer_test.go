package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/control"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// peerServer is an in-process `netprof traffic serve` listening in B.
type peerServer struct {
	addr string
	stop context.CancelFunc // stops the server (closing its listener and every connection)
}

// startPeer runs a control server inside bed B on port 5000 with the given
// data ports until the test ends (or stop is called).
func startPeer(t *testing.T, bed *testbed.Bed, ports ...int) *peerServer {
	t.Helper()
	b := bed.B()
	ln, err := b.Listen("tcp", joinHostPort(b.Addr.String(), 5000))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := control.NewServer(control.ServerConfig{Ports: ports, DataHost: b.Addr.String(), Listen: b.Listen,
		IOTimeout: 2 * time.Second, Software: "netprof test", Log: log})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { // runs before the bed's cleanup (LIFO)
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &peerServer{addr: ln.Addr().String(), stop: cancel}
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// peerConfig is a short --peer run from A to the server in B.
func peerConfig(t *testing.T, srv *peerServer) Config {
	cfg := DefaultConfig()
	cfg.Peer, cfg.NoBPF, cfg.Streams = srv.addr, true, 2
	cfg.Duration, cfg.Interval = 1500*time.Millisecond, 250*time.Millisecond
	cfg.Out = filepath.Join(t.TempDir(), "run")
	return cfg
}

func fromA(bed *testbed.Bed) Local { return Local{Do: bed.A().Do, Netns: bed.A().NetnsInode()} }

// byEnd sums a run's traffic rows by role and by which end wrote them
// (peer rows have the peer's address as local_addr).
func byEnd(t *testing.T, rows []trace.TrafficRow, peerHost string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, r := range rows {
		end := "local "
		if strings.HasPrefix(r.LocalAddr, peerHost+":") {
			end = "peer "
		}
		out[end+r.Role] += r.AppBytes
	}
	return out
}

// A run against a server in B: the peer's per-interval counts are in the
// trace as rows of the other role and add up exactly to what this end
// sent or received, in every direction; the report and the summary show
// both ends.
func TestPeerDirections(t *testing.T) {
	requireBench(t, false)
	bed := testbedtest.New(t, testbed.Options{})
	srv := startPeer(t, bed, 5001, 5002, 5003, 5004)
	for _, dir := range []control.Direction{control.Send, control.Reverse, control.Bidir} {
		t.Run(string(dir), func(t *testing.T) {
			cfg := peerConfig(t, srv)
			cfg.Direction = dir
			cfg.Warmup = 500 * time.Millisecond
			cfg.NoBPF = dir != control.Send // probes on the routed interface once
			res, err := RunPeer(context.Background(), cfg, "test", fromA(bed), nil)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			checkPeerRun(t, cfg, res, bed.B().Addr.String())
		})
	}
}

func checkPeerRun(t *testing.T, cfg Config, res *Result, peerHost string) {
	t.Helper()
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	got := byEnd(t, rows, peerHost)
	fwd, rev := cfg.streamCounts()
	t.Logf("%s: %v", cfg.dir(), got)
	if want := sumApp(res.Sent); (fwd > 0) != (want > 0) || got["local sender"] != want || got["peer receiver"] != want {
		t.Errorf("forward: local sender rows %d, peer receiver rows %d, sender counted %d", got["local sender"], got["peer receiver"], want)
	}
	if want := sumApp(res.Received); (rev > 0) != (want > 0) || got["local receiver"] != want || got["peer sender"] != want {
		t.Errorf("reverse: local receiver rows %d, peer sender rows %d, receiver counted %d", got["local receiver"], got["peer sender"], want)
	}
	checkPhasesShared(t, rows, run.Manifest.Start, cfg.Warmup, peerHost)
	s := res.Summary
	if s.Peer == nil || s.Peer.ResultOK == nil || !*s.Peer.ResultOK || s.Peer.Intervals < 6 {
		t.Fatalf("peer summary %+v", s.Peer)
	}
	if s.Peer.ReceivedBytes != got["peer receiver"] || s.Peer.SentBytes != got["peer sender"] {
		t.Errorf("peer summary received %d sent %d, rows %v", s.Peer.ReceivedBytes, s.Peer.SentBytes, got)
	}
	if len(s.CPU) != 2 || s.CPU[0].End != "local" || s.CPU[1].End != "peer" || s.CPU[1].ProcessCPUSecondsPerGB == nil ||
		s.CPU[1].BusyPct <= 0 || s.CPU[1].Intervals < 4 {
		t.Errorf("cpu figures %+v", s.CPU)
	}
	rx := res.Report.Rx.Rate("application").W
	if rx == nil || rx.TotalBytes == 0 || rx.TotalBytes >= got["peer receiver"]+got["local receiver"] {
		t.Errorf("report rx application %+v: want the measured part (warm-up excluded) of %v", rx, got)
	}
	var b strings.Builder
	if err := res.Report.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "peer "+cfg.Peer+" (netprof test)") || !strings.Contains(b.String(), "\npeer   ") {
		t.Errorf("report does not show the peer:\n%s", b.String())
	}
}

// checkPhasesShared: every row has a phase, rows of one interval (the
// peer's and this end's) share it, and it is warm-up exactly when the
// interval's midpoint falls in the first warmup of the run (intervals end
// when the recorder's ticks come: under load later than every 250 ms, so
// their number is not fixed); warm-up intervals exist.
func checkPhasesShared(t *testing.T, rows []trace.TrafficRow, start time.Time, warmup time.Duration, peerHost string) {
	t.Helper()
	phase := map[int64]string{}
	warm := 0
	for _, r := range rows {
		if r.Phase == nil {
			t.Fatalf("row without phase: %+v", r)
		}
		k := r.Time.UnixNano()
		if p, ok := phase[k]; ok && p != *r.Phase {
			t.Errorf("interval %v has phases %s and %s", r.Time, p, *r.Phase)
		}
		// This end's rows carry the local interval's length (the peer's
		// its own, mapped onto the local interval: same phase, checked above).
		mid := r.Time.Add(-time.Duration(r.IntervalNs) / 2)
		if want := mid.Sub(start) < warmup; !strings.HasPrefix(r.LocalAddr, peerHost+":") && want != (*r.Phase == trace.PhaseWarmup) {
			t.Errorf("interval ending %v (midpoint %v after the start): phase %s, warm-up %v", r.Time, mid.Sub(start), *r.Phase, want)
		}
		if _, ok := phase[k]; !ok && *r.Phase == trace.PhaseWarmup {
			warm++
		}
		phase[k] = *r.Phase
	}
	if warm == 0 {
		t.Errorf("no warm-up interval in a run with %v of warm-up", warmup)
	}
}

// Data ports behind a dropping filter: the run fails within the connect
// timeout, naming exactly the blocked ports.
func TestPeerBlockedPorts(t *testing.T) {
	requireBench(t, false)
	bed := testbedtest.New(t, testbed.Options{})
	srv := startPeer(t, bed, 5001, 5002, 5003, 5004)
	dropTCP(t, bed.A(), 5002, 5004)
	cfg := peerConfig(t, srv)
	cfg.Streams, cfg.ConnectTimeout = 4, time.Second
	start := time.Now()
	res, err := RunPeer(context.Background(), cfg, "test", fromA(bed), nil)
	took := time.Since(start)
	var de *control.DataError
	if !errors.As(err, &de) {
		t.Fatalf("err %v, want a DataError", err)
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took > cfg.ConnectTimeout+1500*time.Millisecond {
		t.Errorf("gave up after %v, want within the %v connect timeout (+1.5 s)", took, cfg.ConnectTimeout)
	}
	if fmt.Sprint(de.FailedPorts()) != "[5002 5004]" || !strings.Contains(err.Error(), "failed ports: 5002, 5004") {
		t.Errorf("failed ports %v, error %q; want 5002 and 5004 named", de.FailedPorts(), err)
	}
	if res == nil || !strings.HasPrefix(res.Status, "failed: ") {
		t.Errorf("result %+v, want a failed status in the trace", res)
	}
}

// dropTCP makes TCP packets h sends to the given destination ports (all
// TCP when none) vanish, as a firewall that drops: an HTB root whose second
// class ends in a pfifo of limit 0, chosen by u32 (this kernel has no gact
// or netfilter).
func dropTCP(t *testing.T, h *testbed.Host, ports ...int) {
	t.Helper()
	if err := dropTCPErr(h, ports...); err != nil {
		t.Fatal(err)
	}
}

func dropTCPErr(h *testbed.Host, ports ...int) error {
	dev := h.Link
	filter := []string{"filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "protocol", "6", "0xff"}
	cmds := [][]string{
		{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10"},
		{"class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "100gbit", "burst", "256k"},
		{"class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "100gbit", "burst", "256k"},
		{"qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "pfifo", "limit", "0"},
	}
	if len(ports) == 0 {
		cmds = append(cmds, append(slices.Clone(filter), "flowid", "1:20"))
	}
	for _, p := range ports {
		cmds = append(cmds, append(slices.Clone(filter), "match", "ip", "dport", strconv.Itoa(p), "0xffff", "flowid", "1:20"))
	}
	for _, c := range cmds {
		if out, err := h.Exec(context.Background(), "tc", c...).CombinedOutput(); err != nil {
			return fmt.Errorf("tc %s: %w: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}

// The peer goes away mid-run (its server stopped: listener and every
// connection closed), or goes silent (everything it sends dropped): the
// run stops within the peer timeout, fails naming the peer lost, and the
// trace is valid with the completed intervals.
func TestPeerLost(t *testing.T) {
	requireBench(t, false)
	for _, how := range []string{"killed", "silent"} {
		t.Run(how, func(t *testing.T) {
			bed := testbedtest.New(t, testbed.Options{})
			srv := startPeer(t, bed, 5001, 5002)
			cfg := peerConfig(t, srv)
			cfg.Duration, cfg.PeerTimeout = 10*time.Second, 1500*time.Millisecond
			var lostAt time.Time
			lose := time.AfterFunc(1500*time.Millisecond, func() {
				lostAt = time.Now()
				if how == "killed" {
					srv.stop()
				} else if err := dropTCPErr(bed.B()); err != nil {
					t.Error(err)
				}
			})
			defer lose.Stop()
			res, err := RunPeer(context.Background(), cfg, "test", fromA(bed), nil)
			took := time.Since(lostAt)
			t.Logf("returned %v after the peer was lost: %v", took.Round(time.Millisecond), err)
			if !errors.Is(err, ErrPeerLost) {
				t.Fatalf("err %v, want ErrPeerLost", err)
			}
			if took > cfg.PeerTimeout+1500*time.Millisecond {
				t.Errorf("stopped %v after the peer was lost, want within the peer timeout %v (+1.5 s)", took, cfg.PeerTimeout)
			}
			checkPartialTrace(t, res)
		})
	}
}

// checkPartialTrace: the run's trace reads back, says failed, and holds
// the intervals recorded before the peer was lost, the peer's included.
func checkPartialTrace(t *testing.T, res *Result) {
	t.Helper()
	if res == nil || !regexp.MustCompile(`^failed: .*peer lost`).MatchString(res.Status) {
		t.Fatalf("result %+v, want status failed: peer lost", res)
	}
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Manifest.Status != res.Status || run.Manifest.End.IsZero() {
		t.Errorf("manifest status %q end %v", run.Manifest.Status, run.Manifest.End)
	}
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	ends := map[string]map[int64]bool{"sender": {}, "receiver": {}}
	for _, r := range rows {
		ends[r.Role][r.Time.UnixNano()] = true
	}
	if len(ends["sender"]) < 5 || len(ends["receiver"]) < 4 {
		t.Errorf("%d sender and %d peer receiver intervals, want >= 5 and 4 (1.5 s at 250 ms)", len(ends["sender"]), len(ends["receiver"]))
	}
	if res.Report == nil || res.Report.Primary == nil {
		t.Errorf("no report of the partial trace")
	}
}

// A peer sends (reverse) over a 10 ms delay line to this end, whose
// receive buffer the test capped at 64 KiB (A's tcp_rmem): this host has
// no sending flow, and the window rule judges on the peer streams' own
// TCP_INFO chrono, which the peer reports over the control protocol
// (traffic rows of the peer's sender role): the receiver's window held
// them. Each stream's rate stays near what 64 KiB per round trip allows
// (the test's own connect-time RTT), the cause the test set.
func TestVerdictWindowFromPeerStreams(t *testing.T) {
	requireBench(t, false)
	c0 := DefaultConfig()
	c0.RTT = 10 * time.Millisecond
	bed := rttBed(t, c0)
	if err := bed.A().SetSysctl("net.ipv4.tcp_rmem", "4096 65536 65536"); err != nil {
		t.Fatal(err)
	}
	ct := minConnect(t, bed, 5)
	srv := startPeer(t, bed, 5001, 5002)
	cfg := peerConfig(t, srv)
	cfg.Direction, cfg.Duration = control.Reverse, 3*time.Second
	_, run, rows := peerTraffic(t, cfg, bed)
	peerHost := bed.B().Addr.String()
	var peerRows, withChrono int
	var rwnd, sending uint64
	for _, r := range rows {
		if r.Role != trace.RoleSender || !strings.HasPrefix(r.LocalAddr, peerHost+":") {
			continue
		}
		peerRows++
		if r.TCPBusyUs != nil && r.TCPRwndLimitedUs != nil && r.TCPSndbufLimitedUs != nil {
			withChrono++
			rwnd += *r.TCPRwndLimitedUs
			sending += *r.TCPBusyUs // the whole time with data to send, limited parts included
		}
	}
	t.Logf("peer sender rows %d, with chrono %d: rwnd-limited %d of %d µs sending", peerRows, withChrono, rwnd, sending)
	if peerRows == 0 || withChrono != peerRows {
		t.Fatalf("peer sender rows %d, %d with the tcp chrono columns: want all", peerRows, withChrono)
	}
	r := reanalyze(t, run, analysis.Options{})
	v := wantVerdict(t, r, analysis.RuleWindow, analysis.Fired)
	t.Logf("%s: %s\n  %s", v.Rule, v.Summary, strings.Join(v.Evidence, "\n  "))
	if !strings.Contains(v.Summary, "the receiver's window held the streams") {
		t.Errorf("window verdict %q does not name the receiver's window", v.Summary)
	}
	wantEvidence(t, v, "generator sending streams (traffic: TCP_INFO")
	limit := float64(64<<10) * 8 / ct.Seconds()
	for addr, g := range senderRates(t, run) {
		if g > 2*limit {
			t.Errorf("stream %s: %.0f Mbit/s, above 2x 64 KiB / %v = %.0f Mbit/s: the capped window did not hold it", addr, g/1e6, ct, 2*limit/1e6)
		}
	}
}

// peerTraffic runs cfg from A against a peer on the bed and returns the
// result, its trace and traffic rows, failing t if the run or the trace
// fails.
func peerTraffic(t *testing.T, cfg Config, bed *testbed.Bed) (*Result, *trace.Run, []trace.TrafficRow) {
	t.Helper()
	res, err := RunPeer(context.Background(), cfg, "test", fromA(bed), nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	return res, run, rows
}

// A peer address where nothing listens fails before any trace exists, and
// the error says what to check: the connection refused, and whether
// `netprof traffic serve` runs there. Another cause keeps its own words.
func TestDialPeerRefusedHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := DefaultConfig()
	cfg.Peer = addr
	_, err = dialPeer(context.Background(), cfg, Local{}, addr, nil)
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "is `netprof traffic serve` running there") {
		t.Fatalf("dial %s: %v, want connection refused with the serve hint", addr, err)
	}
	if h := dialHint(errors.New("control: 127.0.0.1:5000: server busy")); h != "" {
		t.Errorf("busy answer given a hint %q", h)
	}
	if h := dialHint(fmt.Errorf("dial: %w", context.DeadlineExceeded)); !strings.Contains(h, "no answer") {
		t.Errorf("timeout hint %q", h)
	}
}
