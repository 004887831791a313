package traffic

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// drainStall is how long the sender waits for the receiver's trailer without
// the peer acknowledging any more data before it gives up.
const drainStall = 5 * time.Second

// Sender drives Config.Streams TCP streams to one address. Use Connect (or
// let Run call it), then Run once. Sample may be called at any time from any
// goroutine.
type Sender struct {
	dial DialFunc
	addr string
	cfg  Config

	mu      sync.Mutex // serialises Connect and Run, never held while sending
	state   int
	streams atomic.Pointer[[]*sendStream] // set by Connect, read by Sample
}

const (
	senderNew = iota
	senderConnected
	senderRan
)

type sendStream struct {
	idx           int
	conn          net.Conn
	raw           syscall.RawConn // nil if conn does not expose its socket
	local, remote string
	bytes         atomic.Uint64
	lastTCP       atomic.Pointer[TCPInfo]
}

// NewSender returns a Sender that will open cfg.Streams connections to addr
// through dial. cfg is checked by Connect.
func NewSender(dial DialFunc, addr string, cfg Config) *Sender {
	return &Sender{dial: dial, addr: addr, cfg: cfg}
}

// Connect establishes every stream (TCP handshake and hello/ack) before any
// payload is sent, dialling them in parallel, each bounded by the connect
// timeout. It succeeds only if all streams connect; otherwise it closes the
// ones that did and returns an error naming each failed stream and the
// address (a handshake that never completes, as with a filtered port, is
// reported as a timeout). Invalid configs fail before any dial. Connect may be
// retried after an error, but not called again after success.
func (s *Sender) Connect(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connectLocked(ctx)
}

func (s *Sender) connectLocked(ctx context.Context) error {
	if s.state != senderNew {
		return errors.New("sender: already connected")
	}
	if err := s.cfg.Validate(); err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	var runID [16]byte
	if _, err := rand.Read(runID[:]); err != nil {
		return fmt.Errorf("sender: run id: %w", err)
	}
	streams := make([]*sendStream, s.cfg.Streams)
	errs := make([]error, s.cfg.Streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			h := hello{version: protoVersion, stream: uint32(i), streams: uint32(s.cfg.Streams), runID: runID}
			streams[i], errs[i] = s.connectOne(ctx, h)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, st := range streams {
			if st != nil {
				_ = st.conn.Close()
			}
		}
		return fmt.Errorf("sender: connect to %s: %w", s.addr, err)
	}
	s.streams.Store(&streams)
	s.state = senderConnected
	return nil
}

func (s *Sender) connectOne(ctx context.Context, h hello) (*sendStream, error) {
	conn, err := dialHello(ctx, s.dial, s.addr, h, s.cfg.connectTimeout())
	if err != nil {
		return nil, err
	}
	return newSendStream(int(h.stream), conn), nil
}

func newSendStream(idx int, conn net.Conn) *sendStream {
	return &sendStream{
		idx:    idx,
		conn:   conn,
		raw:    rawConn(conn),
		local:  conn.LocalAddr().String(),
		remote: conn.RemoteAddr().String(),
	}
}

// dialHello dials addr and exchanges hello and ack, all within timeout (and
// ctx). Errors start with "stream N: <step>:"; a step that timed out says
// "no answer within <timeout>".
func dialHello(ctx context.Context, dial DialFunc, addr string, h hello, timeout time.Duration) (net.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(step string, err error) error {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			if ctx.Err() == nil {
				err = fmt.Errorf("no answer within %v (filtered port or receiver not serving?): %w", timeout, err)
			}
		}
		return fmt.Errorf("stream %d: %s: %w", h.stream, step, err)
	}
	conn, err := dial(cctx, "tcp", addr)
	if err != nil {
		return nil, fail("dial", err)
	}
	dl, _ := cctx.Deadline()
	_ = conn.SetDeadline(dl)
	stop := onDone(cctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	msg := h.marshal()
	_, err = conn.Write(msg[:])
	if err == nil {
		err = readAck(conn)
	}
	stop()
	if err != nil {
		_ = conn.Close()
		return nil, fail("hello", err)
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		_ = conn.Close()
		return nil, fail("clear deadline", err)
	}
	return conn, nil
}

