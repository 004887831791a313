package traffic

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// Direction says which end of a data connection writes payload.
type Direction uint8

const (
	// Forward: the dialing end sends, the accepting end receives (the
	// default of iperf3 and ntttcp).
	Forward Direction = iota
	// Reverse: the accepting end sends, the dialing end receives
	// (iperf3 -R), so a client behind a firewall can still measure its
	// download.
	Reverse
)

// String returns "forward" or "reverse".
func (d Direction) String() string {
	switch d {
	case Forward:
		return "forward"
	case Reverse:
		return "reverse"
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

func (d Direction) flags() uint16 {
	if d == Reverse {
		return flagReverse
	}
	return 0
}

// RunID identifies the data connections of one run: the accepting end
// refuses streams carrying another run's id.
type RunID [16]byte

// NewRunID returns a random RunID.
func NewRunID() (RunID, error) {
	var id RunID
	if _, err := rand.Read(id[:]); err != nil {
		return id, fmt.Errorf("run id: %w", err)
	}
	return id, nil
}

// String returns the id as 32 lowercase hex digits.
func (id RunID) String() string { return hex.EncodeToString(id[:]) }

// ParseRunID parses 32 hex digits, as String writes them.
func ParseRunID(s string) (RunID, error) {
	var id RunID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("invalid run id %q: want 32 hex digits", s)
	}
	copy(id[:], b)
	return id, nil
}

// StreamError is one stream that could not be established.
type StreamError struct {
	// Stream is the stream index; Addr the address it was dialled at.
	Stream int
	Addr   string
	// Timeout is true when the handshake or the hello/ack exchange did not
	// complete in time (the signature of a filtered port), false when it was
	// refused or failed otherwise.
	Timeout bool
	Err     error
}

// ConnectError is returned by DialStreams when some streams could not be
// established; none of the others is kept open (a run with k of N streams
// is never started as an N-stream run).
type ConnectError struct {
	// Total is the number of streams asked for; Failed the ones that
	// failed, by stream index. Total - len(Failed) connected (and were
	// closed again).
	Total  int
	Failed []StreamError
}

// Error says how many streams connected and lists each failure with its
// address.
func (e *ConnectError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d streams connected; failed at %s:", e.Total-len(e.Failed), e.Total, strings.Join(e.FailedAddrs(), ", "))
	for _, f := range e.Failed {
		fmt.Fprintf(&b, " [%s: %v]", f.Addr, f.Err)
	}
	return b.String()
}

// Unwrap returns the per-stream errors.
func (e *ConnectError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Err
	}
	return out
}

// FailedAddrs returns the distinct addresses that had a failed stream,
// sorted.
func (e *ConnectError) FailedAddrs() []string {
	var out []string
	for _, f := range e.Failed {
		out = append(out, f.Addr)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DialStreams establishes len(addrs) streams of one run in parallel, stream
// i to addrs[i], each TCP handshake plus hello/ack bounded by timeout (and
// ctx), before any payload flows. dir says which end will send. It returns
// the connections, conns[i] being stream i, only if every stream
// connected; otherwise it closes the ones that did and returns a
// *ConnectError naming each failed stream and address. Hand the conns to
// NewSenderConns (Forward) or NewReceiverConns (Reverse).
func DialStreams(ctx context.Context, dial DialFunc, addrs []string, dir Direction, id RunID, timeout time.Duration) ([]net.Conn, error) {
	if len(addrs) < 1 || len(addrs) > MaxStreams {
		return nil, fmt.Errorf("dial streams: invalid stream count %d: must be 1..%d", len(addrs), MaxStreams)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("dial streams: invalid connect timeout %v: must be positive", timeout)
	}
	conns := make([]net.Conn, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Go(func() {
			h := hello{version: protoVersion, flags: dir.flags(), stream: uint32(i), streams: uint32(len(addrs)), runID: id}
			conns[i], errs[i] = dialHello(ctx, dial, addr, h, timeout)
		})
	}
	wg.Wait()
	ce := &ConnectError{Total: len(addrs)}
	for i, err := range errs {
		if err != nil {
			ce.Failed = append(ce.Failed, StreamError{
				Stream: i, Addr: addrs[i], Err: err,
				Timeout: errors.Is(err, context.DeadlineExceeded) || isTimeout(err),
			})
		}
	}
	if len(ce.Failed) == 0 {
		return conns, nil
	}
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", ce, ctx.Err())
	}
	return nil, ce
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// NewSenderConns returns a Sender over streams that are already established
// (by DialStreams with Forward, or AcceptStreams with Reverse): conns[i] is
// stream i. Connect is not needed; Run sends for cfg.Duration and checks the
// peer's count as usual, and closes the conns. It fails, leaving conns
// open, if cfg is invalid or len(conns) != cfg.Streams.
func NewSenderConns(conns []net.Conn, cfg Config) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sender: %w", err)
	}
	if len(conns) != cfg.Streams {
		return nil, fmt.Errorf("sender: %d connections for %d streams", len(conns), cfg.Streams)
	}
	streams := make([]*sendStream, len(conns))
	for i, c := range conns {
		streams[i] = newSendStream(i, c)
	}
	s := &Sender{cfg: cfg, state: senderConnected, addr: peerHost(conns[0])}
	s.streams.Store(&streams)
	return s, nil
}

// NewReceiverConns returns a Receiver over streams that are already
// established (by AcceptStreams with Forward, or DialStreams with Reverse):
// conns[i] is stream i. Serve reads every stream to its end and sends the
// trailers as usual, and closes the conns. It fails, leaving conns open, if
// cfg is invalid (Duration is ignored) or len(conns) != cfg.Streams.
func NewReceiverConns(conns []net.Conn, cfg Config) (*Receiver, error) {
	if err := cfg.validateCommon(); err != nil {
		return nil, fmt.Errorf("receiver: %w", err)
	}
	if len(conns) != cfg.Streams {
		return nil, fmt.Errorf("receiver: %d connections for %d streams", len(conns), cfg.Streams)
	}
	r := NewReceiver(nil, cfg)
	r.pre = slices.Clone(conns)
	for i, c := range conns {
		r.slots[i].Store(&recvStream{idx: i, local: c.LocalAddr().String(), remote: c.RemoteAddr().String(), raw: rawConn(c)})
	}
	return r, nil
}

func peerHost(c net.Conn) string {
	a := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// Close releases what the Receiver holds when Serve will not be called: its
// listener, or the connections given to NewReceiverConns. Once Serve has
// started it does nothing (cancel Serve's context instead); Serve after
// Close returns an error. Idempotent; returns nil.
func (r *Receiver) Close() error {
	if r.served.CompareAndSwap(false, true) {
		r.closeInputs()
	}
	return nil
}
