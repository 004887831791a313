package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// blockPorts makes TCP packets from h to the given destination ports vanish
// (as a firewall that drops rather than rejects): on h's veth, an HTB root
// whose default class passes everything and whose second class, chosen by a
// u32 match on the destination port, ends in a pfifo of limit 0 that drops
// every packet. (This kernel has no gact/netfilter; HTB, pfifo and u32
// exist.) It returns a function reporting the packets dropped there.
func blockPorts(t *testing.T, h *testbed.Host, ports ...int) func() int {
	t.Helper()
	ctx := context.Background()
	dev := h.Link
	cmds := [][]string{
		{"qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10"},
		{"class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "100gbit", "burst", "256k"},
		{"class", "add", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "100gbit", "burst", "256k"},
		{"qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "pfifo", "limit", "0"},
	}
	for _, p := range ports {
		cmds = append(cmds, []string{"filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
			"match", "ip", "protocol", "6", "0xff", "match", "ip", "dport", strconv.Itoa(p), "0xffff", "flowid", "1:20"})
	}
	for _, c := range cmds {
		if out, err := h.Exec(ctx, "tc", c...).CombinedOutput(); err != nil {
			t.Fatalf("tc %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	dropRE := regexp.MustCompile(`qdisc pfifo 20:[^\n]*\n\s*Sent \d+ bytes \d+ pkt \(dropped (\d+)`)
	return func() int {
		out, err := h.Exec(ctx, "tc", "-s", "qdisc", "show", "dev", dev).CombinedOutput()
		m := dropRE.FindSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("tc -s qdisc: %v: %s", err, out)
			return -1
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
}

// Data ports behind a dropping filter make connects hang, not fail: the
// client must give up within the connect timeout (plus a margin) and name
// exactly the blocked ports; the server then serves the next client.
func TestBlockedPortsHang(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	a, b := bed.A(), bed.B()
	ports := []int{5001, 5002, 5003, 5004}
	dropped := blockPorts(t, a, 5002, 5004)

	ln, err := b.Listen("tcp", net.JoinHostPort(b.Addr.String(), "5000"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(ServerConfig{Ports: ports, DataHost: b.Addr.String(), Listen: b.Listen, IOTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { // before the bed's cleanup (LIFO)
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	addr := net.JoinHostPort(b.Addr.String(), "5000")

	const timeout = 2 * time.Second
	s, err := Dial(ctx, a.Dial, addr, Params{Streams: 4, Duration: time.Second, ConnectTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.ConnectData(ctx, a.Dial)
	took := time.Since(start)
	s.Close()
	var de *DataError
	if !errors.As(err, &de) {
		t.Fatalf("ConnectData: %v, want a DataError", err)
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	if took < timeout || took > timeout+time.Second {
		t.Errorf("ConnectData gave up after %v, want %v + at most 1s", took, timeout)
	}
	if got := fmt.Sprint(de.FailedPorts()); got != "[5002 5004]" {
		t.Errorf("failed ports %s, want [5002 5004]", got)
	}
	for _, f := range de.Failed {
		if !f.Timeout {
			t.Errorf("stream %d (port %d) failed without a timeout: %v", f.Stream, f.Port, f.Err)
		}
	}
	if !strings.Contains(err.Error(), "2 of 4 connected within 2s; failed ports: 5002, 5004") {
		t.Errorf("error %q does not say 2 of 4 and the ports", err)
	}
	// Independent evidence that the SYNs were dropped on the path (at
	// least the first SYN and one retransmission per blocked stream).
	if n := dropped(); n < 4 {
		t.Errorf("the filter dropped %d packets, want >= 4", n)
	}

	// The server gave up on that test and serves the next client, whose
	// only stream uses the open port 5001.
	rep, err := func() (*Report, error) {
		s, err := Dial(ctx, a.Dial, addr, Params{Streams: 1, Duration: 500 * time.Millisecond, Interval: 250 * time.Millisecond, ConnectTimeout: timeout})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		if err := s.ConnectData(ctx, a.Dial); err != nil {
			return nil, err
		}
		return s.Run(ctx)
	}()
	if err != nil {
		t.Fatalf("next client: %v", err)
	}
	if got := sumStreams(rep.Remote, false); len(got) != 1 || got[0] != rep.Local[0].AppBytes || got[0] == 0 {
		t.Errorf("next client: server counted %v, client sent %d", got, rep.Local[0].AppBytes)
	}
}
