package ifaces

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/trace"
)

func lk(idx int, name, kind, driver string, master, lower int, mac string) linkstats.Link {
	return linkstats.Link{Index: idx, Name: name, Kind: kind, Driver: driver, MasterIndex: master, LowerIndex: lower, MAC: mac}
}

// groupOf returns the group holding ifindex idx.
func groupOf(t *testing.T, gs []Group, idx int) Group {
	t.Helper()
	for _, g := range gs {
		if g.Has(idx) {
			return g
		}
	}
	t.Fatalf("no group holds %d", idx)
	return Group{}
}

func TestPlanShapes(t *testing.T) {
	cases := []struct {
		name          string
		links         []linkstats.Link
		probe         int // a member to look up
		shape         Shape
		counted       int
		rxFrom, txFrm []int
	}{
		{"azure VF enslaved to hv_netvsc", []linkstats.Link{
			lk(1, "lo", "device", "loopback", 0, 0, ""),
			lk(2, "eth0", "device", "hv_netvsc", 0, 0, "00:0d:3a:01"),
			lk(3, "enP30832s1", "device", "mana", 2, 0, "00:0d:3a:01"),
		}, 3, ShapeVFSynthetic, 2, []int{2, 3}, []int{2}},
		{"azure VF sharing the MAC, not enslaved yet", []linkstats.Link{
			lk(2, "eth0", "device", "hv_netvsc", 0, 0, "00:0d:3a:02"),
			lk(5, "ens1", "device", "mlx5_core", 0, 0, "00:0d:3a:02"),
		}, 5, ShapeVFSynthetic, 2, []int{2, 5}, []int{2}},
		{"bond", []linkstats.Link{
			lk(2, "eth0", "device", "ixgbe", 4, 0, "a"),
			lk(3, "eth1", "device", "ixgbe", 4, 0, "a"),
			lk(4, "bond0", "bond", "bonding", 0, 0, "a"),
		}, 2, ShapeBond, 4, []int{2, 3}, []int{4}},
		{"bridge", []linkstats.Link{
			lk(2, "veth0", "veth", "veth", 4, 0, "a"),
			lk(4, "br0", "bridge", "bridge", 0, 0, "b"),
		}, 2, ShapeBridge, 4, []int{4}, []int{4}},
		{"macvlan", []linkstats.Link{
			lk(2, "veth0", "veth", "veth", 0, 0, "a"),
			lk(3, "mv0", "macvlan", "macvlan", 0, 2, "b"),
			lk(4, "mv1", "macvlan", "macvlan", 0, 2, "c"),
		}, 4, ShapeStacked, 2, []int{2}, []int{2}},
		{"macvlan on a bridge over a bond", []linkstats.Link{
			lk(2, "eth0", "device", "ice", 4, 0, "a"),
			lk(3, "eth1", "device", "ice", 4, 0, "a"),
			lk(4, "bond0", "bond", "bonding", 5, 0, "a"),
			lk(5, "br0", "bridge", "bridge", 0, 0, "a"),
			lk(6, "mv0", "macvlan", "macvlan", 0, 5, "m"),
		}, 6, ShapeNested, 5, []int{5}, []int{5}},
		{"single", []linkstats.Link{lk(2, "eth0", "device", "virtio_net", 0, 0, "a")}, 2, ShapeSingle, 2, []int{2}, []int{2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := groupOf(t, Plan(c.links), c.probe)
			if g.Shape != c.shape {
				t.Errorf("shape %s, want %s", g.Shape, c.shape)
			}
			if len(g.Counted) != 1 || g.Counted[0].Index != c.counted {
				t.Fatalf("counted %+v, want ifindex %d (reason %q)", g.Counted, c.counted, g.Reason)
			}
			if !reflect.DeepEqual(g.Counted[0].RxFrom, c.rxFrom) || !reflect.DeepEqual(g.Counted[0].TxFrom, c.txFrm) {
				t.Errorf("rx from %v tx from %v, want %v %v", g.Counted[0].RxFrom, g.Counted[0].TxFrom, c.rxFrom, c.txFrm)
			}
			if g.Members[0].Index != c.counted || g.Reason == "" {
				t.Errorf("members %v reason %q: counted first, with a reason", g.Members, g.Reason)
			}
			t.Logf("%s: %s", g.Shape, g.Reason)
		})
	}
}

func TestSelectNotFoundListsInterfaces(t *testing.T) {
	links := []linkstats.Link{lk(1, "lo", "device", "loopback", 0, 0, ""), lk(2, "eth0", "device", "virtio_net", 0, 0, "a")}
	_, err := Select(nil, links, Plan(links), Selector{Names: []string{"eth9"}})
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNoMatch) {
		t.Fatalf("err %v, want a NotFoundError wrapping ErrNoMatch", err)
	}
	for _, want := range []string{`"eth9"`, "lo (loopback)", "eth0 (virtio_net)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = Select(nil, links, Plan(links), Selector{Drivers: []string{"mana"}})
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "eth0 (virtio_net)") {
		t.Errorf("driver miss: %v", err)
	}
}

