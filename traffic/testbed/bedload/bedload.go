// Package bedload drives the traffic generator across a test bed for
// kernel tests of the probes: a traffic.Receiver listening in B and a
// traffic.Sender dialling it from A, with nothing of netprof's commands
// (bench) in between, so a probe's own package can load its programs,
// make load and compare what it counted with the kernel's ground truth.
package bedload

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
)

// Transfer is a running transfer from A to B.
type Transfer struct {
	s      *traffic.Sender
	r      *traffic.Receiver
	cancel context.CancelFunc
	wg     sync.WaitGroup
	runErr error
	srvErr error
	ended  atomic.Bool // the sender's Run returned
}

// Start listens in B on port 5201, connects cfg.Streams streams from A and
// starts sending for cfg.Duration. It fails t when the streams cannot be
// set up; t.Cleanup stops a transfer the test did not Wait for.
func Start(t testing.TB, bed *testbed.Bed, cfg traffic.Config) *Transfer {
	t.Helper()
	b := bed.B()
	ln, err := b.Listen("tcp", netip.AddrPortFrom(b.Addr, 5201).String())
	if err != nil {
		t.Fatalf("listen in %s: %v", b.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+30*time.Second)
	tr := &Transfer{r: traffic.NewReceiver(ln, cfg), cancel: cancel}
	srv := make(chan struct{})
	tr.wg.Go(func() {
		defer close(srv)
		tr.srvErr = tr.r.Serve(ctx)
	})
	tr.s = traffic.NewSender(bed.A().Dial, ln.Addr().String(), cfg)
	if err := tr.s.Connect(ctx); err != nil {
		cancel()
		_ = ln.Close()
		<-srv
		t.Fatalf("connect %d streams from %s: %v", cfg.Streams, bed.A().Name, err)
	}
	tr.wg.Go(func() {
		tr.runErr = tr.s.Run(ctx)
		tr.ended.Store(true)
	})
	t.Cleanup(func() {
		cancel()
		tr.wg.Wait()
	})
	return tr
}

// Sample returns both ends' current per-stream counters (sender's first).
func (tr *Transfer) Sample() (sent, received []traffic.StreamSample) {
	return tr.s.Sample(), tr.r.Sample()
}

// Wait waits for the sender's Duration to end and the receiver to see
// every stream closed, and returns both ends' final counters. An error
// of either end is returned.
func (tr *Transfer) Wait() (sent, received []traffic.StreamSample, err error) {
	tr.wg.Wait()
	tr.cancel()
	switch {
	case tr.runErr != nil:
		err = fmt.Errorf("sender: %w", tr.runErr)
	case tr.srvErr != nil:
		err = fmt.Errorf("receiver: %w", tr.srvErr)
	}
	sent, received = tr.Sample()
	return sent, received, err
}

// Ended says whether the sender has stopped sending (its Duration over,
// or an error).
func (tr *Transfer) Ended() bool { return tr.ended.Load() }

// Stop ends the transfer now (both ends' connections closed) and waits
// for its goroutines; the errors that causes are not reported.
func (tr *Transfer) Stop() {
	tr.cancel()
	tr.wg.Wait()
}

// Run is Start then Wait, failing t on error.
func Run(t testing.TB, bed *testbed.Bed, cfg traffic.Config) (sent, received []traffic.StreamSample) {
	t.Helper()
	sent, received, err := Start(t, bed, cfg).Wait()
	if err != nil {
		t.Fatal(err)
	}
	return sent, received
}
