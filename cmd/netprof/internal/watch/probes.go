package watch

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/ifaces"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/probes/softirq"
	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
)

// probes is every BPF probe watch loaded, with its samplers.
type probes struct {
	loaded  []*loader.Loaded
	netdev  loader.Sampler // nil when not loaded
	tcp     loader.Sampler
	softirq loader.Sampler
	stats   io.Closer
	status  []trace.Probe
}

// loadProbes loads netdev, tcp and softirq. A probe that fails to load is
// recorded in status with its reason and left out; watch goes on with
// netlink counters (and /proc/stat for softirq time).
func loadProbes(tr *ifaces.Tracker, log *slog.Logger) *probes {
	ps := &probes{}
	if err := loader.Check(log); err != nil {
		ps.status = []trace.Probe{{Name: "all", Reason: err.Error()}}
		return ps
	}
	if c, err := loader.EnableStats(); err == nil {
		ps.stats = c
	}
	load := func(name string, spec loader.Spec, err error) *loader.Loaded {
		if err == nil {
			var l *loader.Loaded
			if l, err = loader.Load(spec, log); err == nil && l.Attached() > 0 {
				ps.loaded = append(ps.loaded, l)
				ps.status = append(ps.status, l.Status...)
				return l
			} else if err == nil {
				ps.status = append(ps.status, l.Status...)
				l.Close()
				return nil
			}
		}
		log.Warn("probe not loaded", "probe", name, "err", err)
		ps.status = append(ps.status, trace.Probe{Name: name, Reason: err.Error()})
		return nil
	}
	spec, err := netdev.Spec(netdev.Options{})
	if l := load("netdev", spec, err); l != nil {
		if r, err := netdev.NewReader(l); err == nil {
			ps.netdev = netdev.NewSampler(r, tr.Scope)
		}
	}
	spec, err = tcpstats.Spec(tcpstats.Options{})
	if l := load("tcp", spec, err); l != nil {
		if r, err := tcpstats.NewReader(l); err == nil {
			netns := tr.Netns()
			ps.tcp = tcpstats.NewSampler(r, func(n uint64) bool { return n == netns })
		}
	}
	spec, err = softirq.Spec()
	if l := load("softirq", spec, err); l != nil {
		if r, err := softirq.NewReader(l); err == nil {
			ps.softirq = softirq.NewSampler(r)
		}
	}
	return ps
}

// samplers returns the recorder's samplers in their required order:
// netlink rows, BPF counts on them, the counting rule, then TCP (which
// attaches to the folded flow rows), softirq and program statistics.
func (ps *probes) samplers(tr *ifaces.Tracker, fallback loader.Sampler) []loader.Sampler {
	out := []loader.Sampler{&ifaces.LinkSampler{T: tr}}
	if ps.netdev != nil {
		out = append(out, ps.netdev)
	}
	out = append(out, &ifaces.FoldSampler{T: tr})
	if ps.tcp != nil {
		out = append(out, ps.tcp)
	}
	if ps.softirq != nil {
		out = append(out, ps.softirq)
	} else if fallback != nil {
		out = append(out, fallback)
	}
	if len(ps.loaded) > 0 {
		out = append(out, &loader.StatsSampler{Probes: ps.loaded})
	}
	return out
}

// Close detaches every probe. It is idempotent.
func (ps *probes) Close() error {
	if ps == nil {
		return nil
	}
	var errs []error
	for _, l := range ps.loaded {
		errs = append(errs, l.Close())
	}
	ps.loaded = nil
	if ps.stats != nil {
		errs = append(errs, ps.stats.Close())
		ps.stats = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close probes: %w", err)
	}
	return nil
}
