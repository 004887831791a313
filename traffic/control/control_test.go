package control

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic"
)

// sumStreams adds up the per-interval, per-stream byte counts.
func sumStreams(ivs []Interval, sent bool) []uint64 {
	var out []uint64
	for _, iv := range ivs {
		v := iv.ReceivedBytes
		if sent {
			v = iv.SentBytes
		}
		for i, b := range v {
			for len(out) <= i {
				out = append(out, 0)
			}
			out[i] += b
		}
	}
	return out
}

// checkBothEnds asserts the server's per-interval counts add up exactly to
// what the client's side counted, stream by stream.
func checkBothEnds(t *testing.T, rep *Report, local []traffic.StreamSample, role string, serverSent bool) {
	t.Helper()
	remote := sumStreams(rep.Remote, serverSent)
	total := rep.Result.ReceivedBytes
	if serverSent {
		total = rep.Result.SentBytes
	}
	var n int
	for _, smp := range local {
		if smp.Role != role {
			continue
		}
		n++
		if smp.AppBytes == 0 {
			t.Errorf("%s stream %d: no bytes", role, smp.Stream)
		}
		if smp.Stream >= len(remote) || remote[smp.Stream] != smp.AppBytes || total[smp.Stream] != smp.AppBytes {
			t.Errorf("%s stream %d: client counted %d bytes; server intervals add up to %v, result %v",
				role, smp.Stream, smp.AppBytes, remote, total)
		}
	}
	if n != rep.Session.Streams {
		t.Errorf("%d local %s streams, want %d", n, role, rep.Session.Streams)
	}
}

