package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/traffic/testbed"
)

// iperf3Port is the iperf3 server's control and data port in namespace B.
const iperf3Port = 5201

// Timeouts for the iperf3 processes.
const (
	listenTimeout = 5 * time.Second  // server up
	serverExit    = 10 * time.Second // server exit after the client's
)

// iperf3Report is the part of `iperf3 -c ... -J` output used.
type iperf3Report struct {
	End struct {
		SumSent struct {
			Seconds     float64 `json:"seconds"`
			Bytes       uint64  `json:"bytes"`
			Retransmits uint64  `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Seconds       float64 `json:"seconds"`
			Bytes         uint64  `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		CPU struct {
			HostTotal   float64 `json:"host_total"`
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// parseIperf3 decodes a client's -J output; it fails when iperf3 reported
// an error or received nothing.
func parseIperf3(data []byte) (iperf3Report, error) {
	var rep iperf3Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return rep, fmt.Errorf("iperf3 -J output: %w", err)
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("iperf3: %s", rep.Error)
	}
	if rep.End.SumReceived.Bytes == 0 || rep.End.SumReceived.Seconds <= 0 {
		return rep, errors.New("iperf3 -J output: nothing received")
	}
	return rep, nil
}

// runIperf3 runs `iperf3 -s -1` in B and `iperf3 -c -P n -t dur -J` in A,
// and returns the receiver's goodput from the client's report and both
// processes' CPU time from their rusage at exit, less launch (the cost of
// `ip netns exec` and iperf3's start, measured by iperf3Version) each.
func runIperf3(ctx context.Context, bed *testbed.Bed, bin string, n int, dur time.Duration, extra []string, launch time.Duration) (result, error) {
	port := strconv.Itoa(iperf3Port)
	addr := bed.B().Addr.String()
	c0, err := cpustat.Read()
	if err != nil {
		return result{}, err
	}
	var srvOut bytes.Buffer
	srv := bed.B().Exec(ctx, bin, "-s", "-1", "-B", addr, "-p", port)
	srv.Stdout, srv.Stderr, srv.WaitDelay = &srvOut, &srvOut, time.Second
	if err := srv.Start(); err != nil {
		return result{}, fmt.Errorf("start server: %w", err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()
	killServer := func() {
		_ = srv.Process.Kill() // by PID: `ip netns exec` execs iperf3 in place
		<-srvDone
	}
	if err := waitListening(ctx, bed.B(), iperf3Port, srvDone); err != nil {
		killServer()
		return result{}, fmt.Errorf("server: %w (output: %s)", err, tail(srvOut.Bytes()))
	}
	args := append([]string{"-c", addr, "-p", port, "-P", strconv.Itoa(n), "-t", strconv.Itoa(int(dur / time.Second)), "-J"}, extra...)
	var cliOut, cliErr bytes.Buffer
	cli := bed.A().Exec(ctx, bin, args...)
	cli.Stdout, cli.Stderr, cli.WaitDelay = &cliOut, &cliErr, time.Second
	if err := cli.Run(); err != nil {
		killServer()
		return result{}, fmt.Errorf("client: %w (%s%s)", err, tail(cliErr.Bytes()), tail(cliOut.Bytes()))
	}
	select {
	case err = <-srvDone:
	case <-time.After(serverExit):
		killServer()
		err = fmt.Errorf("did not exit within %v of the client", serverExit)
	}
	if err != nil {
		return result{}, fmt.Errorf("server: %w (output: %s)", err, tail(srvOut.Bytes()))
	}
	c1, err := cpustat.Read()
	if err != nil {
		return result{}, err
	}
	rep, err := parseIperf3(cliOut.Bytes())
	if err != nil {
		return result{}, err
	}
	cpu := processCPU(cli.ProcessState) + processCPU(srv.ProcessState) - 2*launch
	s := rep.End.SumReceived
	return result{
		Tool: toolIperf3, Streams: n, Bytes: s.Bytes, Seconds: s.Seconds,
		CPUSeconds:     cpu.Seconds(),
		SelfCPUSeconds: (rep.End.CPU.HostTotal + rep.End.CPU.RemoteTotal) / 100 * rep.End.SumSent.Seconds,
		HostBusyPct:    busyPct(cpustat.Delta(c0, c1)),
		Retransmits:    rep.End.SumSent.Retransmits,
	}, nil
}

// processCPU returns the user + system time of an exited process, from
// the rusage wait4 returned (the whole process, every thread).
func processCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return ps.UserTime() + ps.SystemTime()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// iperf3Version returns `iperf3 -v`'s first line, run like the tests
// (`ip netns exec` in B), and the least CPU time of three such runs: the
// fixed cost of launching a process this way, which runIperf3 subtracts.
func iperf3Version(ctx context.Context, bed *testbed.Bed, bin string) (string, time.Duration) {
	ver := "iperf3"
	launch := time.Duration(-1)
	for range 3 {
		cmd := bed.B().Exec(ctx, bin, "-v")
		out, err := cmd.Output()
		if err != nil {
			return ver, 0
		}
		if line, _, _ := strings.Cut(string(out), "\n"); line != "" {
			ver = strings.TrimSpace(line)
		}
		if c := processCPU(cmd.ProcessState); launch < 0 || c < launch {
			launch = c
		}
	}
	return ver, max(launch, 0)
}

// waitListening polls h's /proc/net/tcp until a socket listens on port,
// the server exits (done), ctx ends or listenTimeout passes.
func waitListening(ctx context.Context, h *testbed.Host, port int, done <-chan error) error {
	deadline := time.Now().Add(listenTimeout)
	for {
		var ok bool
		err := h.Do(func() error {
			// thread-self: this thread is the one switched into h's netns.
			data, err := os.ReadFile("/proc/thread-self/net/tcp")
			ok = err == nil && listening(data, port)
			return err
		})
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("not listening on port %d after %v", port, listenTimeout)
		}
		select {
		case err := <-done:
			return fmt.Errorf("exited before listening: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listening reports whether a /proc/net/tcp table has a socket in state
// LISTEN (0A) on local port. Lines may be of any length (no
// bufio.Scanner limit).
func listening(table []byte, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for line := range bytes.Lines(table) {
		f := strings.Fields(string(line))
		if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// tail returns the last 300 bytes of b, trimmed.
func tail(b []byte) string {
	if len(b) > 300 {
		b = b[len(b)-300:]
	}
	return strings.TrimSpace(string(b))
}
