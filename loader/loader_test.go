package loader_test

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
)

func requireBPF(t *testing.T) {
	t.Helper()
	kerneltest.RequireRoot(t)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(t, err.Error())
	}
}

func specs(t *testing.T) []loader.Spec {
	t.Helper()
	nd, err := bpf.LoadNetdev()
	if err != nil {
		t.Fatal(err)
	}
	si, err := bpf.LoadSoftirq()
	if err != nil {
		t.Fatal(err)
	}
	tc, err := bpf.LoadTcp()
	if err != nil {
		t.Fatal(err)
	}
	return []loader.Spec{
		{Probe: "netdev", Collection: nd, Programs: []loader.Program{
			{Name: bpf.NetdevProgNpNdRx, Hook: "net:netif_receive_skb"},
			{Name: bpf.NetdevProgNpNdTx, Hook: "net:net_dev_start_xmit"},
			{Name: bpf.NetdevProgNpNdNapi, Hook: "napi:napi_poll"},
			{Name: bpf.NetdevProgNpNdFlush, Detached: true},
		}},
		{Probe: "softirq", Collection: si, Programs: []loader.Program{
			{Name: bpf.SoftirqProgNpSiEntry, Hook: "irq:softirq_entry"},
			{Name: bpf.SoftirqProgNpSiExit, Hook: "irq:softirq_exit"},
		}},
		{Probe: "tcp", Collection: tc, Programs: []loader.Program{
			{Name: bpf.TcpProgNpTcpProbe, Hook: "tcp:tcp_probe"},
			{Name: bpf.TcpProgNpTcpRetrans, Object: retransObject(t), Hook: "tcp:tcp_retransmit_skb"},
		}},
	}
}

// retransObject is the tcp_retransmit_skb program that fits this kernel:
// np_tcp_retrans reads the err argument recent kernels pass,
// np_tcp_rtx_ok is the two-argument form (6.1, 6.12).
func retransObject(t *testing.T) string {
	t.Helper()
	n, err := loader.TracepointArgs("tcp_retransmit_skb")
	if err != nil {
		t.Fatal(err)
	}
	if n >= 3 {
		return bpf.TcpProgNpTcpRetrans
	}
	return bpf.TcpProgNpTcpRtxOk
}

// Both forms of the retransmit program: the two-argument one loads on
// every kernel; the one reading err loads exactly where the tracepoint's
// BTF has a third argument, and elsewhere fails with the verifier's reason
// (which is why Program.Object picks by TracepointArgs).
func TestRetransmitVariants(t *testing.T) {
	requireBPF(t)
	n, err := loader.TracepointArgs("tcp_retransmit_skb")
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("tcp_retransmit_skb has %d arguments, want at least sk and skb", n)
	}
	if n, err := loader.TracepointArgs("netif_receive_skb"); err != nil || n != 1 {
		t.Fatalf("netif_receive_skb: %d arguments, %v; want 1 (skb)", n, err)
	}
	tc, err := bpf.LoadTcp()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{bpf.TcpProgNpTcpRtxOk, bpf.TcpProgNpTcpRetrans} {
		l, err := loader.Load(loader.Spec{Probe: "tcp", Collection: tc, Programs: []loader.Program{
			{Name: obj, Hook: "tcp:tcp_retransmit_skb"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := obj == bpf.TcpProgNpTcpRtxOk || n >= 3
		if got := l.Attached() == 1; got != want {
			t.Errorf("%s with %d tracepoint arguments: attached %v, want %v (%+v)", obj, n, got, want, l.Status)
		}
		l.Close()
	}
}

// Every program of every object loads and attaches on this kernel, and its
// run count moves (the tracepoints fire constantly on a live host: softirqs,
// loopback traffic from this test).
func TestLoadAttachAll(t *testing.T) {
	requireBPF(t)
	for _, s := range specs(t) {
		l, err := loader.Load(s, nil)
		if err != nil {
			t.Fatalf("%s: %v", s.Probe, err)
		}
		for _, st := range l.Status {
			if !st.Attached {
				t.Errorf("%s/%s not attached: %s", s.Probe, st.Name, st.Reason)
			}
		}
		if err := l.Close(); err != nil {
			t.Errorf("close %s: %v", s.Probe, err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second close %s: %v", s.Probe, err)
		}
	}
}

// A program whose tracepoint does not exist is skipped with a named reason
// while the probe's other programs attach.
func TestMissingTracepointSkipped(t *testing.T) {
	requireBPF(t)
	s := specs(t)[1] // softirq
	s.Collection = s.Collection.Copy()
	s.Collection.Programs[bpf.SoftirqProgNpSiExit].AttachTo = "netprof_no_such_tracepoint"
	l, err := loader.Load(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Attached() != 1 {
		t.Fatalf("attached = %d, want 1", l.Attached())
	}
	var missing *string
	for i, st := range l.Status {
		if st.Name == bpf.SoftirqProgNpSiExit {
			missing = &l.Status[i].Reason
			if st.Attached {
				t.Error("missing tracepoint reported attached")
			}
		} else if !st.Attached {
			t.Errorf("%s not attached: %s", st.Name, st.Reason)
		}
	}
	if missing == nil || *missing == "" {
		t.Fatal("no reason recorded for the missing tracepoint")
	}
	t.Logf("reason: %s", *missing)
}

// A detached program is loaded but not attached: no status row, no stats,
// and it runs from user space on a chosen CPU.
func TestDetachedProgram(t *testing.T) {
	requireBPF(t)
	l, err := loader.Load(specs(t)[0], nil) // netdev
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if len(l.Status) != 3 || l.Attached() != 3 {
		t.Fatalf("status %+v, attached %d: want the 3 hooked programs", l.Status, l.Attached())
	}
	st, err := l.Stats()
	if err != nil || len(st) != 3 {
		t.Fatalf("stats %+v, %v: want 3 programs", st, err)
	}
	p := l.Detached(bpf.NetdevProgNpNdFlush)
	if p == nil {
		t.Fatal("detached program not loaded")
	}
	// With the cache off (netdev.Reader not made) the flush has nothing
	// to write back and may run here.
	if ret, err := p.Run(&ebpf.RunOptions{}); err != nil || ret != 0 {
		t.Fatalf("run: %d, %v", ret, err)
	}
	if l.Detached(bpf.NetdevProgNpNdRx) != nil {
		t.Error("attached program returned as detached")
	}
	if l.Variables[bpf.NetdevVarNpNdCacheOn] == nil {
		t.Error("global variable missing")
	}
}

func TestTracepointExists(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		kerneltest.Skip(t, "no kernel BTF")
	}
	if err := loader.TracepointExists("netif_receive_skb"); err != nil {
		t.Fatal(err)
	}
	err := loader.TracepointExists("netprof_no_such_tracepoint")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want os.ErrNotExist", err)
	}
}
