package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// helloTimeout bounds how long an accepted connection may take to send its
// hello, so a silent peer cannot hold a slot.
const helloTimeout = 10 * time.Second

// Receiver sinks the streams of one run (one Sender's Connect and Run). Create
// it with NewReceiver, call Serve once; Sample may be called at any time from
// any goroutine.
type Receiver struct {
	ln    net.Listener
	cfg   Config
	slots []atomic.Pointer[recvStream] // by stream index; set once when accepted

	served atomic.Bool

	mu         sync.Mutex // registration and bookkeeping, not the read path
	haveRun    bool
	runID      [16]byte
	conns      map[net.Conn]struct{}
	ended      int
	done       []bool // by stream index: ended, cleanly or not
	streamErrs []error
	rejected   int
	lastReject error
	finished   chan struct{} // closed when every stream ended
	pre        []net.Conn    // NewReceiverConns: stream i's connection; ln is nil

	sink recvSink // the streams' shared discard buffer (fast path)
}

type recvStream struct {
	idx           int
	local, remote string
	bytes         atomic.Uint64
	raw           syscall.RawConn // nil: no socket access
	// steer is the latest SO_INCOMING_CPU / SO_INCOMING_NAPI_ID read (nil
	// before the first), kept for samples after the socket closed.
	steer atomic.Pointer[Steering]
}

// NewReceiver returns a Receiver for cfg.Streams streams on ln. It uses
// cfg.Streams and cfg.BlockSize (the read buffer per stream); Duration is
// ignored. Serve takes ownership of ln and closes it when it returns.
func NewReceiver(ln net.Listener, cfg Config) *Receiver {
	r := &Receiver{ln: ln, cfg: cfg, conns: map[net.Conn]struct{}{}, finished: make(chan struct{})}
	r.sink.size = cfg.BlockSize
	if cfg.Streams > 0 && cfg.Streams <= MaxStreams {
		r.slots = make([]atomic.Pointer[recvStream], cfg.Streams)
		r.done = make([]bool, cfg.Streams)
	}
	return r
}

