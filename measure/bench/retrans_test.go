package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
)

// snmpTcp returns the Tcp counters of h's namespace from
// /proc/thread-self/net/snmp, read on a thread inside it (/proc/net is the
// main thread's namespace, not this one's).
func snmpTcp(h *testbed.Host) (map[string]uint64, error) {
	var raw []byte
	err := h.Do(func() error {
		var err error
		raw, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "Tcp:" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		out := map[string]uint64{}
		for i, v := range f[1:] {
			if i < len(names) {
				n, _ := strconv.ParseUint(v, 10, 64)
				out[names[i]] = n
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no Tcp lines in /proc/net/snmp of %s", h.Name)
}

// nstatRetrans runs `nstat -asz TcpRetransSegs` in h's namespace (absolute
// value, history file untouched).
func nstatRetrans(t *testing.T, h *testbed.Host) uint64 {
	t.Helper()
	out, err := h.Exec(context.Background(), "nstat", "-asz", "TcpRetransSegs").Output()
	if err != nil {
		t.Fatalf("nstat in %s: %v", h.Name, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "TcpRetransSegs" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("nstat printed no TcpRetransSegs: %q", out)
	return 0
}

func retransSegs(t *testing.T, h *testbed.Host) uint64 {
	t.Helper()
	m, err := snmpTcp(h)
	if err != nil {
		t.Fatal(err)
	}
	return m["RetransSegs"]
}

// Ground truth for retransmit counting: a 1 Gbit/s HTB with a 128 KiB
// bfifo on a router between the hosts drops real packets, so the sender
// retransmits. The trace's BPF retransmits (flows.retransmits over the
// sender's namespace) and TCP_INFO's (traffic.tcp_retransmits) must each
// be within 1% of the kernel's own TcpRetransSegs delta in the sender's
// namespace (read before and after the run, with nothing else running
// there); and the report's receiver line must say n/a, not 0.
func TestRetransmitsMatchKernel(t *testing.T) {
	requireBench(t, true)
	bed, err := testbed.NewRouted(context.Background(), testbed.RoutedOptions{RateBps: 1e9, QueueBytes: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bed.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	cfg := DefaultConfig()
	cfg.Duration = 5 * time.Second
	cfg.Streams = 4
	cfg.Out = filepath.Join(t.TempDir(), "run")

	nstatBefore, before := nstatRetrans(t, bed.A()), retransSegs(t, bed.A())
	res, err := runOnBed(context.Background(), cfg, "test", bed, nil)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	after, nstatAfter := retransSegs(t, bed.A()), nstatRetrans(t, bed.A())
	kernel := after - before
	drops, err := bed.QdiscDrops()
	if err != nil {
		t.Fatal(err)
	}

	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	flows, err := run.Flows()
	if err != nil {
		t.Fatal(err)
	}
	var bpf, bpfFail, recvSide uint64
	bpfPerStream := map[string]uint64{} // local ip:port
	for _, f := range flows {
		switch f.Netns {
		case bed.A().NetnsInode():
			bpf += f.Retransmits
			if f.RetransmitFailures != nil { // null where the tracepoint has no err
				bpfFail += *f.RetransmitFailures
			}
			if f.Retransmits > 0 {
				bpfPerStream[fmt.Sprintf("%s:%d", f.SrcAddr, f.SrcPort)] += f.Retransmits
			}
		case bed.B().NetnsInode():
			recvSide += f.Retransmits
		}
	}
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	var tcpInfo uint64
	infoPerStream := map[string]uint64{}
	for _, r := range rows {
		if r.Role == trace.RoleSender && r.TCPRetransmits != nil {
			tcpInfo += *r.TCPRetransmits
			infoPerStream[r.LocalAddr] += *r.TCPRetransmits
		}
	}
	var events, misses uint64
	probes, err := run.Probes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		if p.Hook == "tcp:tcp_retransmit_skb" {
			events += p.RunCount
			misses += p.RecursionMisses
		}
	}
	gbps := float64(sumApp(res.Received)) * 8 / cfg.Duration.Seconds() / 1e9
	t.Logf("routed 1 Gbit/s, bfifo 128 KiB, 4 streams, %v: ~%.3f Gbit/s app; qdisc drops %d skbs", cfg.Duration, gbps, drops)
	t.Logf("sender TcpRetransSegs delta %d (/proc snmp), %d (nstat); BPF flows.retransmits %d (+%d failed attempts); TCP_INFO %d; BPF on receiver's side %d",
		kernel, nstatAfter-nstatBefore, bpf, bpfFail, tcpInfo, recvSide)
	t.Logf("per stream: BPF %v, TCP_INFO %v; tcp_retransmit_skb program ran %d times, %d recursion misses",
		bpfPerStream, infoPerStream, events, misses)
	if drops == 0 || kernel == 0 {
		t.Fatalf("no loss (%d qdisc drops, %d retransmits): the test proves nothing", drops, kernel)
	}
	if d := offBy(float64(bpf), float64(kernel)); d > 0.01 {
		t.Errorf("BPF retransmits %d are %.2f%% from the kernel's %d (want ≤ 1%%)", bpf, 100*d, kernel)
	}
	if d := offBy(float64(tcpInfo), float64(kernel)); d > 0.01 {
		t.Errorf("TCP_INFO retransmits %d are %.2f%% from the kernel's %d (want ≤ 1%%)", tcpInfo, 100*d, kernel)
	}
	if res.Report == nil {
		t.Fatal("no report")
	}
	if r := res.Report.FlowRetransmits; r == nil || *r < bpf {
		t.Errorf("report flow retransmits %v, sender's flows alone have %d", r, bpf)
	}
	var b strings.Builder
	if err := res.Report.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	checkReceiverRetransNA(t, b.String())
}

// checkReceiverRetransNA finds the receiver line of the report's
// retransmits section: it must say n/a, never a number.
func checkReceiverRetransNA(t *testing.T, text string) {
	t.Helper()
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "retransmits") {
			in = true
			continue
		}
		if in && strings.TrimSpace(line) == "" {
			break
		}
		if in && strings.Contains(line, "receiver") {
			if !strings.Contains(line, "n/a") {
				t.Errorf("receiver retransmit line %q does not say n/a", line)
			}
			return
		}
	}
	t.Errorf("no receiver line in the retransmits section:\n%s", text)
}
