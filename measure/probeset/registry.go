package probeset

import (
	"fmt"

	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/probes/drops"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/probes/sockstate"
	"github.com/netprof/netprof/probes/softirq"
	"github.com/netprof/netprof/probes/tcpstats"
)

// Scope is what a run's probes need to know about the run.
type Scope struct {
	// FlowEntries sizes netdev's flow table (0: its default).
	FlowEntries uint32
	// Iface names an interface of the run (netdev keeps flows and counts
	// of those only); nil keeps all.
	Iface netdev.Scope
	// InRun says whether a network namespace belongs to the run (tcp and
	// sockstate keep sockets there only).
	InRun func(netns uint64) bool
	// Namespaces are the namespaces the socket iterator reads.
	Namespaces func() []tcpstats.Netns
}

// Probe is one probe, described once: its --probes group, its loader spec
// and the sampler over its loaded programs. Adding a probe is its package
// plus one entry in Probes (and its group in Groups).
type Probe struct {
	Group   string
	Spec    func(Scope) (loader.Spec, error)
	Sampler func(l *loader.Loaded, sc Scope, set *Set) (measure.Sampler, error)
}

// Probes lists every probe in the order their samplers run: netdev's
// counts first (the interface rows' BPF columns), tcp before the socket
// iterator (which then leaves retransmits to it), program statistics last
// (Set.Stats).
var Probes = []Probe{
	{Group: "netdev",
		Spec: func(sc Scope) (loader.Spec, error) { return netdev.Spec(netdev.Options{FlowEntries: sc.FlowEntries}) },
		Sampler: func(l *loader.Loaded, sc Scope, set *Set) (measure.Sampler, error) {
			r, err := netdev.NewReader(l)
			if err != nil {
				return nil, err
			}
			if err := r.CacheErr(); err != nil {
				set.log.Info("netdev per-CPU cache off; counting in the hash maps directly", "reason", err)
			}
			return netdev.NewSampler(r, sc.Iface), nil
		}},
	{Group: "tcp",
		Spec: func(Scope) (loader.Spec, error) { return tcpstats.Spec(tcpstats.Options{}) },
		Sampler: func(l *loader.Loaded, sc Scope, _ *Set) (measure.Sampler, error) {
			r, err := tcpstats.NewReader(l)
			if err != nil {
				return nil, err
			}
			return tcpstats.NewSampler(r, sc.InRun), nil
		}},
	{Group: "tcpsock",
		Spec: func(Scope) (loader.Spec, error) { return tcpstats.IterSpec(tcpstats.IterOptions{}) },
		Sampler: func(l *loader.Loaded, sc Scope, set *Set) (measure.Sampler, error) {
			r, err := tcpstats.NewIterReader(l)
			if err != nil {
				return nil, err
			}
			it := tcpstats.NewIterSampler(r, sc.Namespaces)
			if set.Has("tcp") {
				it.LeaveRetransmits()
			}
			return it, nil
		}},
	{Group: "softirq",
		Spec: func(Scope) (loader.Spec, error) { return softirq.Spec() },
		Sampler: func(l *loader.Loaded, _ Scope, _ *Set) (measure.Sampler, error) {
			r, err := softirq.NewReader(l)
			if err != nil {
				return nil, err
			}
			return softirq.NewSampler(r), nil
		}},
	{Group: "sockstate",
		Spec: func(Scope) (loader.Spec, error) { return sockstate.Spec(sockstate.Options{}) },
		Sampler: func(l *loader.Loaded, sc Scope, set *Set) (measure.Sampler, error) {
			r, err := sockstate.NewReader(l)
			if err != nil {
				return nil, err
			}
			set.AddReader(r)
			return sockstate.NewSampler(r, sc.InRun), nil
		}},
	{Group: "drops",
		Spec: func(Scope) (loader.Spec, error) { return drops.Spec() },
		Sampler: func(l *loader.Loaded, _ Scope, _ *Set) (measure.Sampler, error) {
			r, err := drops.NewReader(l)
			if err != nil {
				return nil, err
			}
			return drops.NewSampler(r), nil
		}},
}

// LoadAll loads every probe of Probes (those the set's selection leaves
// out are recorded as not selected) and returns their samplers by group,
// in Probes order. A probe whose programs loaded but whose
// reader cannot start is recorded in Status as not attached, with the
// reason, and the run goes on without it, as for a probe that does not
// load.
func (s *Set) LoadAll(sc Scope) (groups []string, samplers map[string]measure.Sampler) {
	samplers = map[string]measure.Sampler{}
	for _, p := range Probes {
		spec, err := p.Spec(sc)
		l := s.Load(p.Group, spec, err)
		if l == nil {
			continue
		}
		sm, err := p.Sampler(l, sc, s)
		if err != nil {
			s.fail(l, fmt.Errorf("%s reader: %w", p.Group, err))
			continue
		}
		s.loadedGroups = append(s.loadedGroups, p.Group)
		groups = append(groups, p.Group)
		samplers[p.Group] = sm
	}
	return groups, samplers
}

// Has reports whether the probe of group has a sampler (LoadAll so far).
func (s *Set) Has(group string) bool {
	for _, g := range s.loadedGroups {
		if g == group {
			return true
		}
	}
	return false
}

// fail detaches a loaded probe whose reader could not start and marks its
// programs not attached with err.
func (s *Set) fail(l *loader.Loaded, err error) {
	s.log.Warn("probe not used", "probe", l.Probe, "err", err)
	for i := range s.Status {
		for _, st := range l.Status {
			if s.Status[i].Name == st.Name && s.Status[i].Attached {
				s.Status[i].Attached, s.Status[i].Reason = false, err.Error()
			}
		}
	}
	for i, x := range s.Loaded {
		if x == l {
			s.Loaded = append(s.Loaded[:i], s.Loaded[i+1:]...)
			break
		}
	}
	if cerr := l.Close(); cerr != nil {
		s.log.Warn("probe not closed", "probe", l.Probe, "err", cerr)
	}
}
