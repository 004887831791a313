package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/cpulist"
	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

func requireBench(t *testing.T, bpf bool) {
	t.Helper()
	testbedtest.Require(t)
	if bpf {
		if err := loader.Check(nil); err != nil {
			kerneltest.Skip(t, err.Error())
		}
	}
}

func netnsNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	ents, err := os.ReadDir(testbed.NetnsDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

func sumApp(samples []traffic.StreamSample) uint64 {
	var n uint64
	for _, s := range samples {
		n += s.AppBytes
	}
	return n
}

// A 3 s bench run, checked against ground truth that is not netprof's BPF:
// the generator's own counts and the kernel's netlink interface counters.
func TestBenchEndToEnd(t *testing.T) {
	requireBench(t, true)
	cfg := DefaultConfig()
	cfg.Duration = 3 * time.Second
	cfg.Out = filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), cfg, "test", nil)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	if res.Status != "ok" {
		t.Fatalf("status %q", res.Status)
	}
	if len(res.Namespaces) != 2 {
		t.Fatalf("result names %d namespaces, want 2", len(res.Namespaces))
	}
	after := netnsNames(t)
	for _, name := range res.Namespaces {
		if after[name] {
			t.Errorf("namespace %s left behind", name)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, trace.ManifestFile)); err != nil {
		t.Errorf("trace: %v", err)
	}
	for _, f := range trace.TableFiles { // a closed part each, at least
		if paths, err := trace.TablePaths(cfg.Out, f); err != nil || len(paths) == 0 {
			t.Errorf("trace table %s: parts %v, %v", f, paths, err)
		}
	}
	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range run.Manifest.Probes {
		if !p.Attached {
			t.Errorf("probe %s (%s) not attached: %s", p.Name, p.Hook, p.Reason)
		}
	}
	checkTraffic(t, run, res)
	checkIfaces(t, run)
	checkCPUs(t, run)
	if res.Report == nil || res.Report.RTT == nil {
		t.Fatal("report has no RTT")
	}
	if p50 := res.Report.RTT.P50Us; p50 == 0 || p50 >= 10000 {
		t.Errorf("RTT p50 = %d µs, want in (0, 10 ms)", p50)
	}
	// The only peers are the two ends: the namespaces' own IPv6 MLD
	// reports to ff02::16 are flows, not peers.
	var peers []string
	for _, p := range res.Report.Peers {
		peers = append(peers, p.Peer)
	}
	if slices.Sort(peers); !slices.Equal(peers, []string{"198.18.0.1", "198.18.0.2"}) {
		t.Errorf("peers %q, want the two ends of the test bed", peers)
	}
}

// The traffic table's app bytes add up exactly to what each end counted.
func checkTraffic(t *testing.T, run *trace.Run, res *Result) {
	t.Helper()
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	var recv, sent uint64
	for _, r := range rows {
		switch r.Role {
		case trace.RoleReceiver:
			recv += r.AppBytes
			if r.TCPRetransmits != nil {
				t.Errorf("receiver row has tcp_retransmits %d; want null", *r.TCPRetransmits)
			}
		case trace.RoleSender:
			sent += r.AppBytes
		}
	}
	if want := sumApp(res.Received); recv != want || want == 0 {
		t.Errorf("traffic receiver app_bytes sum %d, receiver counted %d", recv, want)
	}
	if want := sumApp(res.Sent); sent != want {
		t.Errorf("traffic sender app_bytes sum %d, sender counted %d", sent, want)
	}
	if sent != recv {
		t.Errorf("sent %d != received %d", sent, recv)
	}
}

