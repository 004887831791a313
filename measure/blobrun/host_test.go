package blobrun

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure/host"
	"github.com/netprof/netprof/measure/ifaces"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/blob/blobtest"
)

// A blob pull records the host like bench does: netlink counters of the
// counted interface (here lo, which carries the loopback test server's
// traffic) with the BPF counts beside them, and the probes in the manifest.
// Ground truth: lo's netlink counters carry at least the blob bytes, and
// the BPF count agrees with netlink within 2%.
func TestRunPullRecordsHost(t *testing.T) {
	kerneltest.RequireRoot(t)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	s, err := blobtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const size = 32 << 20
	s.PutSynthetic("cont", "b", size)
	cfg := DefaultConfig(CmdPull)
	cfg.URLs = []string{s.URL + "/cont/b"}
	cfg.Blob.Concurrency, cfg.Blob.BlockSize = 4, 4<<20
	cfg.Interval, cfg.Out = 100*time.Millisecond, filepath.Join(t.TempDir(), "run")
	cfg.Host = host.Config{Select: ifaces.Selector{Names: []string{"lo"}}, FlowEntries: 4096}
	res, err := Run(context.Background(), cfg, "test", devEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	attached := map[string]bool{}
	for _, p := range run.Manifest.Probes {
		attached[p.Hook] = p.Attached
	}
	if !attached["net:netif_receive_skb"] || !attached["tcp:tcp_probe"] {
		t.Errorf("manifest probes %+v: want netdev and tcp attached", run.Manifest.Probes)
	}
	flowTable := false
	for _, m := range run.Manifest.Maps {
		flowTable = flowTable || (m.Name == "np_nd_flows" && m.MaxEntries == 4096)
	}
	if !flowTable {
		t.Errorf("manifest maps %+v: want np_nd_flows of 4096 entries (host.Config.FlowEntries)", run.Manifest.Maps)
	}
	rows, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	var nl, bpf uint64
	for _, r := range rows {
		if r.Ifname != "lo" {
			t.Errorf("row for %s: only lo was selected", r.Ifname)
			continue
		}
		if r.BpfRxBytes == nil {
			t.Fatal("bpf_rx_bytes null with probes attached")
		}
		nl += r.RxBytes
		bpf += *r.BpfRxBytes
	}
	if nl < size {
		t.Errorf("lo rx_bytes %d < blob size %d", nl, size)
	}
	if d := math.Abs(float64(bpf)-float64(nl)) / float64(nl); d > 0.02 {
		t.Errorf("lo bpf_rx_bytes %d vs netlink %d: %.2f%% apart", bpf, nl, 100*d)
	}
	t.Logf("lo: netlink rx %d, bpf rx %d, blob %d bytes", nl, bpf, size)
}
