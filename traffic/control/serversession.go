package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/traffic"
)

// drainGrace is how long past the duration the server lets a test run
// (the sender's buffers draining, trailers) before giving up on it.
const drainGrace = 30 * time.Second

// session serves one control connection whose first message, m, was
// read: setup, data streams, the test, the result. It reports whether a
// test ran (its setup was accepted).
func (s *Server) session(ctx context.Context, c net.Conn, m message) (ran bool) {
	log := s.log.With("client", c.RemoteAddr().String())
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	iot := s.cfg.IOTimeout
	if m.Type != msgSetup || m.Params == nil {
		s.refuse(c, log, CodeProtocol, fmt.Sprintf("want a setup message first, got %q", m.Type))
		return false
	}
	p := m.Params.WithDefaults()
	if err := p.Validate(); err != nil {
		s.refuse(c, log, CodeInvalid, err.Error())
		return false
	}
	if err := s.cfg.Limits.check(p); err != nil {
		s.refuse(c, log, CodeLimit, err.Error())
		return false
	}
	fwd, rev := p.Direction.streams(p.Streams)
	lns, ports, err := s.dataListeners(fwd + rev)
	if err != nil {
		s.refuse(c, log, CodeFailed, err.Error())
		return false
	}
	info := SessionInfo{Params: p, Ports: ports, Limits: s.cfg.Limits}
	if err := writeMsg(c, message{Type: msgSetupOK, Software: s.cfg.Software, Session: &info}, iot); err != nil {
		closeListeners(lns)
		log.Warn("client gone after setup", "err", err)
		_ = c.Close()
		return false
	}
	log = log.With("run_id", p.RunID)
	log.Info("test accepted", "streams", p.Streams, "direction", p.Direction, "duration", p.Duration, "ports", ports)
	t := &serverTest{conn: c, info: info, iot: iot, log: log, rec: TestRecord{Client: c.RemoteAddr().String(), Session: info}}
	err = t.run(ctx, lns)
	t.rec.End = time.Now().UTC()
	if err != nil {
		t.rec.Error = err.Error()
		log.Warn("test failed", "err", err)
	} else {
		log.Info("test done")
	}
	if s.cfg.OnTest != nil {
		s.cfg.OnTest(t.rec)
	}
	return true
}

func badFrameCode(err error) string {
	if errors.Is(err, ErrVersion) {
		return CodeVersion
	}
	return CodeProtocol
}

// refuse answers an error (best effort) and closes gently.
func (s *Server) refuse(c net.Conn, log *slog.Logger, code, msg string) {
	log.Info("client refused", "code", code, "reason", msg)
	_ = writeMsg(c, message{Type: msgError, Code: code, Error: msg}, s.cfg.IOTimeout)
	closeGently(c, s.cfg.IOTimeout)
}

// serverTest is one accepted test on the server.
type serverTest struct {
	conn net.Conn
	info SessionInfo
	iot  time.Duration
	log  *slog.Logger
	rec  TestRecord

	recv *traffic.Receiver // forward streams (client sends)
	send *traffic.Sender   // reverse streams (server sends)
}

// run accepts the data streams, waits for start, runs the test with
// interval reports, sends the result and closes the connection.
func (t *serverTest) run(ctx context.Context, lns []net.Listener) error {
	p := t.info.Params
	msgs := make(chan message, 4)
	quit := make(chan struct{})
	readerDone := make(chan struct{})
	total := p.ConnectTimeout + p.Duration + drainGrace + 2*t.iot
	go func() { // owned by run: ends when quit is closed and the conn with it
		defer close(readerDone)
		t.readLoop(msgs, quit, total)
	}()
	defer func() {
		close(quit)
		_ = t.conn.Close()
		<-readerDone
	}()
	acc, started, err := t.acceptData(ctx, lns, msgs)
	if err != nil {
		_ = writeMsg(t.conn, message{Type: msgError, Code: CodeFailed, Error: err.Error()}, t.iot)
		return err
	}
	if !started {
		if err := t.waitStart(msgs); err != nil {
			acc.Close()
			return err
		}
	}
	if err := t.prepare(acc); err != nil {
		_ = writeMsg(t.conn, message{Type: msgError, Code: CodeFailed, Error: err.Error()}, t.iot)
		return err
	}
	res := t.runTest(ctx, msgs)
	t.rec.Result = &res
	if err := writeMsg(t.conn, message{Type: msgResult, Result: &res}, t.iot); err != nil {
		return fmt.Errorf("send result: %w", err)
	}
	closeGently(t.conn, t.iot)
	if !res.OK {
		return errors.New(res.Error)
	}
	return nil
}

// readLoop forwards the client's messages; a read error is forwarded as an
// "abort" with the error, and ends the loop.
func (t *serverTest) readLoop(msgs chan<- message, quit <-chan struct{}, total time.Duration) {
	deadline := time.Now().Add(total)
	for {
		m, err := readMsg(t.conn, time.Until(deadline))
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("client closed the control connection")
			}
			m = message{Type: msgAbort, Error: err.Error()}
		}
		select {
		case msgs <- m:
		case <-quit:
			return
		}
		if err != nil || m.Type == msgAbort {
			return
		}
	}
}