// The receiving veth's BPF byte count is within 2% of netlink's over the
// same intervals, and netlink saw at least the payload.
func checkIfaces(t *testing.T, run *trace.Run) {
	t.Helper()
	rows, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	var recvIf string
	for _, i := range run.Manifest.Interfaces {
		if i.Role == trace.RoleReceiver {
			recvIf = i.Name
		}
	}
	var nl, bpf uint64
	for _, r := range rows {
		if r.Ifname != recvIf {
			continue
		}
		if r.BpfRxBytes == nil {
			t.Fatal("bpf_rx_bytes null with probes on")
		}
		nl += r.RxBytes
		bpf += *r.BpfRxBytes
	}
	if nl == 0 {
		t.Fatalf("no rx bytes on %s", recvIf)
	}
	if diff := math.Abs(float64(bpf)-float64(nl)) / float64(nl); diff > 0.02 {
		t.Errorf("%s: bpf_rx_bytes %d vs netlink rx_bytes %d: %.2f%% apart", recvIf, bpf, nl, 100*diff)
	}
	t.Logf("%s: bpf_rx_bytes %d, netlink rx_bytes %d", recvIf, bpf, nl)
}

// No CPU spends more than the interval in softirq, and NET_RX ran at all;
// the manifest counts the machine's CPUs (sysfs, not this process's
// affinity) and only online CPUs have rows (per-CPU maps hold every
// possible one).
func checkCPUs(t *testing.T, run *trace.Run) {
	t.Helper()
	rows, err := run.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	online, err := cpulist.Online()
	if err != nil {
		t.Fatal(err)
	}
	possible, err := cpulist.Possible()
	if err != nil {
		t.Fatal(err)
	}
	if m := run.Manifest; m.CPUCount != len(online) || m.CPUsOnline != online.String() || m.CPUsPossible != possible.String() {
		t.Errorf("manifest cpu_count %d, cpus_online %q, cpus_possible %q; sysfs says %d, %q, %q",
			m.CPUCount, m.CPUsOnline, m.CPUsPossible, len(online), online, possible)
	}
	var total uint64
	for _, r := range rows {
		if !online.Contains(int(r.CPU)) {
			t.Fatalf("a cpus row for CPU %d, which is not online (%s of possible %s)", r.CPU, online, possible)
		}
		rx, tx := set(t, "net_rx_softirq_ns", r.NetRxSoftirqNs), set(t, "net_tx_softirq_ns", r.NetTxSoftirqNs)
		if rx > uint64(r.IntervalNs) || tx > uint64(r.IntervalNs) {
			t.Errorf("cpu %d at %v: softirq rx %d / tx %d ns > interval %d ns", r.CPU, r.Time, rx, tx, r.IntervalNs)
		}
		total += rx
	}
	if total == 0 {
		t.Error("no NET_RX softirq time recorded")
	}
}

// --no-bpf: the run still works from the generator and netlink; the
// manifest says the probes were off and the bpf columns are null.
func TestBenchNoBPF(t *testing.T) {
	requireBench(t, false)
	cfg := DefaultConfig()
	cfg.Duration = time.Second
	cfg.Interval = 250 * time.Millisecond
	cfg.Streams = 2
	cfg.NoBPF = true
	cfg.Out = filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), cfg, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Manifest.Probes) == 0 || run.Manifest.Probes[0].Attached || !strings.Contains(run.Manifest.Probes[0].Reason, "no-bpf") {
		t.Errorf("manifest probes %+v: want probes off with reason", run.Manifest.Probes)
	}
	ifs, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ifs {
		if r.BpfRxBytes != nil {
			t.Fatal("bpf_rx_bytes set with --no-bpf")
		}
	}
	var b strings.Builder
	if err := res.Report.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "probes off") {
		t.Errorf("report does not say the probes were off:\n%s", b.String())
	}
	// The note names what was off, never "probe all () not attached".
	if strings.Contains(b.String(), "()") || !strings.Contains(b.String(), "probe all (every probe group: netdev, napi, softirq, tcp, sockstate, tcpsock, drops) not attached: --no-bpf") {
		t.Errorf("report's probes-off note:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "probes off (--no-bpf)") {
		t.Errorf("config line does not say --no-bpf:\n%s", b.String())
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	c.Streams = 0
	c.Interval = time.Millisecond
	c.Port = 70000
	err := c.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"stream", "interval", "port"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// set returns *p, failing t when the column is null (its probe ran, so
// every row of it must have a value).
func set(t *testing.T, col string, p *uint64) uint64 {
	t.Helper()
	if p == nil {
		t.Fatalf("cpus.%s null in a run with its probe on", col)
	}
	return *p
}
