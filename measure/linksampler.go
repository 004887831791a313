package measure

import (
	"github.com/vishvananda/netlink"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/trace"
)

// LinkSampler adds one ifaces row per interface of a fixed set, each
// interval, from netlink stats64 (the delta over the interval): the
// interfaces a run chose at its start, in any namespaces (bench's test
// bed ends, or this host's and a peer path's). Handles[i] is a netlink
// handle in Links[i]'s namespace. (measure/ifaces.LinkSampler follows a
// namespace's interfaces as they come, go and get renamed instead.)
type LinkSampler struct {
	Links   []linkstats.Link
	Handles []*netlink.Handle
	prev    []linkstats.Stats
}

// Name implements Sampler.
func (s *LinkSampler) Name() string { return "netlink" }

// Baseline implements Sampler.
func (s *LinkSampler) Baseline() error {
	s.prev = make([]linkstats.Stats, len(s.Links))
	for i, l := range s.Links {
		st, err := linkstats.Read(s.Handles[i], l.Index)
		if err != nil {
			return err
		}
		s.prev[i] = st
	}
	return nil
}

// Sample implements Sampler; an interface that cannot be read is left
// out of the interval and the first such error returned.
func (s *LinkSampler) Sample(iv *trace.Interval, _ int64) error {
	var firstErr error
	for i, l := range s.Links {
		st, err := linkstats.Read(s.Handles[i], l.Index)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		d, _ := st.Sub(s.prev[i])
		s.prev[i] = st
		iv.Ifaces = append(iv.Ifaces, d.Row(l.Netns, l.Name, l.Index, l.Driver))
	}
	return firstErr
}
