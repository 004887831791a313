package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// A real `iperf3 -c -P 2 -t 1 -J` report (iperf 3.12, loopback), trimmed to
// the sections perfcmp reads plus one interval.
func TestParseIperf3(t *testing.T) {
	data, err := os.ReadFile("testdata/iperf3-client.json")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := parseIperf3(data)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.End.SumReceived
	if s.Bytes == 0 || s.Seconds < 0.9 || s.Seconds > 1.2 {
		t.Errorf("sum_received = %+v", s)
	}
	// iperf3's own rate must be bytes*8/seconds: the fields mean what we use them for.
	if got := float64(s.Bytes) * 8 / s.Seconds; math.Abs(got-s.BitsPerSecond)/s.BitsPerSecond > 1e-6 {
		t.Errorf("bytes*8/seconds = %.0f, iperf3 says %.0f bit/s", got, s.BitsPerSecond)
	}
	if rep.End.CPU.HostTotal <= 0 || rep.End.CPU.RemoteTotal <= 0 || rep.End.SumSent.Seconds <= 0 {
		t.Errorf("cpu %+v, sum_sent %+v", rep.End.CPU, rep.End.SumSent)
	}

	if _, err := parseIperf3([]byte(`{"start":{},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}`)); err == nil ||
		!strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("error report: got %v", err)
	}
	if _, err := parseIperf3([]byte(`{"end":{"sum_received":{"bytes":0,"seconds":0}}}`)); err == nil {
		t.Error("empty report accepted")
	}
	if _, err := parseIperf3([]byte(`iperf3: error`)); err == nil {
		t.Error("non-JSON accepted")
	}
}

func TestSummarize(t *testing.T) {
	mk := func(tool string, streams, rep int, gbit, cpuPerGB float64) result {
		bytes := uint64(gbit * 1e9 / 8 * 5) // 5 s
		return result{Tool: tool, Streams: streams, Rep: rep, Bytes: bytes, Seconds: 5,
			CPUSeconds: cpuPerGB * float64(bytes) / 1e9}
	}
	runs := []result{
		mk(toolNetprof, 1, 1, 20, 0.3), mk(toolIperf3, 1, 1, 10, 0.6), // 2.0, 0.5
		mk(toolIperf3, 1, 2, 10, 0.5), mk(toolNetprof, 1, 2, 11, 0.6), // 1.1, 1.2
		mk(toolNetprof, 1, 3, 15, 0.4), mk(toolIperf3, 1, 3, 12, 0.5), // 1.25, 0.8
		mk(toolNetprof, 4, 1, 10, 0.5), mk(toolIperf3, 4, 1, 10, 0.5), // 1.0, 1.0: missed
		mk(toolNetprof, 16, 1, 10, 0.5), // no iperf3 partner: left out
	}
	sum := summarize(runs, []int{1, 4, 16})
	if len(sum) != 2 {
		t.Fatalf("got %d summaries, want 2 (16 streams has no pair): %+v", len(sum), sum)
	}
	s := sum[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if s.Streams != 1 || s.Pairs != 3 || !near(s.GoodputRatio, 1.25) || !near(s.CPURatio, 0.8) ||
		!near(s.NetprofGbps, 15) || !near(s.Iperf3Gbps, 10) || !near(s.NetprofCPUPerGB, 0.4) || !near(s.Iperf3CPUPerGB, 0.5) || !s.GoalMet {
		t.Errorf("1 stream: %+v", s)
	}
	if s := sum[1]; s.Streams != 4 || s.Pairs != 1 || s.GoalMet {
		t.Errorf("4 streams: %+v, want goal missed at ratio 1.0", s)
	}
	if v := verdict(sum); v != "goals MISSED at stream counts 4" {
		t.Errorf("verdict %q", v)
	}
	if v := verdict(sum[:1]); v != "goals met at every stream count (1)" {
		t.Errorf("verdict %q", v)
	}
	var b strings.Builder
	printSummary(&b, sum)
	printRuns(&b, runs)
	for _, want := range []string{"goodput ratio", "CPU/GB ratio", "1.250", "0.800", "MISSED", "netprof", "iperf3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestListening(t *testing.T) {
	table := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 020012C6:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 010012C6:9C40 020012C6:1389 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
`)
	if !listening(table, 5201) {
		t.Error("port 5201 (0x1451) in LISTEN not found")
	}
	if listening(table, 40000) { // 0x9C40 is there, but ESTABLISHED
		t.Error("an established socket taken for a listener")
	}
	if listening(table, 5001) { // 0x1389 is only a remote port
		t.Error("a remote port taken for a listener")
	}
	// A busy host: 20,000 sockets before the listener, and a line over
	// bufio.Scanner's 64 KiB (a table is read whole, never cut).
	var big bytes.Buffer
	big.Write(table[:bytes.IndexByte(table, '\n')+1])
	for i := range 20000 {
		fmt.Fprintf(&big, "%5d: 010012C6:%04X 020012C6:1389 01 00000000:00000000 00:00000000 00000000     0        0 %d 1\n", i, 10000+i%50000, i)
	}
	big.WriteString(strings.Repeat("x", 70<<10) + "\n")
	big.Write(table[bytes.IndexByte(table, '\n')+1:])
	if !listening(big.Bytes(), 5201) {
		t.Errorf("listener after %d bytes of table not found", big.Len())
	}
}

func TestParseFlags(t *testing.T) {
	opt, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(opt.streams) != 3 || opt.streams[2] != 16 || opt.reps != 3 || opt.duration != 5*time.Second {
		t.Errorf("defaults: %+v", opt)
	}
	opt, err = parseFlags([]string{"-streams", "2, 8", "-iperf3-args", "-Z  -w 1M"}, io.Discard)
	if err != nil || len(opt.streams) != 2 || opt.streams[1] != 8 || strings.Join(opt.extra, "|") != "-Z|-w|1M" {
		t.Errorf("got %+v, %v", opt, err)
	}
	for _, bad := range [][]string{
		{"-streams", "0"}, {"-streams", "x"}, {"-reps", "0"},
		{"-duration", "1500ms"}, {"-duration", "2m"}, {"-block", "0"},
	} {
		var msg strings.Builder
		if _, err := parseFlags(bad, &msg); err == nil || msg.Len() == 0 {
			t.Errorf("%v accepted (or not explained): %v", bad, err)
		}
	}
}
