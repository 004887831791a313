package sockstate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
)

// MaxPending is the most decoded events a Reader holds between two Drain
// calls; events beyond it are dropped and counted in Stats.ReaderDropped.
const MaxPending = 1 << 18

// drainWait bounds how long Drain waits for the reading goroutine to
// catch up with the ring buffer.
const drainWait = time.Second

// Stats are the probe's running totals since it was loaded (kernel
// counters summed over CPUs, plus the Reader's own drops).
type Stats struct {
	Opens  uint64 // connections that reached ESTABLISHED
	Closes uint64 // tracked connections that reached CLOSE
	// RingFull counts events lost because the ring buffer was full.
	RingFull uint64
	// ConnTableFull counts opens whose start could not be stored (the
	// connection table was full): their close is lost.
	ConnTableFull uint64
	// Untracked counts TCP sockets that reached CLOSE without having been
	// seen established: listeners, handshakes that never completed,
	// connections opened before the probe was attached (not reported:
	// their start is unknown), and the closes of connections already
	// counted in ConnTableFull. Not itself a loss.
	Untracked uint64
	// ReaderDropped counts records user space dropped: undecodable, or
	// beyond MaxPending.
	ReaderDropped uint64
}

// Lost returns the events the trace misses: RingFull + ConnTableFull +
// ReaderDropped.
func (s Stats) Lost() uint64 { return s.RingFull + s.ConnTableFull + s.ReaderDropped }

// Sub returns s - prev field by field (a field that went backwards gives 0).
func (s Stats) Sub(prev Stats) Stats {
	d := func(a, b uint64) uint64 { return a - min(a, b) }
	return Stats{
		Opens: d(s.Opens, prev.Opens), Closes: d(s.Closes, prev.Closes),
		RingFull: d(s.RingFull, prev.RingFull), ConnTableFull: d(s.ConnTableFull, prev.ConnTableFull),
		Untracked: d(s.Untracked, prev.Untracked), ReaderDropped: d(s.ReaderDropped, prev.ReaderDropped),
	}
}

// Clock pairs a CLOCK_MONOTONIC reading (bpf_ktime_get_ns's clock) with the
// wall-clock time taken at the same moment.
type Clock struct {
	Mono uint64
	Wall time.Time
}

// Now reads both clocks.
func Now() Clock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for CLOCK_MONOTONIC
	return Clock{Mono: uint64(ts.Nano()), Wall: time.Now()}
}

// Time converts a bpf_ktime_get_ns() value to wall-clock time (UTC).
func (c Clock) Time(ns uint64) time.Time {
	return c.Wall.Add(-time.Duration(int64(c.Mono) - int64(ns))).UTC()
}

