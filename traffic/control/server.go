package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

// ListenFunc opens a listener, as net.Listen does (a test bed's Host.Listen
// opens it inside a network namespace).
type ListenFunc func(network, addr string) (net.Listener, error)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Ports are the data ports tests may use; a test with more streams
	// than ports shares them round-robin. At least one, each 1..65535.
	Ports []int
	// DataHost is the address data listeners bind to ("" = all
	// addresses).
	DataHost string
	// Listen opens the data listeners; nil means net.Listen.
	Listen ListenFunc
	// Limits bound each test; zero fields take DefaultLimits.
	Limits Limits
	// IOTimeout bounds each control message read or write; 0 means
	// DefaultIOTimeout.
	IOTimeout time.Duration
	// MaxTests makes Serve return after that many tests ran (a test runs
	// once its setup was accepted); 0 means no limit. netprof traffic
	// serve --once sets 1.
	MaxTests int
	// Software identifies the server in setup_ok ("netprof <version>").
	Software string
	// OnTest, if set, is called (from Serve's goroutine for that test) with
	// each test's record once it ended.
	OnTest func(TestRecord)
	// Log receives one line per client and test; nil means slog.Default().
	Log *slog.Logger
}

// TestRecord is what the server saw of one test.
type TestRecord struct {
	Client    string      `json:"client"`
	Session   SessionInfo `json:"session"`
	Start     time.Time   `json:"start"`
	End       time.Time   `json:"end"`
	Intervals []Interval  `json:"intervals"`
	Result    *Result     `json:"result,omitempty"`
	// Error is why the test did not complete ("" if it did).
	Error string `json:"error,omitempty"`
}

// Server runs tests for clients, one at a time. Create it with NewServer.
type Server struct {
	cfg ServerConfig
	log *slog.Logger
}

// maxPending bounds the control connections that sent a valid setup and
// are handled at once (one test and those waiting for or being told
// "busy"); more are told "busy" at once.
const maxPending = 16

// maxPreSetup bounds the connections that have not sent their setup yet.
// A connection beyond it evicts (closes) the one waiting longest, so idle
// or slow connections can never keep a real client, which sends its setup
// at once, from being heard.
const maxPreSetup = 32

// setupTimeout is how long a new connection has to send its whole setup
// message (at most IOTimeout): a client sends it right after connecting;
// a connection that says nothing, or trickles bytes, is closed after it
// and never holds the test slot.
const setupTimeout = 2 * time.Second

// busyWait is how long a client arriving during a test waits for it to end
// before being told "busy" (so back-to-back tests do not race the end of
// the previous one).
const busyWait = 500 * time.Millisecond

// busyTimeout bounds the whole exchange with a client that gets "busy".
const busyTimeout = 2 * time.Second

