package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/netprof/netprof/traffic"
)

// Session is a test negotiated with a server. Dial creates it; then
// ConnectData, Run, and Close (always). Sample and Remote may be called
// from any goroutine at any time.
type Session struct {
	conn     net.Conn
	info     SessionInfo
	host     string
	software string
	iot      time.Duration

	mu     sync.Mutex
	state  int
	closed bool
	sender *traffic.Sender   // forward streams (client sends)
	recv   *traffic.Receiver // reverse streams (client receives)
	remote []Interval
}

const (
	sessNew = iota
	sessConnected
	sessRan
)

// Dial connects to the control server at addr (host:port) through dial
// (nil: net.Dialer), asks for the test p (zero fields take their defaults;
// a new RunID is made if p has none) and returns the session the server
// accepted. Every step is bounded by DefaultIOTimeout and ctx. Errors:
// invalid p is refused before dialling; a server refusal is a *RemoteError
// matching ErrBusy, ErrLimit (its message names the limit) or ErrVersion;
// a server speaking another protocol version gives an error wrapping
// ErrVersion that says both versions; a peer that is not a netprof server
// gives one wrapping ErrProtocol.
func Dial(ctx context.Context, dial traffic.DialFunc, addr string, p Params) (*Session, error) {
	p = p.WithDefaults()
	if p.RunID == "" {
		id, err := traffic.NewRunID()
		if err != nil {
			return nil, err
		}
		p.RunID = id.String()
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("control: server address: %w", err)
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	iot := DefaultIOTimeout
	dctx, cancel := context.WithTimeout(ctx, iot)
	defer cancel()
	c, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control: connect to %s: %w", addr, err)
	}
	stop := context.AfterFunc(dctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	info, software, err := handshake(c, p, iot)
	if !stop() || err != nil {
		_ = c.Close()
		if err == nil {
			err = dctx.Err()
		}
		return nil, fmt.Errorf("control: %s: %w", addr, err)
	}
	return &Session{conn: c, info: info, host: host, software: software, iot: iot}, nil
}

func handshake(c net.Conn, p Params, iot time.Duration) (SessionInfo, string, error) {
	if err := writeMsg(c, message{Type: msgSetup, Params: &p}, iot); err != nil {
		return SessionInfo{}, "", fmt.Errorf("send setup: %w", err)
	}
	m, err := readMsg(c, iot)
	if err != nil {
		var fe *frameError
		if errors.As(err, &fe) && errors.Is(err, ErrVersion) && m.Type == msgError {
			err = fmt.Errorf("%w (server said: %s)", err, m.Error)
		}
		return SessionInfo{}, "", err
	}
	if err := expect(m, msgSetupOK); err != nil {
		return SessionInfo{}, "", err
	}
	if m.Session == nil {
		return SessionInfo{}, "", fmt.Errorf("setup_ok without a session: %w", ErrProtocol)
	}
	info := *m.Session
	if err := checkInfo(info, p); err != nil {
		return SessionInfo{}, "", err
	}
	return info, m.Software, nil
}

// checkInfo makes sure the server accepted what was asked, with usable
// ports.
func checkInfo(info SessionInfo, p Params) error {
	if info.Params != p {
		return fmt.Errorf("server changed the parameters (%+v, asked %+v): %w", info.Params, p, ErrProtocol)
	}
	if len(info.Ports) == 0 {
		return fmt.Errorf("server gave no data ports: %w", ErrProtocol)
	}
	for _, port := range info.Ports {
		if port < 1 || port > 65535 {
			return fmt.Errorf("server gave data port %d: %w", port, ErrProtocol)
		}
	}
	return nil
}

// Info returns the session as the server accepted it.
func (s *Session) Info() SessionInfo { return s.info }

// Software returns how the server identified itself ("" if it did not).
func (s *Session) Software() string { return s.software }

// ConnectData establishes every data stream through dial (nil:
// net.Dialer), all in parallel, each bounded by the negotiated connect
// timeout, before anything is measured. If any fails it closes the others,
// tells the server (abort), and returns a *DataError naming every failed
// port and stream; the session cannot run then (a run with k of N streams is
// never made). ConnectData may be called once.
func (s *Session) ConnectData(ctx context.Context, dial traffic.DialFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != sessNew || s.closed {
		return errors.New("control: connect data: session already connected, run or closed")
	}
	s.state = sessConnected // even on failure: no second try on this session
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	id, _ := traffic.ParseRunID(s.info.RunID)
	fwdPorts, revPorts := s.info.streamPorts()
	sets := []struct {
		dir   traffic.Direction
		ports []int
		conns []net.Conn
		err   error
	}{{dir: traffic.Forward, ports: fwdPorts}, {dir: traffic.Reverse, ports: revPorts}}
	var wg sync.WaitGroup
	for i := range sets {
		if len(sets[i].ports) == 0 {
			continue
		}
		wg.Go(func() {
			set := &sets[i]
			addrs := make([]string, len(set.ports))
			for j, p := range set.ports {
				addrs[j] = net.JoinHostPort(s.host, strconv.Itoa(p))
			}
			set.conns, set.err = traffic.DialStreams(ctx, dial, addrs, set.dir, id, s.info.ConnectTimeout)
		})
	}
	wg.Wait()
	de := &DataError{Host: s.host, Timeout: s.info.ConnectTimeout}
	var other []error
	for _, set := range sets {
		de.Total += len(set.ports)
		var ce *traffic.ConnectError
		switch {
		case set.err == nil:
		case errors.As(set.err, &ce):
			for _, f := range ce.Failed {
				de.Failed = append(de.Failed, FailedStream{Stream: f.Stream, Direction: set.dir, Port: set.ports[f.Stream], Timeout: f.Timeout, Err: f.Err})
			}
		default:
			other = append(other, set.err)
		}
	}
	if len(de.Failed) == 0 && len(other) == 0 {
		return s.prepare(sets[0].conns, sets[1].conns)
	}
	for _, set := range sets {
		for _, c := range set.conns {
			_ = c.Close()
		}
	}
	var err error = de
	if len(de.Failed) == 0 {
		err = errors.Join(other...)
	}
	_ = writeMsg(s.conn, message{Type: msgAbort, Error: err.Error()}, s.iot)
	if ctx.Err() != nil {
		return fmt.Errorf("control: data streams: %w: %w", err, ctx.Err())
	}
	return err
}

func (s *Session) prepare(fwd, rev []net.Conn) error {
	cfg := s.info.trafficConfig()
	var err error
	if len(fwd) > 0 {
		s.sender, err = traffic.NewSenderConns(fwd, cfg)
	}
	if err == nil && len(rev) > 0 {
		s.recv, err = traffic.NewReceiverConns(rev, cfg)
	}
	if err != nil {
		for _, c := range append(fwd, rev...) {
			_ = c.Close()
		}
		return fmt.Errorf("control: %w", err)
	}
	return nil
}

// Sample returns the client's own per-stream counters: the sender's
// streams (forward) then the receiver's (reverse); nil before ConnectData
// succeeded.
func (s *Session) Sample() []traffic.StreamSample {
	s.mu.Lock()
	snd, rcv := s.sender, s.recv
	s.mu.Unlock()
	var out []traffic.StreamSample
	if snd != nil {
		out = append(out, snd.Sample()...)
	}
	if rcv != nil {
		out = append(out, rcv.Sample()...)
	}
	return out
}

// Remote returns the server's interval reports received so far.
func (s *Session) Remote() []Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Interval(nil), s.remote...)
}

// Close closes the control connection and any data stream not yet run.
// Idempotent; returns nil.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	_ = s.conn.Close()
	if s.state == sessConnected {
		if s.sender != nil {
			_ = s.sender.Close()
		}
		if s.recv != nil {
			_ = s.recv.Close()
		}
	}
	return nil
}
