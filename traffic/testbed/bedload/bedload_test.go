package bedload_test

import (
	"testing"
	"time"

	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/bedload"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// Every stream's payload arrives whole: what each sender wrote is what
// its receiver read, per stream, and both ends name the same connection.
func TestRunDeliversEveryByte(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	sent, rcvd := bedload.Run(t, bed, traffic.Config{Streams: 3, Duration: 500 * time.Millisecond, BlockSize: traffic.DefaultBlockSize})
	if len(sent) != 3 || len(rcvd) != 3 {
		t.Fatalf("%d sender and %d receiver samples, want 3 each", len(sent), len(rcvd))
	}
	got := map[int]traffic.StreamSample{}
	for _, r := range rcvd {
		got[r.Stream] = r
	}
	for _, s := range sent {
		r := got[s.Stream]
		if s.AppBytes == 0 || r.AppBytes != s.AppBytes || r.RemoteAddr != s.LocalAddr || r.LocalAddr != s.RemoteAddr {
			t.Errorf("stream %d: sent %d (%s→%s), received %d (%s←%s)", s.Stream, s.AppBytes, s.LocalAddr, s.RemoteAddr,
				r.AppBytes, r.LocalAddr, r.RemoteAddr)
		}
	}
}

// Stop ends a transfer before its Duration; Ended says it had not ended
// by itself before.
func TestStopEndsEarly(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	tr := bedload.Start(t, bed, traffic.Config{Streams: 1, Duration: time.Minute, BlockSize: traffic.DefaultBlockSize})
	time.Sleep(200 * time.Millisecond)
	if tr.Ended() {
		t.Fatal("ended after 200 ms of a minute")
	}
	start := time.Now()
	tr.Stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if sent, _ := tr.Sample(); len(sent) != 1 || sent[0].AppBytes == 0 {
		t.Errorf("nothing sent before Stop: %+v", sent)
	}
}
