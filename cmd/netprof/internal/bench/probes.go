package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/probes/sockstate"
	"github.com/netprof/netprof/probes/softirq"
	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
)

// probeSet is every loaded probe with its samplers.
type probeSet struct {
	loaded   []*loader.Loaded
	samplers []loader.Sampler // netdev, tcp, softirq, sockstate, bpf stats: in that order
	status   []trace.Probe
	stats    io.Closer
	readers  []io.Closer // event readers (sockstate), closed before the probes
}

// scope says which interfaces and namespaces belong to the run.
type scope struct {
	names map[netdev.IfaceKey]string
	netns map[uint64]bool
}

// probeOptions are what a run asks of the probes.
type probeOptions struct {
	// FlowEntries sizes the netdev flow table (0: netdev's default).
	FlowEntries uint32
	// BPFStats turns on the kernel's BPF run-time statistics for the run
	// (kernel.bpf_stats_enabled, `--bpf-stats`): the probes table's
	// run_count and run_time_ns are 0 without it. bench asks for it by
	// default; --bpf-stats=false saves the two clock reads it adds to every
	// program run (1–2% of throughput). recursion_misses are counted
	// either way.
	BPFStats bool
	// Probes selects probe groups (ProbeGroups; nil: all of them).
	Probes []string
}

// loadProbes is loadProbesWith with BPF stats off.
func loadProbes(sc scope, flowEntries uint32, log *slog.Logger) (*probeSet, error) {
	return loadProbesWith(sc, probeOptions{FlowEntries: flowEntries}, log)
}

// loadProbesWith loads and attaches every probe. A probe that cannot be
// loaded at all, or a program that cannot be attached, is recorded in
// status and skipped; the run goes on with the others.
func loadProbesWith(sc scope, opt probeOptions, log *slog.Logger) (*probeSet, error) {
	ps := &probeSet{}
	if opt.BPFStats {
		if c, err := loader.EnableStats(); err != nil {
			log.Warn("bpf run-time stats unavailable; probes table will show 0 run count and time", "err", err)
		} else {
			ps.stats = c
		}
	}
	skip := skipPrograms(opt.Probes)
	load := func(name string, spec loader.Spec, err error) *loader.Loaded {
		spec.Skip = skip
		if none, progs := allSkipped(spec); err == nil && none {
			for _, p := range progs {
				ps.status = append(ps.status, trace.Probe{Name: p.Name, Hook: p.Hook, Reason: notSelected})
			}
			return nil
		}
		if err == nil {
			var l *loader.Loaded
			if l, err = loader.Load(spec, log); err == nil {
				ps.loaded = append(ps.loaded, l)
				ps.status = append(ps.status, l.Status...)
				return l
			}
		}
		log.Warn("probe not loaded", "probe", name, "err", err)
		ps.status = append(ps.status, trace.Probe{Name: name, Reason: err.Error()})
		return nil
	}
	ndSpec, err := netdev.Spec(netdev.Options{FlowEntries: opt.FlowEntries})
	if l := load("netdev", ndSpec, err); l != nil {
		r, err := netdev.NewReader(l)
		if err != nil {
			return nil, errors.Join(err, ps.Close())
		}
		if err := r.CacheErr(); err != nil {
			log.Info("netdev per-CPU cache off; counting in the hash maps directly", "reason", err)
		}
		ps.samplers = append(ps.samplers, netdev.NewSampler(r, func(netns uint64, ifindex uint32) (string, bool) {
			n, ok := sc.names[netdev.IfaceKey{Netns: netns, Ifindex: ifindex}]
			return n, ok
		}))
	}
	tcSpec, err := tcpstats.Spec(tcpstats.Options{})
	if l := load("tcp", tcSpec, err); l != nil {
		r, err := tcpstats.NewReader(l)
		if err != nil {
			return nil, errors.Join(err, ps.Close())
		}
		ps.samplers = append(ps.samplers, tcpstats.NewSampler(r, func(netns uint64) bool { return sc.netns[netns] }))
	}
	siSpec, err := softirq.Spec()
	if l := load("softirq", siSpec, err); l != nil {
		r, err := softirq.NewReader(l)
		if err != nil {
			return nil, errors.Join(err, ps.Close())
		}
		ps.samplers = append(ps.samplers, softirq.NewSampler(r))
	}
	ssSpec, err := sockstate.Spec(sockstate.Options{})
	if l := load("sockstate", ssSpec, err); l != nil {
		r, err := sockstate.NewReader(l)
		if err != nil {
			return nil, errors.Join(err, ps.Close())
		}
		ps.readers = append(ps.readers, r)
		ps.samplers = append(ps.samplers, sockstate.NewSampler(r, func(netns uint64) bool { return sc.netns[netns] }))
	}
	ps.samplers = append(ps.samplers, &loader.StatsSampler{Probes: ps.loaded})
	return ps, nil
}

// Close stops the event readers, detaches every probe and stops BPF stats
// collection.
func (ps *probeSet) Close() error {
	if ps == nil {
		return nil
	}
	var errs []error
	for _, r := range ps.readers {
		errs = append(errs, r.Close())
	}
	for _, l := range ps.loaded {
		errs = append(errs, l.Close())
	}
	if ps.stats != nil {
		errs = append(errs, ps.stats.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close probes: %w", err)
	}
	return nil
}