func TestSendTwoStreams(t *testing.T) {
	ts := startServer(t, ServerConfig{Software: "netprof test"})
	p := Params{Streams: 2, Duration: time.Second, Interval: 250 * time.Millisecond}
	rep, err := runClient(t, ts.addr, p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result == nil || !rep.Result.OK {
		t.Fatalf("result %+v", rep.Result)
	}
	checkBothEnds(t, rep, rep.Local, traffic.RoleSender, false)
	checkReceivedSteering(t, rep)
	// One port per stream: stream i went to ports[i].
	if len(rep.Session.Ports) != 2 || rep.Session.Ports[0] == rep.Session.Ports[1] {
		t.Errorf("ports %v, want 2 distinct", rep.Session.Ports)
	}
	for _, smp := range rep.Local {
		if port(smp.RemoteAddr) != rep.Session.Ports[smp.Stream] {
			t.Errorf("stream %d went to %s, want port %d", smp.Stream, smp.RemoteAddr, rep.Session.Ports[smp.Stream])
		}
	}
	// About 4 intervals of ~250 ms plus a short last one, each with the
	// server's CPU figures. Intervals are as long as they really were (a
	// loaded machine stretches some), so only their count's bounds and
	// their sum are checked, not each length.
	if n := len(rep.Remote); n < 2 || n > 7 {
		t.Errorf("%d interval reports, want 2-7", n)
	}
	var sumNs int64
	for i, iv := range rep.Remote {
		if iv.Index != i || iv.IntervalNs <= 0 {
			t.Errorf("interval %d: index %d, %d ns", i, iv.Index, iv.IntervalNs)
		}
		sumNs += iv.IntervalNs
		if iv.CPU.CPUs < 1 || iv.CPU.IntervalNs <= 0 {
			t.Errorf("interval %d: no CPU figures: %+v", i, iv.CPU)
		}
	}
	if last := rep.Remote[len(rep.Remote)-1]; sumNs != last.EndNs || sumNs != rep.Result.DurationNs {
		t.Errorf("intervals add up to %d ns, last ends at %d, result duration %d", sumNs, last.EndNs, rep.Result.DurationNs)
	}
	if c := rep.Result.CPU; c.ProcessUserS+c.ProcessSystemS <= 0 || c.SystemPct <= 0 {
		t.Errorf("whole-test CPU %+v: the receiving process used no CPU?", c)
	}
	rec := <-ts.records
	if rec.Error != "" || len(rec.Intervals) != len(rep.Remote) || rec.Session.RunID != rep.Session.RunID {
		t.Errorf("server record: %+v", rec)
	}
}

func TestReverseAndBidir(t *testing.T) {
	ts := startServer(t, ServerConfig{Ports: freePorts(t, 1)})
	for _, dir := range []Direction{Reverse, Bidir} {
		t.Run(string(dir), func(t *testing.T) {
			rep, err := runClient(t, ts.addr, Params{Streams: 2, Duration: 500 * time.Millisecond, Direction: dir, Interval: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			checkBothEnds(t, rep, rep.Local, traffic.RoleReceiver, true)
			if dir == Bidir {
				checkBothEnds(t, rep, rep.Local, traffic.RoleSender, false)
			} else if rep.Result.ReceivedBytes != nil {
				t.Errorf("reverse test: server reports received bytes %v", rep.Result.ReceivedBytes)
			}
			checkSentTCP(t, rep)
			checkReceivedSteering(t, rep)
			// A single data port: every stream shares it.
			for _, smp := range rep.Local {
				if port(smp.RemoteAddr) != rep.Session.Ports[0] {
					t.Errorf("stream on %s, want port %d", smp.RemoteAddr, rep.Session.Ports[0])
				}
			}
		})
	}
}

// A second client during a test is told "busy" and disconnected; the first
// completes.
func TestBusy(t *testing.T) {
	ts := startServer(t, ServerConfig{})
	first := make(chan error, 1)
	go func() {
		_, err := runClient(t, ts.addr, Params{Streams: 2, Duration: 2 * time.Second})
		first <- err
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	_, err := runClient(t, ts.addr, Params{Streams: 1, Duration: time.Second})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "busy") {
		t.Errorf("second client: %v, want busy", err)
	}
	if took := time.Since(start); took < busyWait || took > busyWait+time.Second {
		t.Errorf("busy answer took %v, want %v + less than 1s", took, busyWait)
	}
	if err := <-first; err != nil {
		t.Errorf("first client: %v", err)
	}
}

func TestLimits(t *testing.T) {
	ts := startServer(t, ServerConfig{})
	for _, tc := range []struct {
		p    Params
		want string
	}{
		{Params{Streams: 100000, Duration: time.Second}, "streams 100000 exceeds the server's limit of 256 streams (max streams)"},
		{Params{Streams: 1, Duration: time.Second, BlockSize: 1 << 40}, "block size 1099511627776 bytes exceeds the server's limit of 16MiB (max block size)"},
		{Params{Streams: 1, Duration: 100 * time.Hour}, "limit of 1h0m0s (max duration)"},
		{Params{Streams: 256, Duration: time.Second, BlockSize: 16 << 20}, "256 streams × 16MiB blocks exceed the server's limit of 1GiB of buffers (max buffers)"},
		{Params{Streams: 1, Duration: time.Second, ConnectTimeout: time.Hour}, "(max connect timeout)"},
	} {
		_, err := runClient(t, ts.addr, tc.p)
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want a limit error containing %q", tc.p, err, tc.want)
		}
	}
	// Invalid in itself: refused by the client before dialling.
	if _, err := runClient(t, ts.addr, Params{Streams: 0, Duration: time.Second}); err == nil || !strings.Contains(err.Error(), "invalid stream count 0") {
		t.Errorf("zero streams: %v", err)
	}
	if _, err := runClient(t, ts.addr, Params{Streams: 1, Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond}); err != nil {
		t.Errorf("valid test after refusals: %v", err)
	}
}

// Data ports that accept the TCP handshake but never answer the hello (a
// stuck listener) fail within the connect timeout, named by port; the server
// serves the next client.
func TestConnectDataNamesPorts(t *testing.T) {
	ports := freePorts(t, 4)
	stuck := map[int]bool{ports[1]: true, ports[3]: true}
	ts := startServer(t, ServerConfig{Ports: ports, Listen: stuckListen(stuck)})
	ctx := t.Context()
	s, err := Dial(ctx, nil, ts.addr, Params{Streams: 4, Duration: time.Second, ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.ConnectData(ctx, nil)
	took := time.Since(start)
	s.Close()
	var de *DataError
	if !errors.As(err, &de) {
		t.Fatalf("ConnectData: %v, want a DataError", err)
	}
	if took < 500*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("ConnectData took %v, want 0.5s-1.5s", took)
	}
	if got := de.FailedPorts(); len(got) != 2 || got[0] != min(ports[1], ports[3]) || got[1] != max(ports[1], ports[3]) {
		t.Errorf("failed ports %v, want %d and %d", got, ports[1], ports[3])
	}
	if len(de.Failed) != 2 || !de.Failed[0].Timeout || de.Total != 4 || !strings.Contains(err.Error(), "2 of 4 connected") {
		t.Errorf("DataError %+v: %v", de, err)
	}
	if _, err := s.Run(ctx); err == nil {
		t.Error("Run after a failed ConnectData succeeded")
	}
	rec := <-ts.records
	if !strings.Contains(rec.Error, "client gave up") {
		t.Errorf("server record error %q", rec.Error)
	}
	if _, err := runClient(t, ts.addr, Params{Streams: 1, Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond}); err != nil {
		t.Errorf("next client: %v", err)
	}
}

// checkSentTCP: the server reports each sending stream's TCP_INFO per
// interval; its retransmits and busy time add up to what the socket's own
// totals were at the end, at most (the server's last reading), and the
// sending streams were busy for some of the run.
func checkSentTCP(t *testing.T, rep *Report) {
	t.Helper()
	busy := make([]uint64, rep.Session.Streams)
	for _, iv := range rep.Remote {
		if len(iv.SentBytes) > 0 && len(iv.SentTCP) != len(iv.SentBytes) {
			t.Errorf("interval %d: %d sent_tcp entries for %d streams", iv.Index, len(iv.SentTCP), len(iv.SentBytes))
		}
		for i, st := range iv.SentTCP {
			if st == nil {
				t.Errorf("interval %d stream %d: no TCP_INFO", iv.Index, i)
				continue
			}
			busy[i] += st.BusyUs
			if st.RwndLimitedUs+st.SndbufLimitedUs > st.BusyUs+4000 { // one jiffy at HZ=250
				t.Errorf("interval %d stream %d: limited %d+%d µs of %d µs busy", iv.Index, i, st.RwndLimitedUs, st.SndbufLimitedUs, st.BusyUs)
			}
		}
	}
	for i, b := range busy {
		if b == 0 || b > uint64(2*time.Second/time.Microsecond) {
			t.Errorf("stream %d: busy %d µs over a 0.5 s test", i, b)
		}
	}
}

// checkReceivedSteering: on a test where the server receives, every
// interval from the first in which a stream has received data reports
// received_steering with one entry per receiving stream, and each stream
// that has received data by then has an online CPU (the socket's
// SO_INCOMING_CPU: the kernel sets it with the first packet); a server
// that does not receive reports none.
func checkReceivedSteering(t *testing.T, rep *Report) {
	t.Helper()
	got := make([]uint64, rep.Session.Streams) // cumulative received bytes
	cpus := map[int32]int{}
	for _, iv := range rep.Remote {
		if len(iv.ReceivedBytes) == 0 {
			if iv.ReceivedSteering != nil {
				t.Errorf("interval %d: received_steering %v on a test the server does not receive", iv.Index, iv.ReceivedSteering)
			}
			continue
		}
		some := false
		for i, n := range iv.ReceivedBytes {
			got[i] += n
			some = some || got[i] > 0
		}
		if !some {
			continue
		}
		if len(iv.ReceivedSteering) != len(iv.ReceivedBytes) {
			t.Errorf("interval %d: %d received_steering entries for %d receiving streams", iv.Index, len(iv.ReceivedSteering), len(iv.ReceivedBytes))
			continue
		}
		for i, st := range iv.ReceivedSteering {
			if got[i] == 0 {
				continue
			}
			if st == nil || st.CPU < 0 || int(st.CPU) >= runtime.NumCPU() {
				t.Errorf("interval %d stream %d (%d bytes so far): steering %+v, want a CPU in [0, %d)", iv.Index, i, got[i], st, runtime.NumCPU())
				continue
			}
			cpus[st.Steering().CPU]++
		}
	}
	if rep.Session.Direction != Reverse && len(cpus) == 0 {
		t.Error("no interval reported a receiving stream's CPU")
	}
	t.Logf("received_steering: stream-intervals per CPU %v", cpus)
}
