package bench

import (
	"log/slog"

	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
)

// probeSet is bench's probes with their samplers.
type probeSet struct {
	set      *probeset.Set
	samplers []measure.Sampler // probeset.Probes order, then bpf stats
	status   []trace.Probe
	// maps describes the loaded probes' maps for the manifest.
	maps []trace.BPFMap
}

// scope says which interfaces and namespaces belong to the run.
type scope struct {
	names map[netdev.IfaceKey]string
	netns map[uint64]bool
	// nss are the run's namespaces, for the socket iterator.
	nss []tcpstats.Netns
}

// probeOptions are what a run asks of the probes.
type probeOptions struct {
	// FlowEntries sizes the netdev flow table (0: netdev's default).
	FlowEntries uint32
	// BPFStats turns on the kernel's BPF run-time statistics for the run
	// (kernel.bpf_stats_enabled, `--bpf-stats`): the probes table's
	// run_count and run_time_ns are 0 without it. bench asks for it by
	// default; --bpf-stats=false saves the two clock reads it adds to every
	// program run (~40 ns here). recursion_misses are counted
	// either way.
	BPFStats bool
	// Probes selects probe groups (probeset.Groups; nil: all of them).
	Probes []string
}

// loadProbesWith loads and attaches the selected probes. A probe that
// cannot be loaded at all, or a program that cannot be attached, is
// recorded in status and skipped; the run goes on with the others.
func loadProbesWith(sc scope, opt probeOptions, log *slog.Logger) (*probeSet, error) {
	ps := &probeSet{set: probeset.New(opt.Probes, opt.BPFStats, log)}
	groups, samplers := ps.set.LoadAll(probeset.Scope{
		FlowEntries: opt.FlowEntries,
		Iface: func(netns uint64, ifindex uint32) (string, bool) {
			n, ok := sc.names[netdev.IfaceKey{Netns: netns, Ifindex: ifindex}]
			return n, ok
		},
		InRun:      func(netns uint64) bool { return sc.netns[netns] },
		Namespaces: func() []tcpstats.Netns { return sc.nss },
	})
	for _, g := range groups {
		ps.samplers = append(ps.samplers, samplers[g])
	}
	ps.samplers = append(ps.samplers, ps.set.Stats())
	ps.status = ps.set.Status
	var err error
	if ps.maps, err = ps.set.Maps(); err != nil {
		log.Warn("manifest lists only some BPF maps", "err", err)
	}
	return ps, nil
}

// Close stops the event readers, detaches every probe and stops BPF stats
// collection.
func (ps *probeSet) Close() error {
	if ps == nil {
		return nil
	}
	return ps.set.Close()
}
