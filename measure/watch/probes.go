package watch

import (
	"log/slog"

	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/probes/ifaces"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
)

// probes is every BPF probe watch loaded, with its samplers.
type probes struct {
	set *probeset.Set
	// groups are the loaded probes' groups in probeset.Probes order,
	// byGroup their samplers.
	groups  []string
	byGroup map[string]measure.Sampler
	status  []trace.Probe
	// maps describes the loaded probes' maps for the manifest.
	maps []trace.BPFMap
}

// loadProbes loads the probes of probeset.Probes that selected names
// (probeset groups; nil: all): netdev's flow table flowEntries long (0:
// netdev's default), the socket iterator and sockstate over the watched
// namespace (do runs a function inside it, nil for the caller's own). A
// probe not selected or that fails to load is recorded in status with its
// reason and left out; watch goes on with netlink counters (and /proc/stat
// for softirq time).
func loadProbes(tr *ifaces.Tracker, do func(func() error) error, flowEntries uint32, selected []string, log *slog.Logger) *probes {
	ps := &probes{}
	if err := loader.Check(log); err != nil {
		ps.status = probeset.Off(err.Error())
		return ps
	}
	ps.set = probeset.New(selected, true, log)
	netns := tr.Netns()
	nss := []tcpstats.Netns{{Inode: netns, Do: do}}
	ps.groups, ps.byGroup = ps.set.LoadAll(probeset.Scope{
		FlowEntries: flowEntries,
		Iface:       tr.Scope,
		InRun:       func(n uint64) bool { return n == netns },
		Namespaces:  func() []tcpstats.Netns { return nss },
	})
	ps.status = ps.set.Status
	var err error
	if ps.maps, err = ps.set.Maps(); err != nil {
		log.Warn("manifest lists only some BPF maps", "err", err)
	}
	return ps
}

// samplers returns the recorder's samplers in their required order:
// netlink rows, BPF counts on them (netdev), the counting rule, then the
// other probes in probeset.Probes order (TCP attaches to the folded flow
// rows), /proc/stat and softnet_stat (measure.ProcSampler: they fill the
// cpus rows the probes made, and add rows for the other CPUs) and program
// statistics.
func (ps *probes) samplers(tr *ifaces.Tracker) []measure.Sampler {
	out := []measure.Sampler{&ifaces.LinkSampler{T: tr}}
	if s := ps.byGroup["netdev"]; s != nil {
		out = append(out, s)
	}
	out = append(out, &ifaces.FoldSampler{T: tr})
	for _, g := range ps.groups {
		if g != "netdev" {
			out = append(out, ps.byGroup[g])
		}
	}
	out = append(out, &measure.ProcSampler{})
	if ps.set != nil && len(ps.set.Loaded) > 0 {
		out = append(out, ps.set.Stats())
	}
	return out
}

// has says whether the probe of group was loaded and has a sampler.
func (ps *probes) has(group string) bool { return ps.byGroup[group] != nil }

// Close detaches every probe. It is idempotent.
func (ps *probes) Close() error {
	if ps == nil || ps.set == nil {
		return nil
	}
	return ps.set.Close()
}

// flowEntries returns the flow table size n asks for: netdev's default
// for 0.
func flowEntries(n uint32) uint32 {
	if n == 0 {
		return netdev.DefaultFlowEntries
	}
	return n
}
