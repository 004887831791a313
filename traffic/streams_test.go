package traffic_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic"
)

func listeners(t *testing.T, n int) ([]net.Listener, []string) {
	t.Helper()
	var lns []net.Listener
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return lns, addrs
}

// Both directions over pre-established streams, one port per stream: the
// dialing end sends (forward) or receives (reverse), counts match exactly.
func TestDialAcceptBothDirections(t *testing.T) {
	for _, dir := range []traffic.Direction{traffic.Forward, traffic.Reverse} {
		t.Run(dir.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lns, addrs := listeners(t, 3)
			id, err := traffic.NewRunID()
			if err != nil {
				t.Fatal(err)
			}
			nf, nr := 3, 0
			if dir == traffic.Reverse {
				nf, nr = 0, 3
			}
			type acc struct {
				a   *traffic.Accepted
				err error
			}
			accCh := make(chan acc, 1)
			go func() {
				a, err := traffic.AcceptStreams(ctx, lns, id, nf, nr)
				accCh <- acc{a, err}
			}()
			dialed, err := traffic.DialStreams(ctx, (&net.Dialer{}).DialContext, addrs, dir, id, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got := <-accCh
			if got.err != nil {
				t.Fatal(got.err)
			}
			accepted := got.a.Forward
			if dir == traffic.Reverse {
				accepted = got.a.Reverse
			}
			for i, c := range accepted {
				if c.LocalAddr().String() != addrs[i] {
					t.Errorf("stream %d accepted on %s, dialled to %s", i, c.LocalAddr(), addrs[i])
				}
			}
			sendConns, recvConns := dialed, accepted
			if dir == traffic.Reverse {
				sendConns, recvConns = accepted, dialed
			}
			cfg := traffic.Config{Streams: 3, Duration: 300 * time.Millisecond, BlockSize: 64 << 10}
			snd, err := traffic.NewSenderConns(sendConns, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rcv, err := traffic.NewReceiverConns(recvConns, cfg)
			if err != nil {
				t.Fatal(err)
			}
			serveErr := make(chan error, 1)
			go func() { serveErr <- rcv.Serve(ctx) }()
			if err := snd.Run(ctx); err != nil {
				t.Fatalf("run: %v", err)
			}
			if err := <-serveErr; err != nil {
				t.Fatalf("serve: %v", err)
			}
			checkPair(t, cfg, snd.Sample(), rcv.Sample())
		})
	}
}

// Bidirectional: forward and reverse streams of one run on one listener.
func TestAcceptBidir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lns, addrs := listeners(t, 1)
	id, _ := traffic.NewRunID()
	accCh := make(chan *traffic.Accepted, 1)
	go func() {
		a, err := traffic.AcceptStreams(ctx, lns, id, 2, 2)
		if err != nil {
			t.Error(err)
		}
		accCh <- a
	}()
	dial := (&net.Dialer{}).DialContext
	two := []string{addrs[0], addrs[0]}
	fwd, err := traffic.DialStreams(ctx, dial, two, traffic.Forward, id, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := traffic.DialStreams(ctx, dial, two, traffic.Reverse, id, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a := <-accCh
	if a == nil || len(a.Forward) != 2 || len(a.Reverse) != 2 {
		t.Fatalf("accepted %+v", a)
	}
	a.Close()
	for _, c := range append(fwd, rev...) {
		c.Close()
	}
}

// Refused and wrong-run streams are named with their address; nothing is
// left open; the acceptor reports what never arrived.
func TestDialStreamsFailures(t *testing.T) {
	ctx := context.Background()
	lns, addrs := listeners(t, 2)
	closed := freePort(t)
	id, _ := traffic.NewRunID()
	other, _ := traffic.NewRunID()
	actx, acancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer acancel()
	accErr := make(chan error, 1)
	go func() {
		_, err := traffic.AcceptStreams(actx, lns, id, 3, 0)
		accErr <- err
	}()
	// Stream 2 goes to a closed port: refused.
	_, err := traffic.DialStreams(ctx, (&net.Dialer{}).DialContext, []string{addrs[0], addrs[1], closed}, traffic.Forward, id, time.Second)
	var ce *traffic.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ConnectError", err)
	}
	if ce.Total != 3 || len(ce.Failed) != 1 || ce.Failed[0].Stream != 2 || ce.Failed[0].Addr != closed || ce.Failed[0].Timeout {
		t.Errorf("ConnectError = %+v", ce)
	}
	if !strings.Contains(err.Error(), "2 of 3 streams connected; failed at "+closed) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q", err)
	}
	// Another run's stream is refused by the acceptor with the reason.
	_, err = traffic.DialStreams(ctx, (&net.Dialer{}).DialContext, []string{addrs[0]}, traffic.Forward, other, time.Second)
	if err == nil || !strings.Contains(err.Error(), "serving another run") {
		t.Errorf("other run: %v", err)
	}
	// The acceptor gave up naming what never arrived (the first attempt's
	// streams 0 and 1 connected, then were closed by the dialer).
	err = <-accErr
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "missing forward streams [2]") {
		t.Errorf("accept error = %v", err)
	}
}

// A forward-only Receiver refuses a reverse stream with a clear reason.
func TestReceiverRefusesReverse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := traffic.NewReceiver(ln, traffic.Config{Streams: 1, BlockSize: 4096})
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	id, _ := traffic.NewRunID()
	_, err = traffic.DialStreams(ctx, (&net.Dialer{}).DialContext, []string{ln.Addr().String()}, traffic.Reverse, id, time.Second)
	if err == nil || !strings.Contains(err.Error(), "direction") {
		t.Errorf("dial reverse to a forward receiver: %v", err)
	}
	cancel()
	<-done
}

func TestRunID(t *testing.T) {
	id, err := traffic.NewRunID()
	if err != nil {
		t.Fatal(err)
	}
	back, err := traffic.ParseRunID(id.String())
	if err != nil || back != id || len(id.String()) != 32 {
		t.Errorf("round trip %s -> %s, %v", id, back, err)
	}
	for _, bad := range []string{"", "xyz", strings.Repeat("a", 31), strings.Repeat("a", 34)} {
		if _, err := traffic.ParseRunID(bad); err == nil {
			t.Errorf("ParseRunID(%q) succeeded", bad)
		}
	}
}

func TestConnsConstructorsValidate(t *testing.T) {
	cfg := traffic.Config{Streams: 2, Duration: time.Second, BlockSize: 1024}
	if _, err := traffic.NewSenderConns(nil, cfg); err == nil || !strings.Contains(err.Error(), "0 connections for 2 streams") {
		t.Errorf("NewSenderConns(nil): %v", err)
	}
	if _, err := traffic.NewReceiverConns(nil, traffic.Config{Streams: 0, BlockSize: 1}); err == nil || !strings.Contains(err.Error(), "stream count") {
		t.Errorf("NewReceiverConns(bad cfg): %v", err)
	}
}
