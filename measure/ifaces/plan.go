// Package ifaces decides which interfaces netprof counts so that every byte
// is counted once: it groups interfaces that carry the same bytes (an SR-IOV
// VF and its synthetic hv_netvsc NIC, bond slaves and the bond, bridge ports
// and the bridge, macvlans and their lower device), picks the one whose
// counters are counted, and says why.
//
// # The counting rule
//
// Netlink counters (IFLA_STATS64):
//
//   - VF + synthetic (Azure accelerated networking: a mana/mlx5 VF enslaved
//     to, or sharing its MAC with, an hv_netvsc device): count the synthetic
//     device. hv_netvsc adds the bytes it relays through the VF to its own
//     stats64 (netvsc_get_stats64 sums its channels and vf_stats), so it holds
//     both paths once, and it keeps counting, without a reset, when the VF is
//     hot-removed (host servicing) and traffic falls back to the synthetic
//     path. The VF's own counters are a subset: adding them doubles.
//   - bond/team/net_failover + slaves: count the bond. Its stats64 are the
//     sum of its slaves'.
//   - bridge + ports: count the bridge. It counts what the host itself sends
//     and receives through it; the ports also count frames forwarded between
//     ports, which this host's stack never handles, and the host's own
//     frames a second time.
//   - lower + macvlan/ipvlan/vlan: count the lower device. It carries the
//     frames of every stacked device on it plus its own; each stacked device
//     counts only its share. (macvlan-to-macvlan frames in bridge mode never
//     reach the lower device and are not counted: they never leave the host.)
//   - any other master kind (openvswitch, vrf...): count the slaves, not the
//     master, whose counters say nothing dependable.
//
// BPF counters follow the tracepoints: net:netif_receive_skb fires once per
// frame on the first device that receives it (VF, bond slave, bridge port,
// macvlan lower) and again only when an upper device re-injects the frame
// (a bridge delivering to the host); net:net_dev_start_xmit fires on every
// device a frame crosses, upper first. So a counted device's bpf_tx is its
// own, and its bpf_rx is its own except for a bond (the sum of its slaves)
// and a synthetic NIC (its own plus its VF's).
package ifaces

import (
	"fmt"
	"sort"
	"strings"

	"github.com/netprof/netprof/internal/linkstats"
)

// Shape names a kind of group.
type Shape string

// Group shapes.
const (
	ShapeSingle      Shape = "single"       // one interface, nothing mirrors it
	ShapeVFSynthetic Shape = "vf+synthetic" // SR-IOV VF under an hv_netvsc NIC
	ShapeBond        Shape = "bond"         // bond, team or net_failover + slaves
	ShapeBridge      Shape = "bridge"       // bridge + ports
	ShapeStacked     Shape = "stacked"      // lower + macvlan/ipvlan/vlan
	ShapeOther       Shape = "master"       // another master kind + slaves
	ShapeNested      Shape = "nested"       // several of the above combined
)

// Count is one counted interface of a group: its netlink counters are
// counted, and its BPF counts are the sum of the BPF counts of RxFrom
// (receive) and TxFrom (transmit) ifindexes.
type Count struct {
	linkstats.Link
	RxFrom, TxFrom []int
}

// Group is a set of interfaces that carry the same bytes.
type Group struct {
	Shape Shape
	// Members are every interface of the group, counted ones first.
	Members []linkstats.Link
	// Counted are the interfaces whose counters are counted (one, except
	// for ShapeOther).
	Counted []Count
	// Reason says why these are counted and the others not.
	Reason string
}

// Counts reports whether ifindex is a counted interface of g.
func (g Group) Counts(ifindex int) bool {
	for _, c := range g.Counted {
		if c.Index == ifindex {
			return true
		}
	}
	return false
}

// Has reports whether ifindex is a member of g.
func (g Group) Has(ifindex int) bool {
	for _, m := range g.Members {
		if m.Index == ifindex {
			return true
		}
	}
	return false
}

// Mirrored reports whether the group has more than one member.
func (g Group) Mirrored() bool { return len(g.Members) > 1 }

// aggregators are master drivers/kinds whose counters sum their slaves'.
var aggregators = map[string]bool{"bond": true, "team": true, "net_failover": true}

// vfDrivers are SR-IOV VF drivers seen under hv_netvsc.
var vfDrivers = map[string]bool{"mana": true, "mlx5_core": true, "mlx4_en": true, "mlx4_core": true}

const synthetic = "hv_netvsc"

// Plan groups links (one namespace's, as from linkstats.Discover) and
// applies the counting rule. Every link is in exactly one group; groups are
// ordered by their first counted interface's index.
func Plan(links []linkstats.Link) []Group {
	byIndex := linkstats.Index(links)
	uf := newUnion(links)
	vfOf := map[int]int{} // synthetic ifindex -> VF ifindex
	for _, l := range links {
		if m, ok := byIndex[l.MasterIndex]; ok {
			uf.join(l.Index, m.Index)
			if m.Driver == synthetic {
				vfOf[m.Index] = l.Index
			}
		}
		if l.LowerIndex != 0 {
			if _, ok := byIndex[l.LowerIndex]; ok {
				uf.join(l.Index, l.LowerIndex)
			}
		}
	}
	// A VF not (yet) enslaved shares its MAC with the synthetic device.
	for _, s := range links {
		if s.Driver != synthetic || s.MAC == "" {
			continue
		}
		for _, v := range links {
			if vfDrivers[v.Driver] && v.MAC == s.MAC && v.MasterIndex == 0 {
				uf.join(s.Index, v.Index)
				vfOf[s.Index] = v.Index
			}
		}
	}
	var groups []Group
	for _, members := range uf.sets() {
		groups = append(groups, plan(members, byIndex, vfOf))
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Counted[0].Index < groups[j].Counted[0].Index })
	return groups
}

