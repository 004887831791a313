package probeset

import (
	"fmt"
	"slices"
	"strings"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/trace"
)

// Group is one name `--probes` takes: the BPF programs it attaches and
// the figures they give.
type Group struct {
	Name     string
	Figures  string
	Programs []string
}

// Groups lists every group `--probes` knows, in the order help
// prints them. Leaving a group out saves its per-event cost (the probes
// table of a run with BPF stats shows it, ns/event × events) and leaves
// its figures n/a, with the reason "not selected (--probes)".
var Groups = []Group{
	{"netdev", "interface and per-flow bytes, segments, skbs; per-CPU rx packets (net:netif_receive_skb, net:net_dev_start_xmit)",
		[]string{bpf.NetdevProgNpNdRx, bpf.NetdevProgNpNdTx}},
	{"napi", "NAPI polls, work and budget exhaustion per CPU (napi:napi_poll)", []string{bpf.NetdevProgNpNdNapi}},
	{"softirq", "NET_RX/NET_TX softirq time and count per CPU (irq:softirq_entry, irq:softirq_exit)",
		[]string{bpf.SoftirqProgNpSiEntry, bpf.SoftirqProgNpSiExit}},
	{"tcp", "per-flow RTT histogram, srtt, snd_cwnd, retransmitted segments (tcp:tcp_probe, tcp:tcp_retransmit_skb)",
		[]string{bpf.TcpProgNpTcpProbe, bpf.TcpProgNpTcpRetrans}},
	{"sockstate", "TCP connection opens and closes (sock:inet_sock_set_state)", []string{bpf.SockstateProgNpSsState}},
	{"tcpsock", "per-socket TCP counters read once per interval by a socket iterator (iter:tcp, no per-packet cost): " +
		"bytes acked/received, retransmitted segments, srtt, min RTT, latest RTT sample, cwnd, windows, delivery rate, " +
		"busy / receive-window-limited / send-buffer-limited time; a socket closing between two reads leaves its final record " +
		"(sock:inet_sock_set_state, once per connection)", []string{bpf.TcpiterProgNpTcpIter, bpf.TcpiterProgNpTcpClose}},
	{"drops", "packets and bytes the kernel dropped, per CPU and drop reason (skb:kfree_skb; the reason from Linux 5.17)",
		[]string{bpf.DropsProgNpDrop}},
}

// Default is the "default" preset, bench's default: no program that runs
// per packet, per ACK or per softirq. TCP figures come from the socket
// iterator read once per interval (and one close hook per connection);
// interface bytes from netlink; per-CPU softirq time (every vector),
// packets and time squeezes from /proc/stat and /proc/net/softnet_stat.
// What it does not give (n/a with the reason "not selected"): NET_RX
// softirq time alone, interface bytes counted by BPF, per-flow L2 bytes
// (flows get the socket's payload bytes), the per-ACK RTT histogram and
// NAPI budget figures. Those need "deep" (every group), whose per-packet
// hooks cost 10-25% of throughput on a CPU-bound path (docs/probes.md,
// "Probe cost"; BenchmarkProbeCostSets).
var Default = []string{"sockstate", "tcpsock"}

// groupNames returns the group names, comma-separated.
func groupNames() string {
	names := make([]string, len(Groups))
	for i, g := range Groups {
		names[i] = g.Name
	}
	return strings.Join(names, ",")
}

// Help describes the groups for --help.
func Help() string {
	var b strings.Builder
	for _, g := range Groups {
		fmt.Fprintf(&b, "%s: %s; ", g.Name, g.Figures)
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// Parse parses a --probes value: "deep" or "all" (nil: every group),
// "default" (Default) or a comma-separated list of group names. An unknown
// name is an error that lists the known ones.
func Parse(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "all", "deep":
		return nil, nil
	case "default":
		return slices.Clone(Default), nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.ContainsFunc(Groups, func(g Group) bool { return g.Name == name }) {
			return nil, fmt.Errorf("unknown probe group %q: want default, deep (= all), or some of %s", name, groupNames())
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// Off is the manifest's probe list of a run with no probe attached at all
// (--no-bpf, or BPF unavailable): one entry named "all" whose hook names
// every group, with the reason.
func Off(reason string) []trace.Probe {
	return []trace.Probe{{Name: "all", Hook: "every probe group: " + strings.ReplaceAll(groupNames(), ",", ", "), Reason: reason}}
}

// NotSelected is the reason recorded for a program --probes left out.
const NotSelected = trace.ReasonNotSelected

// Skip returns the programs of the groups not in selected (nil
// selects every group), each with the reason NotSelected.
func Skip(selected []string) map[string]string {
	if selected == nil {
		return nil
	}
	skip := map[string]string{}
	for _, g := range Groups {
		if !slices.Contains(selected, g.Name) {
			for _, p := range g.Programs {
				skip[p] = NotSelected
			}
		}
	}
	return skip
}

// allSkipped reports whether every attached program of spec is skipped:
// the probe then need not be loaded at all. It returns their status rows.
func allSkipped(spec loader.Spec) (bool, []loader.Program) {
	var progs []loader.Program
	for _, p := range spec.Programs {
		if p.Detached {
			continue
		}
		if _, ok := spec.Skip[p.Name]; !ok {
			return false, nil
		}
		progs = append(progs, p)
	}
	return true, progs
}
