package traffic_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic"
)

func TestConfigValidate(t *testing.T) {
	ok := traffic.Config{Streams: 4, Duration: time.Second, BlockSize: traffic.DefaultBlockSize}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if err := traffic.DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig rejected: %v", err)
	}
	if got := (traffic.Config{}).WithDefaults().BlockSize; got != 128<<10 {
		t.Fatalf("WithDefaults block size = %d, want 131072", got)
	}
	for _, tc := range []struct {
		name string
		mod  func(*traffic.Config)
		want string
	}{
		{"zero streams", func(c *traffic.Config) { c.Streams = 0 }, "invalid stream count 0"},
		{"too many streams", func(c *traffic.Config) { c.Streams = traffic.MaxStreams + 1 }, "invalid stream count 4097"},
		{"negative duration", func(c *traffic.Config) { c.Duration = -time.Second }, "invalid duration -1s: must be positive"},
		{"zero duration", func(c *traffic.Config) { c.Duration = 0 }, "invalid duration 0s"},
		{"zero block size", func(c *traffic.Config) { c.BlockSize = 0 }, "invalid block size 0 bytes"},
		{"huge block size", func(c *traffic.Config) { c.BlockSize = traffic.MaxBlockSize + 1 }, "invalid block size"},
		{"negative connect timeout", func(c *traffic.Config) { c.ConnectTimeout = -1 }, "invalid connect timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

// runPair runs a receiver on ln and a sender dialling addr, sampling both
// sides concurrently while they run (for the race detector and to check the
// counters only grow). It returns the final samples.
func runPair(t *testing.T, ln net.Listener, dial traffic.DialFunc, cfg traffic.Config) (snd, rcv []traffic.StreamSample, elapsed time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	defer cancel()
	r := traffic.NewReceiver(ln, cfg)
	serveErr := make(chan error, 1)
	go func() { serveErr <- r.Serve(ctx) }()

	s := traffic.NewSender(dial, ln.Addr().String(), cfg)
	if err := s.Connect(ctx); err != nil {
		cancel()
		<-serveErr
		t.Fatalf("connect: %v", err)
	}
	stopSampling := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		prev := map[string]uint64{}
		for {
			for _, smp := range append(s.Sample(), r.Sample()...) {
				key := fmt.Sprint(smp.Role, smp.Stream)
				if smp.AppBytes < prev[key] {
					t.Errorf("%s stream %d went backwards: %d < %d", smp.Role, smp.Stream, smp.AppBytes, prev[key])
				}
				prev[key] = smp.AppBytes
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	start := time.Now()
	runErr := s.Run(ctx)
	elapsed = time.Since(start)
	err := <-serveErr
	close(stopSampling)
	wg.Wait()
	if runErr != nil {
		t.Fatalf("run: %v", runErr)
	}
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	return s.Sample(), r.Sample(), elapsed
}

// checkPair asserts per-stream byte equality and returns the payload total.
func checkPair(t *testing.T, cfg traffic.Config, snd, rcv []traffic.StreamSample) uint64 {
	t.Helper()
	if len(snd) != cfg.Streams || len(rcv) != cfg.Streams {
		t.Fatalf("got %d sender and %d receiver samples, want %d each", len(snd), len(rcv), cfg.Streams)
	}
	var total uint64
	for i := range snd {
		s, r := snd[i], rcv[i]
		if s.Stream != i || r.Stream != i || s.Role != traffic.RoleSender || r.Role != traffic.RoleReceiver {
			t.Fatalf("sample %d: sender %+v receiver %+v", i, s, r)
		}
		if s.AppBytes != r.AppBytes {
			t.Errorf("stream %d: sender wrote %d bytes, receiver read %d", i, s.AppBytes, r.AppBytes)
		}
		if s.AppBytes == 0 {
			t.Errorf("stream %d: no bytes sent", i)
		}
		if s.LocalAddr != r.RemoteAddr || s.RemoteAddr != r.LocalAddr {
			t.Errorf("stream %d: sender %s->%s, receiver %s<-%s", i, s.LocalAddr, s.RemoteAddr, r.LocalAddr, r.RemoteAddr)
		}
		if s.TCP == nil {
			t.Errorf("stream %d: no TCP info on the sender", i)
		} else {
			if s.TCP.SndMss == 0 || s.TCP.SndCwnd == 0 || s.TCP.RttUs == 0 {
				t.Errorf("stream %d: implausible TCP info %+v", i, *s.TCP)
			}
			// The kernel's own count: everything written was acknowledged.
			if s.TCP.BytesAcked < s.AppBytes {
				t.Errorf("stream %d: kernel acked %d bytes < %d written", i, s.TCP.BytesAcked, s.AppBytes)
			}
		}
		if r.TCP != nil {
			t.Errorf("stream %d: receiver sample has TCP info", i)
		}
		total += s.AppBytes
	}
	return total
}

func gbps(bytes uint64, d time.Duration) float64 { return float64(bytes) * 8 / d.Seconds() / 1e9 }

func TestLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := traffic.Config{Streams: 4, Duration: time.Second, BlockSize: traffic.DefaultBlockSize}
	snd, rcv, elapsed := runPair(t, ln, (&net.Dialer{}).DialContext, cfg)
	total := checkPair(t, cfg, snd, rcv)
	var retrans uint64
	for _, s := range snd {
		if s.TCP != nil {
			retrans += s.TCP.TotalRetrans
		}
	}
	t.Logf("loopback %d streams: %d payload bytes in %v = %.2f Gbit/s (app, whole run), %d retransmitted segments",
		cfg.Streams, total, elapsed.Round(time.Millisecond), gbps(total, elapsed), retrans)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestConnectRefused(t *testing.T) {
	addr := freePort(t)
	cfg := traffic.Config{Streams: 3, Duration: time.Second, BlockSize: 1024, ConnectTimeout: 2 * time.Second}
	s := traffic.NewSender((&net.Dialer{}).DialContext, addr, cfg)
	start := time.Now()
	err := s.Connect(context.Background())
	if took := time.Since(start); took > cfg.ConnectTimeout+time.Second {
		t.Errorf("connect took %v, want < %v", took, cfg.ConnectTimeout+time.Second)
	}
	if err == nil {
		t.Fatal("connect to a closed port succeeded")
	}
	for _, want := range []string{addr, "stream 0", "stream 1", "stream 2", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := s.Sample(); got != nil {
		t.Errorf("samples after failed connect: %+v", got)
	}
}

// A peer that completes the TCP handshake but never answers the hello (as
// with a port that is open but not ours, or a stuck receiver) must time out
// and be named.
func TestConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := traffic.Config{Streams: 2, Duration: time.Second, BlockSize: 1024, ConnectTimeout: 300 * time.Millisecond}
	s := traffic.NewSender((&net.Dialer{}).DialContext, ln.Addr().String(), cfg)
	start := time.Now()
	err = s.Connect(context.Background())
	if took := time.Since(start); took > cfg.ConnectTimeout+time.Second {
		t.Errorf("connect took %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") ||
		!strings.Contains(err.Error(), "stream 1") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("connect error = %v, want a timeout naming stream 1 and the address", err)
	}
}

func TestStreamCountMismatchRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := traffic.NewReceiver(ln, traffic.Config{Streams: 4, BlockSize: 4096})
	serveErr := make(chan error, 1)
	go func() { serveErr <- r.Serve(ctx) }()
	s := traffic.NewSender((&net.Dialer{}).DialContext, ln.Addr().String(),
		traffic.Config{Streams: 2, Duration: time.Second, BlockSize: 4096})
	err = s.Connect(ctx)
	if err == nil || !strings.Contains(err.Error(), "stream count differs") {
		t.Errorf("connect error = %v, want a refusal for the stream count", err)
	}
	cancel()
	err = <-serveErr
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "refused 2 connections") {
		t.Errorf("serve error = %v, want cancellation mentioning the refusals", err)
	}
}

// A receiver whose sender connected but never sends must not hang: cancelling
// its context ends Serve promptly with an error naming the missing streams.
func TestReceiverCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := traffic.Config{Streams: 2, Duration: time.Second, BlockSize: 4096}
	ctx, cancel := context.WithCancel(context.Background())
	r := traffic.NewReceiver(ln, cfg)
	serveErr := make(chan error, 1)
	go func() { serveErr <- r.Serve(ctx) }()
	s := traffic.NewSender((&net.Dialer{}).DialContext, ln.Addr().String(), cfg)
	if err := s.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := len(r.Sample()); n != 2 {
		t.Errorf("receiver has %d streams before cancel, want 2", n)
	}
	cancel()
	select {
	case err := <-serveErr:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for [0 1]") {
			t.Errorf("serve error = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	// The sender now finds its peer gone.
	if err := s.Run(context.Background()); err == nil {
		t.Error("run against a cancelled receiver succeeded")
	}
}

// Cancelling the sender's context aborts Run at once.
func TestSenderCancel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := traffic.Config{Streams: 2, Duration: time.Hour, BlockSize: traffic.DefaultBlockSize}
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	r := traffic.NewReceiver(ln, cfg)
	serveErr := make(chan error, 1)
	go func() { serveErr <- r.Serve(rctx) }()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s := traffic.NewSender((&net.Dialer{}).DialContext, ln.Addr().String(), cfg)
	start := time.Now()
	err = s.Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("run error = %v, want deadline exceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("run took %v after cancel", took)
	}
	// The sender closed cleanly (FIN), so the receiver ends with exact counts.
	if err := <-serveErr; err != nil {
		t.Fatalf("serve: %v", err)
	}
	snd, rcv := s.Sample(), r.Sample()
	for i := range snd {
		if snd[i].AppBytes != rcv[i].AppBytes || snd[i].AppBytes == 0 {
			t.Errorf("stream %d: sent %d, received %d", i, snd[i].AppBytes, rcv[i].AppBytes)
		}
	}
}
