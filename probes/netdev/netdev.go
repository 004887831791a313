// Package netdev is the packet-counting probe: per interface, per flow and
// per CPU, from net:netif_receive_skb (receive), net:net_dev_start_xmit
// (transmit) and napi:napi_poll, attached as tp_btf (Linux >= 5.5 with BTF).
//
// The kernel keeps running totals in hash maps shared by all CPUs (their
// size does not grow with the possible-CPU count); each Read returns what
// changed since the previous one. Bytes are L2 frame bytes (what
// netlink's interface counters count), packets are segments (a GSO/GRO skb
// counts gso_segs), wire bytes add the headers segmentation repeats.
//
// To save two hash lookups per packet, each CPU keeps its latest interface
// and flow counts in a small per-CPU cache (bpf/netdev_cache.h) that Read
// flushes into the maps first, on every CPU (flush.go): the totals are the
// same as without it, to the packet.
//
// The flow table is not LRU: a flow that finds it full is counted per CPU
// as lost bytes and packets (never silently gone), and Read deletes flows
// idle for IdleReads reads to keep room.
package netdev

import (
	"fmt"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/loader"
)

// Options tunes the probe.
type Options struct {
	// FlowEntries is the size of the flow table (default 16384, about
	// 185 bytes of kernel memory each). When it is full, new flows are counted only as lost
	// bytes and packets (CPUCounts.FlowLost).
	FlowEntries uint32
}

// DefaultFlowEntries is the flow table size when Options.FlowEntries is 0.
const DefaultFlowEntries = 16384

// Spec returns the loader spec of the probe with its flow table sized.
func Spec(opt Options) (loader.Spec, error) {
	cs, err := bpf.LoadNetdev()
	if err != nil {
		return loader.Spec{}, fmt.Errorf("netdev spec: %w", err)
	}
	n := opt.FlowEntries
	if n == 0 {
		n = DefaultFlowEntries
	}
	cs.Maps[bpf.NetdevMapNpNdFlows].MaxEntries = n
	return loader.Spec{
		Probe:      "netdev",
		Collection: cs,
		Programs: []loader.Program{
			{Name: bpf.NetdevProgNpNdRx, Hook: "net:netif_receive_skb"},
			{Name: bpf.NetdevProgNpNdTx, Hook: "net:net_dev_start_xmit"},
			{Name: bpf.NetdevProgNpNdNapi, Hook: "napi:napi_poll"},
			{Name: bpf.NetdevProgNpNdFlush, Detached: true},
		},
	}, nil
}