// Run sends on every stream for Config.Duration, counted from the moment
// Run starts (calling Connect first if it was not called), then half-closes
// each stream, waits for the receiver's count of payload bytes and closes.
// It returns nil when every stream finished and the receiver confirmed
// exactly the bytes sent. Otherwise it returns the joined per-stream errors,
// each naming its stream ("stream 2: ..."); if ctx is cancelled, every
// connection is closed at once and the error wraps ctx.Err(). Run may be
// called only once. Counters stay readable through Sample afterwards.
func (s *Sender) Run(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == senderNew {
		if err := s.connectLocked(ctx); err != nil {
			return err
		}
	}
	if s.state != senderConnected {
		return errors.New("sender: run called twice")
	}
	s.state = senderRan
	streams := *s.streams.Load()
	stop := onDone(ctx, func() {
		for _, st := range streams {
			_ = st.conn.Close()
		}
	})
	defer stop()
	block := make([]byte, s.cfg.BlockSize) // read-only, shared by the streams
	deadline := time.Now().Add(s.cfg.Duration)
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Go(func() { errs[i] = pinned(s.cfg.CPUs, i, func() error { return st.run(deadline, block) }) })
	}
	wg.Wait()
	err := errors.Join(errs...)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil: // the stream errors are just the closed conns
		return fmt.Errorf("sender to %s: %w", s.addr, ctx.Err())
	default:
		return fmt.Errorf("sender to %s: %w", s.addr, err)
	}
}

// run is one stream's hot loop plus its shutdown handshake; it always
// closes the connection.
func (st *sendStream) run(deadline time.Time, block []byte) (err error) {
	defer func() {
		st.snapshotTCP()
		_ = st.conn.Close()
		if err != nil {
			err = fmt.Errorf("stream %d: %w", st.idx, err)
		}
	}()
	if err := st.conn.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("set deadline: %w", err)
	}
	if err := st.send(block); err != nil {
		return err
	}
	_ = st.conn.SetWriteDeadline(time.Time{})
	return st.finish()
}

// send writes block until the write deadline passes, counting every byte
// the kernel took (a partial write at the deadline included). It is a
// plain net.Conn.Write loop: no allocation per write, and on Linux the
// kernel-offered alternatives measured no better on a local path
// (fastpath_linux.go).
func (st *sendStream) send(block []byte) error {
	for {
		n, err := st.conn.Write(block)
		st.bytes.Add(uint64(n))
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil // Duration is over; n counted the partial write.
			}
			return fmt.Errorf("write: %w", err)
		}
	}
}

// finish half-closes the stream and checks the receiver's trailer. It keeps
// waiting as long as the peer keeps acknowledging data, so a slow path
// draining large socket buffers is not mistaken for a dead receiver.
func (st *sendStream) finish() error {
	st.snapshotTCP()
	cw, ok := st.conn.(interface{ CloseWrite() error })
	if !ok {
		return nil // cannot half-close: no confirmation possible
	}
	if err := cw.CloseWrite(); err != nil {
		return fmt.Errorf("half-close: %w", err)
	}
	var lastAcked uint64
	for {
		_ = st.conn.SetReadDeadline(time.Now().Add(drainStall))
		got, err := readTrailer(st.conn)
		if err == nil {
			if sent := st.bytes.Load(); got != sent {
				return fmt.Errorf("receiver counted %d payload bytes, sender wrote %d", got, sent)
			}
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("wait for receiver's count: %w", err)
		}
		ti := st.snapshotTCP()
		if ti == nil || ti.BytesAcked <= lastAcked {
			return fmt.Errorf("receiver did not confirm within %v of its last acknowledgement: %w", drainStall, err)
		}
		lastAcked = ti.BytesAcked
	}
}

// snapshotTCP reads TCP_INFO and keeps it as the stream's latest, so Sample
// still has it after the connection is closed.
func (st *sendStream) snapshotTCP() *TCPInfo {
	ti := readTCPInfo(st.raw)
	if ti != nil {
		st.lastTCP.Store(ti)
	}
	return ti
}

// Sample returns one sample per connected stream, ordered by stream index
// (none before Connect succeeded). Cheap and safe to call concurrently with
// Run: bytes are atomic counters, TCP info a getsockopt on the live socket
// or the last value read before it closed.
func (s *Sender) Sample() []StreamSample {
	p := s.streams.Load()
	if p == nil {
		return nil
	}
	out := make([]StreamSample, len(*p))
	for i, st := range *p {
		ti := st.snapshotTCP()
		if ti == nil {
			ti = st.lastTCP.Load()
		}
		var tcp *TCPInfo
		if ti != nil {
			c := *ti
			tcp = &c
		}
		out[i] = StreamSample{
			Stream: st.idx, Role: RoleSender,
			LocalAddr: st.local, RemoteAddr: st.remote,
			AppBytes: st.bytes.Load(), TCP: tcp,
		}
	}
	return out
}

// Close closes every stream's connection: use it when Run is not called
// after a successful Connect. Closing during Run aborts it. Idempotent;
// always returns nil.
func (s *Sender) Close() error {
	if p := s.streams.Load(); p != nil {
		for _, st := range *p {
			_ = st.conn.Close()
		}
	}
	return nil
}

// onDone runs fn on its own goroutine if ctx ends before stop is called.
// stop waits for that goroutine, so fn never runs after stop returns.
func onDone(ctx context.Context, fn func()) (stop func()) {
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-ctx.Done():
			fn()
		case <-quit:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-exited
	}
}
