package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic/control"
)

func TestParsePorts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"5001", "[5001]"},
		{"5001-5004", "[5001 5002 5003 5004]"},
		{" 7 - 8 ", "[7 8]"},
		{"5004-5001", "want 1 <= FIRST <= LAST"},
		{"0-3", "want 1 <= FIRST"},
		{"65535-65536", "LAST <= 65535"},
		{"1-9000", "at most 4096 ports"},
		{"http", "want PORT or FIRST-LAST"},
		{"", "want PORT or FIRST-LAST"},
	} {
		ports, err := parsePorts(tc.in)
		got := fmt.Sprint(ports)
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("parsePorts(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// The real binary: `traffic serve --once --out DIR` serves one test from an
// in-process client, writes its record and exits 0.
func TestServeOnce(t *testing.T) {
	bin := buildBinary(t)
	var ports []int
	for range 2 { // the control port and the data port, free a moment ago
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	out := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	cmd := exec.Command(bin, "traffic", "serve", "--listen", addr, "--port", fmt.Sprint(ports[1]), "--once", "--out", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill() // our own child, by PID
			for range lines {
			}
			<-exited
		}
	}()
	waitLine(t, lines, "control on")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := control.Dial(ctx, nil, addr, control.Params{Streams: 2, Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.ConnectData(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() { // drain the log so the child never blocks on stderr
		for range lines {
		}
	}()
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("serve --once exited with %v", waitErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve --once did not exit after its test")
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.json"))
	if len(files) != 1 || !strings.Contains(files[0], rep.Session.RunID[:8]) {
		t.Fatalf("records in --out: %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec control.TestRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	var sum [2]uint64
	for _, iv := range rec.Intervals {
		for i, b := range iv.ReceivedBytes {
			sum[i] += b
		}
	}
	for _, smp := range rep.Local {
		if sum[smp.Stream] != smp.AppBytes || smp.AppBytes == 0 {
			t.Errorf("stream %d: record says %d bytes received, client sent %d", smp.Stream, sum[smp.Stream], smp.AppBytes)
		}
	}
	if rec.Error != "" || rec.Result == nil || !rec.Result.OK {
		t.Errorf("record: error %q, result %+v", rec.Error, rec.Result)
	}
}

func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("server exited before printing %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q line within 10s", want)
		}
	}
}