// Reader owns the probe's ring buffer: a goroutine started by NewReader
// reads and decodes records and holds them until Drain. The kernel does not
// wake it for each record (a wake-up costs the program microseconds, see
// bpf/sockstate.bpf.c): it reads when Drain flushes the ring, or when the
// kernel wakes it because the ring is a quarter full.
// Close stops the goroutine. Methods are safe for concurrent use.
type Reader struct {
	rd    *ringbuf.Reader
	stats *ebpf.Map

	mu      sync.Mutex
	pending []Event
	dropped uint64 // undecodable or over MaxPending
	flushes uint64 // ErrFlushed returns seen by the goroutine
	err     error  // why the goroutine stopped, if not Close
	closed  bool   // the goroutine stopped because of Close
	flushed chan struct{}
	done    chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// NewReader starts reading the ring buffer of a loaded sockstate probe.
// Events are kept from this moment on, also those before a sampler's
// Baseline. Close the Reader before the loader.Loaded.
func NewReader(l *loader.Loaded) (*Reader, error) {
	ring, stats := l.Maps[bpf.SockstateMapNpSsEvents], l.Maps[bpf.SockstateMapNpSsStats]
	if ring == nil || stats == nil {
		return nil, fmt.Errorf("sockstate reader: maps missing from probe %q", l.Probe)
	}
	rd, err := ringbuf.NewReader(ring)
	if err != nil {
		return nil, fmt.Errorf("sockstate reader: %w", err)
	}
	r := &Reader{rd: rd, stats: stats, flushed: make(chan struct{}, 1), done: make(chan struct{})}
	go r.loop()
	return r, nil
}

func (r *Reader) loop() {
	defer close(r.done)
	var rec ringbuf.Record
	for {
		err := r.rd.ReadInto(&rec)
		r.mu.Lock()
		switch {
		case err == nil:
			ev, derr := Decode(rec.RawSample)
			if derr != nil || len(r.pending) >= MaxPending {
				r.dropped++
			} else {
				r.pending = append(r.pending, ev)
			}
		case errors.Is(err, ringbuf.ErrFlushed):
			r.flushes++
			select {
			case r.flushed <- struct{}{}:
			default:
			}
		case errors.Is(err, ringbuf.ErrClosed):
			r.closed = true
			r.mu.Unlock()
			return
		default:
			r.err = fmt.Errorf("read sockstate events: %w", err)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}

// Drain returns, in kernel-time order, the events that happened up to now
// (the returned Clock) and were not returned before; events that happen
// while Drain runs are kept for the next call. It first makes the reading
// goroutine catch up with every record already in the ring buffer (for at
// most 1 s). It returns an error wrapping ringbuf.ErrClosed after Close,
// or the read error that stopped the goroutine (the events read until then
// are still returned).
func (r *Reader) Drain() ([]Event, Clock, error) {
	clk := Now()
	r.mu.Lock()
	seen := r.flushes
	r.mu.Unlock()
	var flushErr error
	select {
	case <-r.done:
	default:
		if flushErr = r.rd.Flush(); flushErr == nil {
			r.waitFlush(seen)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, clk, fmt.Errorf("sockstate reader: %w", ringbuf.ErrClosed)
	}
	if flushErr != nil {
		return nil, clk, fmt.Errorf("flush sockstate events: %w", flushErr)
	}
	var out, keep []Event
	for _, e := range r.pending {
		if e.TimeNs() <= clk.Mono {
			out = append(out, e)
		} else {
			keep = append(keep, e)
		}
	}
	r.pending = keep
	slices.SortStableFunc(out, func(a, b Event) int { return cmp.Compare(a.TimeNs(), b.TimeNs()) })
	return out, clk, r.err
}

// waitFlush waits until the goroutine has seen a flush after seen, or
// stopped, or drainWait passed.
func (r *Reader) waitFlush(seen uint64) {
	timeout := time.NewTimer(drainWait)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		n := r.flushes
		r.mu.Unlock()
		if n > seen {
			return
		}
		select {
		case <-r.flushed:
		case <-r.done:
			return
		case <-timeout.C:
			return
		}
	}
}

// Stats returns the probe's running totals (kernel counters summed over
// every possible CPU).
func (r *Reader) Stats() (Stats, error) {
	var vals []bpf.SockstateNpSockStats
	if err := r.stats.Lookup(uint32(0), &vals); err != nil {
		return Stats{}, fmt.Errorf("read sockstate stats: %w", err)
	}
	var s Stats
	for _, v := range vals {
		s.Opens += v.Opens
		s.Closes += v.Closes
		s.RingFull += v.RingFail
		s.ConnTableFull += v.ConnFail
		s.Untracked += v.UntrackedClose
	}
	r.mu.Lock()
	s.ReaderDropped = r.dropped
	r.mu.Unlock()
	return s, nil
}

// Close stops the reading goroutine and releases the ring buffer's
// mapping; events not yet drained are discarded. It is idempotent.
func (r *Reader) Close() error {
	r.closeOnce.Do(func() {
		if err := r.rd.Close(); err != nil {
			r.closeErr = fmt.Errorf("close sockstate reader: %w", err)
		}
		<-r.done
	})
	return r.closeErr
}
