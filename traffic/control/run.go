package control

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/netprof/netprof/traffic"
)

// FailedStream is one data stream ConnectData could not establish.
type FailedStream struct {
	// Stream is the index within its direction; Port the server port it
	// was dialled at.
	Stream    int
	Direction traffic.Direction
	Port      int
	// Timeout is true when the connection hung (a filtered port) rather
	// than being refused.
	Timeout bool
	Err     error
}

// DataError is returned by ConnectData when some data streams could not be
// established.
type DataError struct {
	// Host is the server's address; Total the number of streams asked
	// for (both directions); Timeout the connect timeout each had.
	Host    string
	Total   int
	Timeout time.Duration
	Failed  []FailedStream
}

// Error names the failed ports first, then each failure.
func (e *DataError) Error() string {
	var ports []string
	for _, p := range e.FailedPorts() {
		ports = append(ports, fmt.Sprint(p))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "data streams to %s: %d of %d connected within %v; failed ports: %s",
		e.Host, e.Total-len(e.Failed), e.Total, e.Timeout, strings.Join(ports, ", "))
	for _, f := range e.Failed {
		what := "refused or failed"
		if f.Timeout {
			what = "no answer (filtered?)"
		}
		fmt.Fprintf(&b, "; %s stream %d to port %d: %s: %v", f.Direction, f.Stream, f.Port, what, f.Err)
	}
	return b.String()
}

// Unwrap returns the per-stream errors.
func (e *DataError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f.Err
	}
	return out
}

// FailedPorts returns the distinct server ports with a failed stream,
// sorted.
func (e *DataError) FailedPorts() []int {
	var out []int
	for _, f := range e.Failed {
		out = append(out, f.Port)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Report is what a Run produced on both ends.
type Report struct {
	// Session is the test as the server accepted it; every stream in it
	// was connected (Streams per direction).
	Session SessionInfo
	// Local holds the client's final per-stream samples: the sender's
	// streams (forward) then the receiver's (reverse).
	Local []traffic.StreamSample
	// Remote holds the server's interval reports, and Result its summary
	// (nil if none arrived).
	Remote []Interval
	Result *Result
	// Elapsed is the client's wall-clock time from start to the end of
	// its side.
	Elapsed time.Duration
}

// Run tells the server to start, runs the client's side (sending,
// receiving, or both) and collects the server's interval reports until
// its result. It returns the report with every figure gathered so far
// and nil, or the report and the joined errors of the client's side, the
// server's side (its Result.Error) and the control connection. If ctx is
// cancelled the server is told to abort. Run may be called once, after a
// successful ConnectData.
func (s *Session) Run(ctx context.Context) (*Report, error) {
	s.mu.Lock()
	if s.state != sessConnected || s.closed || (s.sender == nil && s.recv == nil) {
		s.mu.Unlock()
		return nil, errors.New("control: run: needs a session with connected data streams (call ConnectData first, once)")
	}
	s.state = sessRan
	snd, rcv := s.sender, s.recv
	s.mu.Unlock()

	rep := &Report{Session: s.info}
	if err := writeMsg(s.conn, message{Type: msgStart}, s.iot); err != nil {
		_ = s.Close()
		return rep, fmt.Errorf("control: send start: %w", err)
	}
	var resultErr error
	readerDone := make(chan struct{})
	go func() { // owned by Run: ends at the result, an error, or Close
		defer close(readerDone)
		rep.Result, resultErr = s.readReports()
	}()
	start := time.Now()
	var sendErr, recvErr error
	var wg sync.WaitGroup
	if snd != nil {
		wg.Go(func() { sendErr = snd.Run(ctx) })
	}
	if rcv != nil {
		wg.Go(func() { recvErr = rcv.Serve(ctx) })
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	if ctx.Err() != nil {
		_ = writeMsg(s.conn, message{Type: msgAbort, Error: "client cancelled: " + ctx.Err().Error()}, s.iot)
		_ = s.Close()
	}
	<-readerDone
	_ = s.Close()
	if snd != nil {
		rep.Local = append(rep.Local, snd.Sample()...)
	}
	if rcv != nil {
		rep.Local = append(rep.Local, rcv.Sample()...)
	}
	rep.Remote = s.Remote()
	var serverErr error
	if rep.Result != nil && !rep.Result.OK {
		serverErr = fmt.Errorf("server's side: %s", rep.Result.Error)
	}
	err := errors.Join(wrapErr("sending", sendErr), wrapErr("receiving", recvErr), serverErr, wrapErr("control", resultErr))
	if err != nil {
		return rep, fmt.Errorf("control: run: %w", err)
	}
	return rep, nil
}

// readReports reads interval messages until the result. Each must arrive
// within an interval plus the I/O timeout of the previous one.
func (s *Session) readReports() (*Result, error) {
	wait := s.info.Interval + s.iot
	for {
		m, err := readMsg(s.conn, wait)
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case msgInterval:
			if m.Interval == nil || !s.plausible(m.Interval.ReceivedBytes, m.Interval.SentBytes) {
				return nil, fmt.Errorf("malformed interval report: %w", ErrProtocol)
			}
			s.mu.Lock()
			s.remote = append(s.remote, *m.Interval)
			s.mu.Unlock()
		case msgResult:
			if m.Result == nil || !s.plausible(m.Result.ReceivedBytes, m.Result.SentBytes) {
				return nil, fmt.Errorf("malformed result: %w", ErrProtocol)
			}
			return m.Result, nil
		default:
			if err := expect(m, msgResult); err != nil {
				return nil, err
			}
		}
	}
}

// plausible checks per-stream arrays have the session's stream count (or
// are absent for a direction the test does not have).
func (s *Session) plausible(recv, sent []uint64) bool {
	fwd, rev := s.info.Direction.streams(s.info.Streams)
	return (len(recv) == fwd || len(recv) == 0) && (len(sent) == rev || len(sent) == 0)
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
