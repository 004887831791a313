package ifaces

import (
	"fmt"
	"log/slog"
	"sort"

	"github.com/netprof/netprof/internal/linkstats"
)

// Tracker follows selected groups through a run by ifindex: an interface
// renamed mid-run keeps being counted under its new name, one that
// disappears is noted (its rows stop; it never reads as a silent zero), and
// a device that joins a selected group (a VF hot-added back) is taken in.
// It is not safe for concurrent use; a measure.Recorder calls it from one
// goroutine.
type Tracker struct {
	ns        *linkstats.NS
	overrides map[string]int64
	log       *slog.Logger
	selected  map[int]bool   // every member of a selected group, ever
	names     map[int]string // last name seen per selected ifindex
	gone      map[int]bool   // selected ifindexes noted as gone
	links     []linkstats.Link
	groups    []Group
	notes     []string
}

// NewTracker returns a tracker of sel's groups in namespace ns. overrides
// are --link-speed values (see ParseSpeedOverrides), re-applied at every
// refresh; log may be nil.
func NewTracker(ns *linkstats.NS, sel Selection, overrides map[string]int64, log *slog.Logger) *Tracker {
	if log == nil {
		log = slog.Default()
	}
	t := &Tracker{ns: ns, overrides: overrides, log: log, selected: map[int]bool{}, names: map[int]string{}, gone: map[int]bool{}}
	for _, g := range sel.Groups {
		for _, m := range g.Members {
			t.selected[m.Index] = true
			t.names[m.Index] = m.Name
		}
	}
	t.groups = sel.Groups
	return t
}

// Refresh re-discovers the namespace's interfaces, re-plans, and returns
// what changed since the last call (renames, removals, additions) as notes,
// which it also logs. It returns an error when discovery fails.
func (t *Tracker) Refresh() ([]string, error) {
	links, err := linkstats.Discover(t.ns)
	if err != nil {
		return nil, err
	}
	if len(t.overrides) > 0 {
		over := map[string]int64{}
		for k, v := range t.overrides {
			if k == "" {
				continue
			}
			over[k] = v
		}
		_ = ApplySpeeds(links, over) // a renamed override target keeps its last speed below
		if v, ok := t.overrides[""]; ok {
			for _, g := range t.groups {
				for _, c := range g.Counted {
					setSpeed(links, c.Index, v)
				}
			}
		}
	}
	present := linkstats.Index(links)
	var notes []string
	for idx, old := range t.names {
		l, ok := present[idx]
		switch {
		case !ok && !t.gone[idx]:
			t.gone[idx] = true
			what := "it was a mirror, not counted"
			if t.counted(idx) != nil {
				what = "its counting stops (no silent zero: no more rows)"
			}
			notes = append(notes, fmt.Sprintf("%s (ifindex %d) disappeared: %s", old, idx, what))
		case ok && l.Name != old:
			notes = append(notes, fmt.Sprintf("%s (ifindex %d) renamed to %s: still counted by index", old, idx, l.Name))
			t.names[idx] = l.Name
		case ok && t.gone[idx]:
			delete(t.gone, idx)
			notes = append(notes, fmt.Sprintf("%s (ifindex %d) is back", l.Name, idx))
		}
	}
	var groups []Group
	for _, g := range Plan(links) {
		sel := false
		for _, m := range g.Members {
			sel = sel || t.selected[m.Index]
		}
		if !sel {
			continue
		}
		for _, m := range g.Members {
			if !t.selected[m.Index] {
				t.selected[m.Index] = true
				t.names[m.Index] = m.Name
				notes = append(notes, fmt.Sprintf("%s (ifindex %d, %s) joined the group of %s", m.Name, m.Index, m.Driver, g.Counted[0].Name))
			}
		}
		groups = append(groups, g)
	}
	sort.Strings(notes)
	for _, n := range notes {
		t.log.Warn("interface change", "note", n)
	}
	t.links, t.groups = links, groups
	t.notes = append(t.notes, notes...)
	return notes, nil
}

func setSpeed(links []linkstats.Link, idx int, v int64) {
	for i := range links {
		if links[i].Index == idx {
			mbps := v
			links[i].SpeedMbps, links[i].SpeedNote = &mbps, "--link-speed"
		}
	}
}

// Groups returns the selected groups as of the last Refresh (or as
// selected, before the first).
func (t *Tracker) Groups() []Group { return t.groups }

// Links returns every interface of the namespace as of the last Refresh.
func (t *Tracker) Links() []linkstats.Link { return t.links }

// Notes returns every note made so far.
func (t *Tracker) Notes() []string { return t.notes }

// Netns returns the namespace inode.
func (t *Tracker) Netns() uint64 { return t.ns.Netns }

// Member returns the current member with ifindex idx of a selected group.
func (t *Tracker) Member(idx int) (linkstats.Link, bool) {
	for _, g := range t.groups {
		for _, m := range g.Members {
			if m.Index == idx {
				return m, true
			}
		}
	}
	return linkstats.Link{}, false
}

// Scope is a netdev.Scope over every member of the selected groups in
// this namespace (flows on a VF or a bridge port are kept for folding).
func (t *Tracker) Scope(netns uint64, ifindex uint32) (string, bool) {
	if netns != t.ns.Netns {
		return "", false
	}
	m, ok := t.Member(int(ifindex))
	return m.Name, ok
}
