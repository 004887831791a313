package traffic

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"
)

// A receiving stream's sample carries the socket's SO_INCOMING_CPU (an
// online CPU) once data arrived, and keeps the last value after the
// connection closed; the sender's carries none.
func TestReceiverSteering(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Streams: 1, Duration: 300 * time.Millisecond, BlockSize: DefaultBlockSize}
	r := NewReceiver(ln, cfg)
	done := make(chan error, 1)
	go func() { done <- r.Serve(t.Context()) }()
	s := NewSender(func(ctx context.Context, n, a string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, n, a)
	}, ln.Addr().String(), cfg)
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