// Serve accepts connections until every one of Config.Streams streams has
// reached EOF, reading and counting their payload, then returns. A connection
// that does not speak the protocol is dropped; one that does but does not fit
// this run (other run, duplicate or out-of-range stream, wrong stream count)
// is refused with a reason the sender reports. Serve returns nil when every
// stream ended cleanly, or the joined errors of the streams that failed
// (each naming its stream). If ctx is cancelled (or Accept fails) first, it
// closes the listener and every accepted connection and returns an error
// saying which streams had not finished, wrapping ctx.Err() (or the Accept
// error). Serve closes ln in every case and may be called only once.
func (r *Receiver) Serve(ctx context.Context) error {
	if !r.served.CompareAndSwap(false, true) {
		return errors.New("receiver: serve called twice")
	}
	if err := r.cfg.validateCommon(); err != nil {
		r.closeInputs()
		return fmt.Errorf("receiver: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var wg sync.WaitGroup
	if r.ln == nil { // NewReceiverConns: every stream is already here
		for i, c := range r.pre {
			if !r.track(c) {
				_ = c.Close()
				continue
			}
			st := r.slots[i].Load()
			wg.Go(func() {
				defer r.release(c)
				r.serveStream(st, c)
			})
		}
		r.pre = nil
	} else {
		wg.Go(func() {
			for {
				c, err := r.ln.Accept()
				if err != nil {
					cancel(fmt.Errorf("accept: %w", err))
					return
				}
				if !r.track(c) {
					_ = c.Close() // Serve is stopping
					continue      // until Accept fails on the closed listener
				}
				wg.Go(func() { r.handle(c) })
			}
		})
	}

	var stopped error // why Serve stopped before every stream ended
	select {
	case <-r.finished:
	case <-ctx.Done():
		r.mu.Lock()
		stopped = fmt.Errorf("%d of %d streams ended, waiting for %v", r.ended, r.cfg.Streams, r.unfinished())
		if r.rejected > 0 {
			stopped = fmt.Errorf("%w; refused %d connections (last: %v)", stopped, r.rejected, r.lastReject)
		}
		r.mu.Unlock()
		stopped = fmt.Errorf("%w: %w", stopped, context.Cause(ctx))
	}
	r.shutdown()
	wg.Wait()
	if stopped != nil {
		return fmt.Errorf("receiver: %w", stopped)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := errors.Join(r.streamErrs...); err != nil {
		return fmt.Errorf("receiver: %w", err)
	}
	return nil
}

// closeInputs closes the listener, or the given connections of a Receiver
// made by NewReceiverConns that never served them.
func (r *Receiver) closeInputs() {
	if r.ln != nil {
		_ = r.ln.Close()
	}
	for _, c := range r.pre {
		_ = c.Close()
	}
	r.pre = nil
}

// shutdown closes the listener and every accepted connection, and makes
// track refuse new ones.
func (r *Receiver) shutdown() {
	if r.ln != nil {
		_ = r.ln.Close()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		_ = c.Close()
	}
	r.conns = nil
}

// track registers c for closing by shutdown; false once shutdown ran.
func (r *Receiver) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Receiver) untrack(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns != nil {
		delete(r.conns, c)
	}
}

// unfinished lists stream indexes that have not ended. r.mu must be held.
func (r *Receiver) unfinished() []int {
	var out []int
	for i, d := range r.done {
		if !d {
			out = append(out, i)
		}
	}
	return out
}

// release untracks and closes c.
func (r *Receiver) release(c net.Conn) {
	r.untrack(c)
	_ = c.Close()
}

func (r *Receiver) handle(c net.Conn) {
	defer r.release(c)
	st, err := r.handshake(c)
	if err != nil {
		if !errors.Is(err, errNotNetprof) && !errors.Is(err, errRefused) {
			r.mu.Lock()
			r.noteReject(c, err)
			r.mu.Unlock()
		}
		return
	}
	r.serveStream(st, c)
}

// serveStream receives one stream to its end and records how it ended.
func (r *Receiver) serveStream(st *recvStream, c net.Conn) {
	err := pinned(r.cfg.CPUs, st.idx, func() error { return r.receive(st, c) })
	if s := readSteering(st.raw); s != nil { // the socket is still open: keep its last steering
		st.steer.Store(s)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.streamErrs = append(r.streamErrs, fmt.Errorf("stream %d: %w", st.idx, err))
	}
	r.done[st.idx] = true
	r.ended++
	if r.ended == r.cfg.Streams {
		close(r.finished)
	}
}

// handshake reads the hello, claims the stream's slot and acks it.
func (r *Receiver) handshake(c net.Conn) (*recvStream, error) {
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	h, err := readHello(c)
	if err != nil {
		return nil, err
	}
	status := r.claim(h, c)
	if err := writeAck(c, status); err != nil {
		return nil, fmt.Errorf("stream %d: write ack: %w", h.stream, err)
	}
	if status != ackOK {
		return nil, errRefused
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("stream %d: clear deadline: %w", h.stream, err)
	}
	return r.slots[h.stream].Load(), nil
}

// claim takes the stream's slot, or records why not (before the sender
// hears of it, so Serve's report already includes the refusal).
func (r *Receiver) claim(h hello, c net.Conn) uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	status := r.check(h)
	if status != ackOK {
		r.noteReject(c, fmt.Errorf("stream %d: refused: %s", h.stream, ackText[status]))
		return status
	}
	r.haveRun, r.runID = true, h.runID
	r.slots[h.stream].Store(&recvStream{
		idx:    int(h.stream),
		local:  c.LocalAddr().String(),
		remote: c.RemoteAddr().String(),
		raw:    rawConn(c),
	})
	return ackOK
}

// errRefused marks a hello refused by claim (already recorded).
var errRefused = errors.New("refused")

// noteReject records a refused connection. r.mu must be held.
func (r *Receiver) noteReject(c net.Conn, err error) {
	r.rejected++
	r.lastReject = fmt.Errorf("%s: %w", c.RemoteAddr(), err)
}

// check returns the ack status for h. r.mu must be held.
func (r *Receiver) check(h hello) uint32 {
	switch {
	case h.version != protoVersion:
		return ackBadVersion
	case h.flags&^knownFlags != 0:
		return ackBadFlags
	case h.flags&flagReverse != 0:
		return ackDirection
	case int(h.streams) != r.cfg.Streams:
		return ackStreamCount
	case int(h.stream) >= r.cfg.Streams:
		return ackBadStream
	case r.haveRun && h.runID != r.runID:
		return ackOtherRun
	case r.slots[h.stream].Load() != nil:
		return ackDuplicate
	}
	return ackOK
}

// receive is the hot loop: read (or discard, on the fast path) until EOF,
// counting every byte, then send the trailer with the count.
func (r *Receiver) receive(st *recvStream, c net.Conn) error {
	count := func(n int) { st.bytes.Add(uint64(n)) }
	err := receiveFast(rawConn(c), &r.sink, r.cfg.Streams, count)
	if errors.Is(err, errFastPathUnsupported) {
		err = readAll(c, r.cfg.BlockSize, count)
	}
	if err != nil {
		return err
	}
	// The sender checks this count; if it is gone, that is its error to
	// report, not ours.
	_ = c.SetWriteDeadline(time.Now().Add(helloTimeout))
	_ = writeTrailer(c, st.bytes.Load())
	return nil
}

// readAll is the generic receive loop: net.Conn.Read into a buffer of
// size bytes until EOF.
func readAll(c net.Conn, size int, count func(int)) error {
	buf := make([]byte, size)
	for {
		n, err := c.Read(buf)
		count(n)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
}

// Sample returns one sample per stream accepted so far, ordered by stream
// index, with TCP nil. Cheap and safe to call concurrently with Serve.
func (r *Receiver) Sample() []StreamSample {
	var out []StreamSample
	for i := range r.slots {
		st := r.slots[i].Load()
		if st == nil {
			continue
		}
		if s := readSteering(st.raw); s != nil {
			st.steer.Store(s)
		}
		out = append(out, StreamSample{
			Stream: st.idx, Role: RoleReceiver,
			LocalAddr: st.local, RemoteAddr: st.remote,
			AppBytes: st.bytes.Load(), Steering: st.steer.Load(),
		})
	}
	return out
}