// NewServer checks cfg and returns a Server. It fails if a port is out of
// range or a limit is invalid (above the generator's own maximums).
func NewServer(cfg ServerConfig) (*Server, error) {
	cfg.Limits = cfg.Limits.withDefaults()
	var errs []error
	if err := cfg.Limits.validate(); err != nil {
		errs = append(errs, err)
	}
	if len(cfg.Ports) == 0 {
		errs = append(errs, errors.New("no data ports"))
	}
	for _, p := range cfg.Ports {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("invalid data port %d: must be 1..65535", p))
		}
	}
	if cfg.IOTimeout < 0 || cfg.MaxTests < 0 {
		errs = append(errs, errors.New("IOTimeout and MaxTests must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("control server: %w", err)
	}
	if cfg.IOTimeout == 0 {
		cfg.IOTimeout = DefaultIOTimeout
	}
	if cfg.Listen == nil {
		cfg.Listen = net.Listen
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, log: log}, nil
}

// Serve accepts control connections on ln and runs their tests one after
// another; a client arriving during a test is told "busy" and disconnected.
// It returns nil when ctx is cancelled (aborting a running test) or after
// MaxTests tests, and an error if Accept fails otherwise. Serve closes ln and
// waits for every goroutine it started before returning.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	defer ln.Close()

	active := make(chan struct{}, 1)           // holds a token while a test session runs
	pending := make(chan struct{}, maxPending) // connections with a setup being handled
	var waiting preSetup                       // connections that have not sent their setup
	var mu sync.Mutex
	tests := 0
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("control server: accept: %w", err)
		}
		waiting.add(c)
		wg.Go(func() {
			stop := context.AfterFunc(ctx, func() { _ = c.Close() })
			defer stop()
			m, err := readMsg(c, min(setupTimeout, s.cfg.IOTimeout))
			if !waiting.remove(c) {
				_ = c.Close() // evicted by newer connections while silent
				return
			}
			if err != nil {
				s.refuse(c, s.log.With("client", c.RemoteAddr().String()), badFrameCode(err), fmt.Sprintf("bad setup: %v", err))
				return
			}
			if m.Type != msgSetup || m.Params == nil {
				s.refuse(c, s.log.With("client", c.RemoteAddr().String()), CodeProtocol,
					fmt.Sprintf("want a setup message first, got %q", m.Type))
				return
			}
			select {
			case pending <- struct{}{}:
			default:
				s.refuseBusy(c)
				return
			}
			defer func() { <-pending }()
			if !s.acquire(ctx, c, active) {
				return
			}
			defer func() { <-active }()
			if ran := s.session(ctx, c, m); ran && s.cfg.MaxTests > 0 {
				mu.Lock()
				defer mu.Unlock()
				if tests++; tests >= s.cfg.MaxTests {
					cancel()
				}
			}
		})
	}
}

// preSetup holds the connections that have not sent their setup, oldest
// first, at most maxPreSetup: adding one more closes the oldest.
type preSetup struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (p *preSetup) add(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.conns) >= maxPreSetup {
		_ = p.conns[0].Close() // its reader fails, finds it gone and returns
		p.conns = p.conns[1:]
	}
	p.conns = append(p.conns, c)
}

// remove takes c out and reports whether it was still there (not evicted).
func (p *preSetup) remove(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.conns {
		if x == c {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			return true
		}
	}
	return false
}

// acquire takes the test slot for c, waiting up to busyWait for a test
// that is ending; otherwise it answers busy, closes c and returns false.
func (s *Server) acquire(ctx context.Context, c net.Conn, active chan struct{}) bool {
	select {
	case active <- struct{}{}:
		return true
	default:
	}
	timer := time.NewTimer(busyWait)
	defer timer.Stop()
	select {
	case active <- struct{}{}:
		return true
	case <-timer.C:
		s.refuseBusy(c)
	case <-ctx.Done():
		_ = c.Close()
	}
	return false
}

// refuseBusy answers busy to a client whose setup was read and closes.
func (s *Server) refuseBusy(c net.Conn) {
	defer c.Close()
	s.log.Info("client refused: busy", "client", c.RemoteAddr().String())
	_ = writeMsg(c, message{Type: msgError, Code: CodeBusy,
		Error: "busy: another client's test is running; try again when it ends"}, busyTimeout)
	closeGently(c, busyTimeout)
}

// closeGently half-closes c and waits (bounded) for the peer to close, so
// the last message is not lost to a reset.
func closeGently(c net.Conn, timeout time.Duration) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		var buf [512]byte
		for range 64 {
			if _, err := c.Read(buf[:]); err != nil {
				break
			}
		}
	}
	_ = c.Close()
}

// dataListeners opens the listeners for a test with n streams in all: one
// per port, as many ports as streams (at most all of them).
func (s *Server) dataListeners(n int) ([]net.Listener, []int, error) {
	ports := s.cfg.Ports[:min(n, len(s.cfg.Ports))]
	var lns []net.Listener
	for _, p := range ports {
		addr := net.JoinHostPort(s.cfg.DataHost, strconv.Itoa(p))
		ln, err := s.cfg.Listen("tcp", addr)
		if err != nil {
			closeListeners(lns)
			return nil, nil, fmt.Errorf("listen on data port %d: %w", p, err)
		}
		lns = append(lns, ln)
	}
	return lns, ports, nil
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}