func TestSelectPairOnce(t *testing.T) {
	links := []linkstats.Link{
		lk(2, "eth0", "device", "hv_netvsc", 0, 0, "m"),
		lk(3, "enP1", "device", "mana", 2, 0, "m"),
	}
	sel, err := Select(nil, links, Plan(links), Selector{Names: []string{"eth0", "enP1"}, Drivers: []string{"mana"}})
	if err != nil {
		t.Fatal(err)
	}
	if c := sel.Counted(); len(sel.Groups) != 1 || len(c) != 1 || c[0].Name != "eth0" {
		t.Fatalf("selected %d groups, counted %+v: want eth0 once", len(sel.Groups), c)
	}
}

func TestParseSpeed(t *testing.T) {
	for in, want := range map[string]int64{"100G": 100000, "25Gbit": 25000, "200Gbit/s": 200000, "40000M": 40000, "10000Mbit": 10000, "2.5g": 2500} {
		got, err := ParseSpeed(in)
		if err != nil || got != want {
			t.Errorf("ParseSpeed(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-1G", "0", "0G", "10000", "500k"} {
		if _, err := ParseSpeed(bad); err == nil {
			t.Errorf("ParseSpeed(%q) accepted", bad)
		}
	}
	// ethtool's bare Mb/s figure is refused with the suggestion.
	if _, err := ParseSpeed("10000"); err == nil || !errors.Is(err, units.ErrNoUnit) || !strings.Contains(err.Error(), "10000Mbit") {
		t.Errorf("ParseSpeed(10000) error %v: want ErrNoUnit suggesting 10000Mbit", err)
	}
	o, err := ParseSpeedOverrides([]string{"eth0=100G", "25G"})
	if err != nil || o["eth0"] != 100000 || o[""] != 25000 {
		t.Errorf("overrides %v %v", o, err)
	}
}

func TestUtilisationNeverAbove100(t *testing.T) {
	ten := int64(10000)
	l := linkstats.Link{Name: "veth0", SpeedMbps: &ten, SpeedNote: "ethtool"}
	if pct, ok, _ := Utilisation(5e9, l); !ok || pct != 50 {
		t.Errorf("5 of 10 Gbit/s: %v %v", pct, ok)
	}
	if pct, ok, why := Utilisation(20e9, l); ok || pct != 0 || !strings.Contains(why, "exceeds") {
		t.Errorf("20 of 10 Gbit/s: %v %v %q, want no figure and a reason", pct, ok, why)
	}
	l.SpeedMbps = nil
	if _, ok, why := Utilisation(1e9, l); ok || !strings.Contains(why, "unknown") {
		t.Errorf("unknown speed: %v %q", ok, why)
	}
}

// Fold puts the VF's receive counts and the synthetic NIC's transmit
// counts on the synthetic row, merges the flow, and drops the VF's rows.
func TestFoldVFSynthetic(t *testing.T) {
	links := []linkstats.Link{
		lk(2, "eth0", "device", "hv_netvsc", 0, 0, "m"),
		lk(3, "enP1", "device", "mana", 2, 0, "m"),
	}
	sel, _ := Select(nil, links, Plan(links), Selector{Names: []string{"eth0"}})
	tr := NewTracker(&linkstats.NS{Netns: 7}, sel, nil, nil)
	u := func(v uint64) *uint64 { return &v }
	iv := &trace.Interval{
		Ifaces: []trace.IfaceRow{
			{Netns: 7, Ifindex: 2, Ifname: "eth0", RxBytes: 1000, BpfRxBytes: u(10), BpfTxBytes: u(500)},
			{Netns: 7, Ifindex: 3, Ifname: "enP1", RxBytes: 990, BpfRxBytes: u(990), BpfTxBytes: u(500)},
			{Netns: 8, Ifindex: 3, Ifname: "other-ns"},
		},
		Flows: []trace.FlowRow{
			{Netns: 7, Ifindex: 3, Ifname: "enP1", SrcAddr: "a", DstAddr: "b", SrcPort: 1, DstPort: 2, RxBytes: 900, TxBytes: 400},
			{Netns: 7, Ifindex: 2, Ifname: "eth0", SrcAddr: "a", DstAddr: "b", SrcPort: 1, DstPort: 2, RxBytes: 5, TxBytes: 400},
		},
	}
	if err := (&FoldSampler{T: tr}).Sample(iv, 1e9); err != nil {
		t.Fatal(err)
	}
	if len(iv.Ifaces) != 2 || iv.Ifaces[0].Ifname != "eth0" || iv.Ifaces[1].Ifname != "other-ns" {
		t.Fatalf("rows %+v", iv.Ifaces)
	}
	r := iv.Ifaces[0]
	if r.RxBytes != 1000 || *r.BpfRxBytes != 1000 || *r.BpfTxBytes != 500 {
		t.Errorf("eth0 rx %d bpf rx %d tx %d, want 1000 1000 500", r.RxBytes, *r.BpfRxBytes, *r.BpfTxBytes)
	}
	if len(iv.Flows) != 1 || iv.Flows[0].Ifname != "eth0" || iv.Flows[0].RxBytes != 905 || iv.Flows[0].TxBytes != 400 {
		t.Errorf("flows %+v, want one eth0 row rx 905 tx 400", iv.Flows)
	}
}
