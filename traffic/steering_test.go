package traffic

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A receiving stream's sample carries the socket's SO_INCOMING_CPU (an
// online CPU) once data arrived, and keeps the last value after the
// connection closed; the sender's carries none.
func TestReceiverSteering(t *testing.T) {
	r, s, done := loopbackPair(t, Config{Streams: 1, Duration: 300 * time.Millisecond, BlockSize: DefaultBlockSize})
	mid := make(chan []StreamSample, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		mid <- r.Sample()
	}()
	if err := s.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	during, after := <-mid, r.Sample()
	for _, ss := range [][]StreamSample{during, after} {
		if len(ss) != 1 || ss[0].Steering == nil || ss[0].Steering.CPU < 0 || int(ss[0].Steering.CPU) >= runtime.NumCPU() {
			t.Errorf("receiver samples %+v: want an online CPU", ss)
		}
	}
	for _, x := range s.Sample() {
		if x.Steering != nil {
			t.Errorf("sender sample with steering %+v", x.Steering)
		}
	}
}

// Streams pinned to one CPU (Config.CPUs) run their loops there: on
// loopback the receive softirq that a send raises runs on the sending CPU,
// so every receiving socket reports that CPU as SO_INCOMING_CPU; pinned to
// each CPU in turn, the sockets follow. An invalid CPU is refused.
func TestPinnedStreams(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil || allowed.Count() < 2 {
		t.Skip("needs two CPUs this process may run on")
	}
	for cpu := 0; cpu < 2; cpu++ {
		if !allowed.IsSet(cpu) {
			continue
		}
		r, s, done := loopbackPair(t, Config{Streams: 2, Duration: 300 * time.Millisecond, BlockSize: DefaultBlockSize, CPUs: []int{cpu}})
		if err := s.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, x := range r.Sample() {
			if x.Steering == nil || x.Steering.CPU != int32(cpu) {
				t.Errorf("streams pinned to CPU %d: stream %d received on %+v", cpu, x.Stream, x.Steering)
			}
		}
	}
	if err := (Config{Streams: 1, Duration: time.Second, BlockSize: 1, CPUs: []int{-1}}).Validate(); err == nil {
		t.Error("CPU -1 accepted")
	}
}

// loopbackPair starts a Receiver serving on a loopback listener and
// returns it, a Sender to it (not yet run) and Serve's result.
func loopbackPair(t *testing.T, cfg Config) (*Receiver, *Sender, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := NewReceiver(ln, cfg)
	done := make(chan error, 1)
	go func() { done <- r.Serve(t.Context()) }()
	s := NewSender(func(ctx context.Context, n, a string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, n, a)
	}, ln.Addr().String(), cfg)
	return r, s, done
}
