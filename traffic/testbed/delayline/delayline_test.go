package delayline

import (
	"context"
	"encoding/binary"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// seqpair returns the two ends of a SOCK_SEQPACKET socket pair as
// non-blocking files: each Read returns one whole message, like a TUN.
func seqpair(t *testing.T) (app, line *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	app, line = os.NewFile(uintptr(fds[0]), "app"), os.NewFile(uintptr(fds[1]), "line")
	t.Cleanup(func() { app.Close() })
	return app, line
}

// rig is a line between two socket pairs; the test talks to the app ends.
type rig struct {
	aApp, bApp *os.File
	line       *Line
}

func newRig(t *testing.T, ctx context.Context, cfg Config) *rig {
	t.Helper()
	aApp, aLine := seqpair(t)
	bApp, bLine := seqpair(t)
	l, err := Start(ctx, aLine, bLine, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return &rig{aApp: aApp, bApp: bApp, line: l}
}

func readTimeout(t *testing.T, f *os.File, buf []byte, d time.Duration) int {
	t.Helper()
	_ = f.SetReadDeadline(time.Now().Add(d))
	n, err := f.Read(buf)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return n
}

// Every packet arrives after the delay (never before), within a few ms,
// in order, in both directions.
func TestDelayAndOrder(t *testing.T) {
	const delay = 10 * time.Millisecond
	r := newRig(t, context.Background(), Config{Delay: delay})
	for _, dir := range []struct {
		name     string
		src, dst *os.File
	}{{"a->b", r.aApp, r.bApp}, {"b->a", r.bApp, r.aApp}} {
		const n = 50
		sent := make([]time.Time, n)
		go func() {
			for i := range n {
				var msg [100]byte
				binary.BigEndian.PutUint32(msg[:], uint32(i))
				sent[i] = time.Now()
				_, _ = dir.src.Write(msg[:])
				time.Sleep(200 * time.Microsecond)
			}
		}()
		var lat []time.Duration
		buf := make([]byte, 2048)
		for i := range n {
			m := readTimeout(t, dir.dst, buf, time.Second)
			got := time.Now()
			if m != 100 {
				t.Fatalf("%s: packet %d has %d bytes, want 100", dir.name, i, m)
			}
			if seq := binary.BigEndian.Uint32(buf); seq != uint32(i) {
				t.Fatalf("%s: packet %d arrived in place %d", dir.name, seq, i)
			}
			lat = append(lat, got.Sub(sent[i]))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		t.Logf("%s: delay %v: min %v, median %v, max %v", dir.name, delay, lat[0], lat[n/2], lat[n-1])
		if lat[0] < delay {
			t.Errorf("%s: a packet took %v < delay %v", dir.name, lat[0], delay)
		}
		// Generous: shared CI machines and -race stretch wake-ups.
		if lat[n/2] > delay+5*time.Millisecond {
			t.Errorf("%s: median %v, want < delay + 5ms", dir.name, lat[n/2])
		}
	}
	// The writer counts a packet once Write returned, which may be just
	// after the app read it.
	st := r.line.Stats()
	for deadline := time.Now().Add(time.Second); st.BA.Packets < 50 && time.Now().Before(deadline); st = r.line.Stats() {
		time.Sleep(time.Millisecond)
	}
	if st.AB.Packets != 50 || st.BA.Packets != 50 || st.AB.Bytes != 5000 || st.AB.Dropped != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A queue bounded to 10 packets drops what does not fit, and counts it.
func TestQueueDrops(t *testing.T) {
	r := newRig(t, context.Background(), Config{Delay: 200 * time.Millisecond, MaxPackets: 10})
	const n = 30
	for range n {
		if _, err := r.aApp.Write(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 2048)
	got := 0
	for got < 10 {
		readTimeout(t, r.bApp, buf, 2*time.Second)
		got++
	}
	// Nothing more arrives.
	_ = r.bApp.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := r.bApp.Read(buf); err == nil {
		t.Error("more than MaxPackets packets passed")
	}
	st := r.line.Stats().AB
	for deadline := time.Now().Add(time.Second); st.Packets < 10 && time.Now().Before(deadline); st = r.line.Stats().AB {
		time.Sleep(time.Millisecond)
	}
	t.Logf("a->b: %+v", st)
	if st.Packets != 10 || st.Dropped != n-10 || st.DroppedBytes != (n-10)*64 {
		t.Errorf("stats %+v: want 10 forwarded, %d dropped", st, n-10)
	}
}

// The byte bound drops too.
func TestQueueByteBound(t *testing.T) {
	r := newRig(t, context.Background(), Config{Delay: 200 * time.Millisecond, MaxBytes: 4096, MaxFrame: 1024})
	for range 10 {
		if _, err := r.aApp.Write(make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if st := r.line.Stats().AB; st.Queued != 4 || st.Dropped != 6 {
		t.Errorf("stats %+v: want 4 queued, 6 dropped", st)
	}
}

// Close with packets queued and readers blocked returns promptly, closes
// the ports and stops every goroutine; cancelling the context does too.
func TestCloseAndCancel(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, viaCtx := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		aApp, aLine := seqpair(t)
		_, bLine := seqpair(t)
		l, err := Start(ctx, aLine, bLine, Config{Delay: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = aApp.Write([]byte("queued"))
		time.Sleep(20 * time.Millisecond)
		start := time.Now()
		if viaCtx {
			cancel()
			<-l.Done()
		}
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		cancel()
		if el := time.Since(start); el > time.Second {
			t.Errorf("close took %v", el)
		}
		if _, err := aLine.Write([]byte("x")); err == nil {
			t.Error("port still open after Close")
		}
		if err := l.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
		if st := l.Stats(); st.AB.Queued != 0 || st.AB.Packets != 0 {
			t.Errorf("after close: %+v", st)
		}
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base {
		t.Errorf("%d goroutines, %d before", g, base)
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, c := range []Config{{Delay: -1}, {Delay: MaxDelay + 1}, {MaxPackets: -1}, {MaxBytes: 10}} {
		_, aLine := seqpair(t)
		_, bLine := seqpair(t)
		if _, err := Start(context.Background(), aLine, bLine, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
		if _, err := aLine.Write([]byte("x")); err == nil {
			t.Errorf("%+v: port left open after failed Start", c)
		}
	}
}