// acceptData waits for every data stream, or for the client to give up.
// It reports whether start already arrived.
func (t *serverTest) acceptData(ctx context.Context, lns []net.Listener, msgs <-chan message) (*traffic.Accepted, bool, error) {
	p := t.info.Params
	id, _ := traffic.ParseRunID(p.RunID) // validated
	actx, cancel := context.WithTimeout(ctx, p.ConnectTimeout+t.iot)
	defer cancel()
	type result struct {
		a   *traffic.Accepted
		err error
	}
	done := make(chan result, 1)
	fwd, rev := p.Direction.streams(p.Streams)
	go func() { // owned: waited for below
		a, err := traffic.AcceptStreams(actx, lns, id, fwd, rev)
		done <- result{a, err}
	}()
	started := false
	var clientErr error
	for {
		select {
		case r := <-done:
			if r.err != nil && clientErr != nil {
				return nil, false, fmt.Errorf("client gave up on the data streams: %w", clientErr)
			}
			return r.a, started, r.err
		case m := <-msgs:
			switch m.Type {
			case msgStart:
				started = true
			case msgAbort:
				clientErr = errors.New(m.Error)
				cancel()
			default:
				clientErr = fmt.Errorf("unexpected %q message while waiting for data streams", m.Type)
				cancel()
			}
		}
	}
}

func (t *serverTest) waitStart(msgs <-chan message) error {
	select {
	case m := <-msgs:
		if m.Type == msgStart {
			return nil
		}
		if m.Type == msgAbort {
			return fmt.Errorf("client aborted: %s", m.Error)
		}
		return fmt.Errorf("want start, got %q: %w", m.Type, ErrProtocol)
	case <-time.After(t.iot):
		return fmt.Errorf("no start message within %v of the data streams", t.iot)
	}
}

// prepare builds the receiver and sender over the accepted streams.
func (t *serverTest) prepare(acc *traffic.Accepted) error {
	cfg := t.info.trafficConfig()
	var err error
	if len(acc.Forward) > 0 {
		if t.recv, err = traffic.NewReceiverConns(acc.Forward, cfg); err != nil {
			acc.Close()
			return err
		}
	}
	if len(acc.Reverse) > 0 {
		if t.send, err = traffic.NewSenderConns(acc.Reverse, cfg); err != nil {
			acc.Close()
			return err
		}
	}
	return nil
}

// runTest runs the server's side until it ends, the client goes away or
// the drain grace passes, sending an interval report at every tick.
func (t *serverTest) runTest(ctx context.Context, msgs <-chan message) Result {
	p := t.info.Params
	tctx, cancel := context.WithTimeoutCause(ctx, p.Duration+drainGrace,
		fmt.Errorf("test still running %v after its duration", drainGrace))
	defer cancel()
	start := time.Now()
	t.rec.Start = start.UTC()
	cpu0, cerr := cpustat.Read()
	if cerr != nil {
		t.log.Warn("no CPU figures", "err", cerr)
	}
	var wg sync.WaitGroup
	var recvErr, sendErr error
	if t.recv != nil {
		wg.Go(func() { recvErr = t.recv.Serve(tctx) })
	}
	if t.send != nil {
		wg.Go(func() { sendErr = t.send.Run(tctx) })
	}
	ended := make(chan struct{})
	go func() { // owned: ended is awaited below in every path
		wg.Wait()
		close(ended)
	}()
	iv := newIntervalState(t, start, cpu0)
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	var clientErr error
loop:
	for {
		select {
		case <-ended:
			break loop
		case now := <-tick.C:
			if err := t.sendInterval(iv.next(now)); err != nil && clientErr == nil {
				clientErr = err
				cancel()
			}
		case m := <-msgs:
			if clientErr == nil {
				clientErr = fmt.Errorf("client aborted: %s", m.Error)
				if m.Type != msgAbort {
					clientErr = fmt.Errorf("unexpected %q message during the test: %w", m.Type, ErrProtocol)
				}
				cancel()
			}
			msgs = nil // the reader has stopped or will be stopped
		}
	}
	end := time.Now()
	// The last, partial interval carries the tail, so the intervals always
	// add up to the totals.
	_ = t.sendInterval(iv.next(end))
	res := Result{DurationNs: end.Sub(start).Nanoseconds(), ReceivedBytes: iv.prevRecv, SentBytes: iv.prevSent, CPU: WireCPU(iv.total())}
	err := errors.Join(wrapErr("client", clientErr), wrapErr("receiving", recvErr), wrapErr("sending", sendErr))
	res.OK = err == nil
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

func (t *serverTest) sendInterval(iv Interval) error {
	t.rec.Intervals = append(t.rec.Intervals, iv)
	if err := writeMsg(t.conn, message{Type: msgInterval, Interval: &iv}, t.iot); err != nil {
		return fmt.Errorf("send interval: %w", err)
	}
	return nil
}
