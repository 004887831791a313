package host

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure/ifaces"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

func samplerNames(h *Host) []string {
	var out []string
	for _, s := range h.Samplers() {
		out = append(out, s.Name())
	}
	return out
}

// A host opened inside a test bed's namespace counts the bed's veth end
// (netlink's own ifindex for it), records in the required sampler order
// (interface rows, netdev's counts on them, the counting rule, the other
// probes in probeset order, program statistics, ethtool -S, /proc), and
// its manifest entries name the interface as counted; with NoBPF the
// probes' one status row says why.
func TestOpenInBedNamespace(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	b := bed.B()
	cfg := Config{Select: ifaces.Selector{Names: []string{b.Link}}, Netns: b.Do, NetnsInode: b.NetnsInode(), NoBPF: true}
	h, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Netns() != b.NetnsInode() {
		t.Errorf("Netns %d, want the bed's %d", h.Netns(), b.NetnsInode())
	}
	counted := h.Selection().Counted()
	if len(counted) != 1 || counted[0].Name != b.Link || counted[0].Index != b.Ifindex() {
		t.Errorf("counted %+v: want %s (ifindex %d)", counted, b.Link, b.Ifindex())
	}
	if got, want := samplerNames(h), []string{"netlink-ifaces", "fold-ifaces", "ethtool-stats", "/proc/stat"}; !slices.Equal(got, want) {
		t.Errorf("samplers without BPF %v, want %v", got, want)
	}
	if p := h.Probes(); len(p) != 1 || p[0].Attached || !strings.Contains(p[0].Reason, "--no-bpf") {
		t.Errorf("probes %+v: want one row saying --no-bpf", p)
	}
	ifs := h.Interfaces()
	if len(ifs) != 1 || ifs[0].Name != b.Link || !strings.HasPrefix(ifs[0].Role, "counted") {
		t.Errorf("manifest interfaces %+v: want %s counted", ifs, b.Link)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(t, err.Error())
	}
	cfg.NoBPF, cfg.Probes = false, []string{"netdev", "sockstate", "tcpsock"}
	h, err = Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	want := []string{"netlink-ifaces", "netdev", "fold-ifaces", "tcpiter", "sockstate", "bpf-stats", "ethtool-stats", "/proc/stat"}
	if got := samplerNames(h); !slices.Equal(got, want) {
		t.Errorf("samplers %v, want %v", got, want)
	}
	if !h.HasProbe("netdev") || h.HasProbe("softirq") {
		t.Errorf("HasProbe netdev %v softirq %v: want true, false", h.HasProbe("netdev"), h.HasProbe("softirq"))
	}
	flows := false
	for _, m := range h.Maps() {
		flows = flows || (m.Name == "np_nd_flows" && m.MaxEntries == cfg.FlowTable())
	}
	if !flows {
		t.Errorf("maps %+v: want np_nd_flows of %d entries", h.Maps(), cfg.FlowTable())
	}
	for _, p := range h.Probes() {
		if p.Reason == probeset.NotSelected && strings.HasPrefix(p.Name, "np_nd") && p.Name != "np_nd_napi" {
			t.Errorf("%s not attached though netdev was selected", p.Name)
		}
	}
}

// A selection that matches nothing is the user's to fix: ErrUsage, with
// the interfaces that exist.
func TestOpenNoMatch(t *testing.T) {
	bed := testbedtest.New(t, testbed.Options{})
	_, err := Open(Config{Select: ifaces.Selector{Names: []string{"nosuch0"}}, Netns: bed.B().Do, NetnsInode: bed.B().NetnsInode()}, nil)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), bed.B().Link) {
		t.Fatalf("err %v: want ErrUsage listing %s", err, bed.B().Link)
	}
}
