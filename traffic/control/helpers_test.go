package control

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestMain fails the run if the tests leak goroutines or file descriptors.
func TestMain(m *testing.M) {
	if r, w, err := os.Pipe(); err == nil { // start the netpoller first
		r.Close()
		w.Close()
	}
	fds, gs := countFDs(), runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		var nf, ng int
		for range 100 {
			nf, ng = countFDs(), runtime.NumGoroutine()
			if nf <= fds && ng <= gs {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if nf > fds || ng > gs {
			buf := make([]byte, 1<<16)
			fmt.Fprintf(os.Stderr, "leak: %d fds (was %d), %d goroutines (was %d)\n%s\n", nf, fds, ng, gs, buf[:runtime.Stack(buf, true)])
			code = 1
		}
	}
	os.Exit(code)
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// freePorts returns n distinct ports that were free on 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

type testServer struct {
	addr    string
	records chan TestRecord
	done    chan error
	cancel  context.CancelFunc
}

// startServer runs a server on loopback until the test ends.
func startServer(t *testing.T, cfg ServerConfig) *testServer {
	t.Helper()
	if cfg.Ports == nil {
		cfg.Ports = freePorts(t, 4)
	}
	if cfg.DataHost == "" {
		cfg.DataHost = "127.0.0.1"
	}
	ts := &testServer{records: make(chan TestRecord, 16), done: make(chan error, 1)}
	cfg.OnTest = func(r TestRecord) { ts.records <- r }
	cfg.Log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ts.done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("server did not stop within 10s of cancel")
		}
	})
	return ts
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// runClient runs one whole test against addr and returns its report.
func runClient(t *testing.T, addr string, p Params) (*Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), p.Duration+30*time.Second)
	defer cancel()
	s, err := Dial(ctx, nil, addr, p)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.ConnectData(ctx, nil); err != nil {
		return nil, err
	}
	return s.Run(ctx)
}

func port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