// plan applies the rule to one connected set of interfaces.
func plan(members []linkstats.Link, byIndex map[int]linkstats.Link, vfOf map[int]int) Group {
	if len(members) == 1 {
		l := members[0]
		return Group{Shape: ShapeSingle, Members: members, Reason: "no other interface carries its bytes",
			Counted: []Count{{Link: l, RxFrom: []int{l.Index}, TxFrom: []int{l.Index}}}}
	}
	redundant := map[int]string{}
	shapes := map[Shape]bool{}
	for _, l := range members {
		if m, ok := byIndex[l.MasterIndex]; ok {
			switch {
			case m.Driver == synthetic:
				shapes[ShapeVFSynthetic] = true
				redundant[l.Index] = fmt.Sprintf("VF of %s: its bytes are inside %s's counters", m.Name, m.Name)
			case aggregators[m.Kind] || aggregators[m.Driver]:
				shapes[ShapeBond] = true
				redundant[l.Index] = fmt.Sprintf("slave of %s, which sums its slaves", m.Name)
			case m.Kind == "bridge":
				shapes[ShapeBridge] = true
				redundant[l.Index] = fmt.Sprintf("port of bridge %s: also carries frames forwarded between ports", m.Name)
			default:
				shapes[ShapeOther] = true
				redundant[m.Index] = fmt.Sprintf("%s master: its slaves carry the frames", m.Kind)
			}
		}
		if lo, ok := byIndex[l.LowerIndex]; ok && l.LowerIndex != 0 {
			shapes[ShapeStacked] = true
			redundant[l.Index] = fmt.Sprintf("%s on %s: %s carries its frames", l.Kind, lo.Name, lo.Name)
		}
	}
	for s, v := range vfOf {
		if _, ok := byIndex[s]; ok && containsIndex(members, s) {
			shapes[ShapeVFSynthetic] = true
			if _, done := redundant[v]; !done {
				redundant[v] = fmt.Sprintf("VF sharing its MAC with %s: its bytes are inside %s's counters", byIndex[s].Name, byIndex[s].Name)
			}
		}
	}
	g := Group{Shape: ShapeNested}
	if len(shapes) == 1 {
		for s := range shapes {
			g.Shape = s
		}
	}
	var counted, rest []linkstats.Link
	for _, l := range members {
		if _, r := redundant[l.Index]; r {
			rest = append(rest, l)
		} else {
			counted = append(counted, l)
		}
	}
	if len(counted) == 0 { // a cycle cannot happen, but never count nothing
		counted, rest = members[:1], members[1:]
	}
	g.Members = append(append(g.Members, counted...), rest...)
	var why []string
	for _, c := range counted {
		g.Counted = append(g.Counted, Count{Link: c, RxFrom: rxFrom(c, members, byIndex, vfOf), TxFrom: []int{c.Index}})
		why = append(why, fmt.Sprintf("count %s (%s)", c.Name, countedWhy(c, g.Shape)))
	}
	for _, l := range rest {
		why = append(why, fmt.Sprintf("not %s (%s)", l.Name, redundant[l.Index]))
	}
	g.Reason = strings.Join(why, "; ")
	return g
}

// countedWhy says why a counted interface is the one counted.
func countedWhy(c linkstats.Link, shape Shape) string {
	switch {
	case c.Driver == synthetic:
		return "hv_netvsc: its counters include the VF path and survive VF removal"
	case aggregators[c.Kind] || aggregators[c.Driver]:
		return "sums its slaves"
	case c.Kind == "bridge":
		return "the host's own traffic through the bridge"
	case shape == ShapeStacked || shape == ShapeNested:
		return "carries the frames of every device stacked on it"
	}
	return "carries the frames"
}

// rxFrom returns the ifindexes whose netif_receive_skb counts make up c's
// receive bytes: a bond's slaves (the tracepoint fires on the slave only), a
// synthetic NIC and its VF, else c itself.
func rxFrom(c linkstats.Link, members []linkstats.Link, byIndex map[int]linkstats.Link, vfOf map[int]int) []int {
	if aggregators[c.Kind] || aggregators[c.Driver] {
		var out []int
		for _, m := range members {
			if m.MasterIndex == c.Index {
				out = append(out, rxFrom(m, members, byIndex, vfOf)...)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if v, ok := vfOf[c.Index]; ok {
		if _, present := byIndex[v]; present {
			return []int{c.Index, v}
		}
	}
	return []int{c.Index}
}

func containsIndex(ls []linkstats.Link, idx int) bool {
	for _, l := range ls {
		if l.Index == idx {
			return true
		}
	}
	return false
}

// union is a union-find over ifindexes.
type union struct {
	parent map[int]int
	links  []linkstats.Link
}

func newUnion(links []linkstats.Link) *union {
	u := &union{parent: map[int]int{}, links: links}
	for _, l := range links {
		u.parent[l.Index] = l.Index
	}
	return u
}

func (u *union) find(i int) int {
	for u.parent[i] != i {
		u.parent[i] = u.parent[u.parent[i]]
		i = u.parent[i]
	}
	return i
}

func (u *union) join(a, b int) { u.parent[u.find(a)] = u.find(b) }

// sets returns the connected sets, members in index order.
func (u *union) sets() [][]linkstats.Link {
	byRoot := map[int][]linkstats.Link{}
	var roots []int
	for _, l := range u.links {
		r := u.find(l.Index)
		if _, ok := byRoot[r]; !ok {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], l)
	}
	out := make([][]linkstats.Link, 0, len(roots))
	for _, r := range roots {
		out = append(out, byRoot[r])
	}
	return out
}
