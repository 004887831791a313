package ifaces

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/internal/units"
)

// Auto is the interface name that selects the interface(s) of the default
// route (IPv4, else IPv6).
const Auto = "auto"

// ErrNoMatch is wrapped by Select's errors when a name or driver matches no
// interface (a NotFoundError), or auto finds no default route.
var ErrNoMatch = errors.New("no such interface")

// NotFoundError says what was asked for and lists what exists.
type NotFoundError struct {
	What      string // e.g. `interface "eth9"`, `driver "mana"`
	Available []linkstats.Link
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s not found; interfaces here: ", e.What)
	for i, l := range e.Available {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", l.Name, l.Driver)
	}
	if len(e.Available) == 0 {
		b.WriteString("none")
	}
	return b.String()
}

// Unwrap lets errors.Is match ErrNoMatch.
func (e *NotFoundError) Unwrap() error { return ErrNoMatch }

// Selector says which interfaces to count: by name (Auto for the default
// route's) and/or by kernel driver. Both empty means Auto.
type Selector struct {
	Names   []string
	Drivers []string
}

// Selection is what Select chose.
type Selection struct {
	// Groups are the groups holding a selected interface, each once.
	Groups []Group
	// Why says, per selected name or driver, what it matched.
	Why []string
}

// Counted returns the counted interfaces of every selected group.
func (s Selection) Counted() []Count {
	var out []Count
	for _, g := range s.Groups {
		out = append(out, g.Counted...)
	}
	return out
}

// Select resolves sel against links (one namespace's) and their plan. A
// name or driver that matches nothing is an error (a *NotFoundError listing
// the interfaces that exist, with drivers): a selection never silently
// yields nothing. Selecting two members of one group selects the group
// once. h is used for Auto only (the namespace's routing table).
func Select(h *netlink.Handle, links []linkstats.Link, groups []Group, sel Selector) (Selection, error) {
	names := sel.Names
	if len(names) == 0 && len(sel.Drivers) == 0 {
		names = []string{Auto}
	}
	var out Selection
	add := func(idx int) {
		for _, g := range out.Groups {
			if g.Has(idx) {
				return
			}
		}
		for _, g := range groups {
			if g.Has(idx) {
				out.Groups = append(out.Groups, g)
				return
			}
		}
	}
	for _, n := range names {
		if n == Auto {
			idx, err := defaultRouteLinks(h)
			if err != nil {
				return out, err
			}
			for _, i := range idx {
				l := linkstats.Index(links)[i]
				add(i)
				out.Why = append(out.Why, fmt.Sprintf("auto: default route via %s (%s)", l.Name, l.Driver))
			}
			continue
		}
		l, ok := byName(links, n)
		if !ok {
			return out, &NotFoundError{What: fmt.Sprintf("interface %q", n), Available: links}
		}
		add(l.Index)
		out.Why = append(out.Why, fmt.Sprintf("%s: by name (%s)", n, l.Driver))
	}
	for _, d := range sel.Drivers {
		found := false
		for _, l := range links {
			if strings.EqualFold(l.Driver, d) {
				found = true
				add(l.Index)
				out.Why = append(out.Why, fmt.Sprintf("driver %s: %s", d, l.Name))
			}
		}
		if !found {
			return out, &NotFoundError{What: fmt.Sprintf("driver %q", d), Available: links}
		}
	}
	return out, nil
}

func byName(links []linkstats.Link, name string) (linkstats.Link, bool) {
	for _, l := range links {
		if l.Name == name {
			return l, true
		}
	}
	if i, err := strconv.Atoi(name); err == nil {
		if l, ok := linkstats.Index(links)[i]; ok {
			return l, true
		}
	}
	return linkstats.Link{}, false
}

// defaultRouteLinks returns the output interfaces of the main table's
// default route (IPv4 first, else IPv6; every nexthop of a multipath route).
func defaultRouteLinks(h *netlink.Handle) ([]int, error) {
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := h.RouteListFiltered(fam, &netlink.Route{Table: 254}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return nil, fmt.Errorf("list routes: %w", err)
		}
		var out []int
		for _, r := range routes {
			if r.Dst != nil && !isDefault(r.Dst) {
				continue
			}
			if r.LinkIndex > 0 {
				out = append(out, r.LinkIndex)
			}
			for _, nh := range r.MultiPath {
				out = append(out, nh.LinkIndex)
			}
		}
		if len(out) > 0 {
			sort.Ints(out)
			return out, nil
		}
	}
	return nil, fmt.Errorf("--iface auto: no default route in this namespace (name the interface): %w", ErrNoMatch)
}

func isDefault(n *net.IPNet) bool {
	ones, _ := n.Mask.Size()
	return ones == 0
}

// ParseSpeed parses a link speed such as "100G", "25Gbit", "200Gbit/s" or
// "40000Mbit" (internal/units.ParseLinkRate: the unit is required, so
// ethtool's bare "10000" is refused with a suggestion) into decimal Mbit/s.
func ParseSpeed(s string) (int64, error) {
	r, err := units.ParseLinkRate(s)
	if err != nil {
		return 0, err
	}
	if r < units.Mbps {
		return 0, fmt.Errorf("link speed %q: below 1 Mbit/s", s)
	}
	return int64((r + units.Mbps/2) / units.Mbps), nil
}

// ParseSpeedOverrides parses --link-speed values: "NAME=RATE" applies to
// one interface, a bare "RATE" to every counted interface (key "").
func ParseSpeedOverrides(vals []string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, v := range vals {
		name, rate, ok := strings.Cut(v, "=")
		if !ok {
			name, rate = "", v
		}
		mbps, err := ParseSpeed(rate)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSpace(name)] = mbps
	}
	return out, nil
}

// ApplySpeeds sets the rated speed of links named in overrides (key "" for
// all of them) and marks the source "--link-speed". It returns an error for
// a name that matches no link.
func ApplySpeeds(links []linkstats.Link, overrides map[string]int64) error {
	for name, v := range overrides {
		found := name == ""
		for i := range links {
			if name == "" || links[i].Name == name {
				mbps := v
				links[i].SpeedMbps, links[i].SpeedNote = &mbps, "--link-speed"
				found = true
			}
		}
		if !found {
			return &NotFoundError{What: fmt.Sprintf("--link-speed interface %q", name), Available: links}
		}
	}
	return nil
}

// Utilisation returns rate / rated speed as a percentage, with ok false and
// a reason instead when it cannot be said: the rated speed is unknown, or
// the measured rate exceeds it (then the rated figure is evidently not this
// link's limit, and no utilisation above 100% is ever printed).
func Utilisation(bitsPerSecond float64, l linkstats.Link) (pct float64, ok bool, reason string) {
	if l.SpeedMbps == nil {
		return 0, false, "rated speed unknown"
	}
	rated := float64(*l.SpeedMbps) * 1e6
	if bitsPerSecond > rated {
		return 0, false, fmt.Sprintf("measured %.2f Gbit/s exceeds the rated %.2f Gbit/s (%s): not a limit here, set --link-speed",
			bitsPerSecond/1e9, rated/1e9, l.SpeedNote)
	}
	return 100 * bitsPerSecond / rated, true, ""
}
