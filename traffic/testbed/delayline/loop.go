package delayline

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// maxSleep bounds one nanosleep, so a writer notices Close within this time
// even when the head packet is due much later.
const maxSleep = 20 * time.Millisecond

// timerSlackNs is the writer threads' timer slack (PR_SET_TIMERSLACK): the
// default 50 µs would add up to that much to every release.
const timerSlackNs = 1000

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// read queues every packet src delivers until stop is closed (src is closed
// then, which makes a blocked Read return). A packet that does not fit in
// the queue is dropped and counted.
func (d *direction) read(src Port, stop <-chan struct{}) error {
	big := d.pool.get(d.cfg.MaxFrame)
	defer func() { d.pool.put(big) }()
	for {
		n, err := src.Read(*big)
		if err != nil {
			if stopped(stop) || errors.Is(err, fs.ErrClosed) {
				return nil
			}
			switch {
			case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
				continue
			case errors.Is(err, unix.EFAULT) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EMSGSIZE):
				// One packet that did not fit the buffer: lost.
				d.readErrors.Add(1)
				continue
			}
			return fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			continue
		}
		release := time.Now().Add(d.cfg.Delay)
		if int(d.queuedBytes.Load())+n > d.cfg.MaxBytes || int(d.queued.Load()) >= d.cfg.MaxPackets {
			d.dropped.Add(1)
			d.droppedBytes.Add(uint64(n))
			continue
		}
		var buf *[]byte
		if c := d.pool.class(n); c < d.cfg.MaxFrame {
			// Small: copy out and keep the big buffer for the next read.
			buf = d.pool.get(n)
			copy(*buf, (*big)[:n])
		} else {
			buf, big = big, d.pool.get(d.cfg.MaxFrame)
		}
		d.queued.Add(1)
		d.queuedBytes.Add(int64(n))
		// Only this goroutine adds, and fewer than MaxPackets (the
		// channel's capacity) are held: never blocks.
		d.q <- packet{buf: buf, n: n, release: release}
	}
}

// write sends each queued packet to dst once it is due, in order, until stop
// is closed. It runs on a locked thread with a small timer slack so that
// nanosleep wakes close to the release time.
func (d *direction) write(dst Port, stop <-chan struct{}) error {
	runtime.LockOSThread()
	slackSet := unix.Prctl(unix.PR_SET_TIMERSLACK, timerSlackNs, 0, 0, 0) == nil
	defer func() {
		if slackSet {
			// 0 restores the thread's default slack.
			if unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) != nil {
				return // keep the thread locked: it exits with this goroutine
			}
		}
		runtime.UnlockOSThread()
	}()
	for {
		var p packet
		select {
		case p = <-d.q:
		case <-stop:
			return nil
		}
		if !sleepUntil(p.release, stop) {
			d.dequeued(p)
			d.pool.put(p.buf)
			return nil
		}
		if late := time.Since(p.release); late > LateThreshold {
			d.late.Add(1)
			if int64(late) > d.maxLate.Load() {
				d.maxLate.Store(int64(late)) // only this goroutine stores
			}
		}
		_, err := dst.Write((*p.buf)[:p.n])
		d.dequeued(p)
		d.pool.put(p.buf)
		switch {
		case err == nil:
			d.packets.Add(1)
			d.bytes.Add(uint64(p.n))
		case stopped(stop) || errors.Is(err, fs.ErrClosed):
			return nil
		case errors.Is(err, unix.EBADF) || errors.Is(err, unix.EIO) || errors.Is(err, unix.ENXIO):
			return fmt.Errorf("write: %w", err)
		default:
			// A packet the device refused (malformed, too long): lose it.
			d.writeErrors.Add(1)
		}
	}
}

// sleepUntil sleeps with nanosleep(2) until t (monotonic clock), waking at
// least every maxSleep to check stop. It returns false if stop was closed.
func sleepUntil(t time.Time, stop <-chan struct{}) bool {
	for {
		left := time.Until(t)
		if left <= 0 {
			return true
		}
		if stopped(stop) {
			return false
		}
		ts := unix.NsecToTimespec(min(left, maxSleep).Nanoseconds())
		_ = unix.Nanosleep(&ts, nil) // EINTR: the loop recomputes what is left
	}
}

// pool recycles packet buffers in three size classes, so that small packets
// (ACKs) do not pin a 64 KiB buffer each while queued.
type pool struct {
	sizes [3]int
	pools [3]sync.Pool
}

func newPool(maxFrame int) *pool {
	p := &pool{sizes: [3]int{min(2048, maxFrame), min(16384, maxFrame), maxFrame}}
	for i := range p.pools {
		size := p.sizes[i]
		p.pools[i].New = func() any {
			b := make([]byte, size)
			return &b
		}
	}
	return p
}

// class returns the size of the smallest class holding n bytes.
func (p *pool) class(n int) int {
	for _, s := range p.sizes {
		if n <= s {
			return s
		}
	}
	return p.sizes[len(p.sizes)-1]
}

// get returns a buffer of at least n bytes, of its class size.
func (p *pool) get(n int) *[]byte {
	for i, s := range p.sizes {
		if n <= s {
			return p.pools[i].Get().(*[]byte)
		}
	}
	b := make([]byte, n) // larger than any class: not pooled (put drops it)
	return &b
}

// put returns b to its class.
func (p *pool) put(b *[]byte) {
	for i, s := range p.sizes {
		if cap(*b) == s {
			*b = (*b)[:s]
			p.pools[i].Put(b)
			return
		}
	}
}
