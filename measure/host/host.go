// Package host records the host side of a run in one network namespace:
// the counted interfaces (netlink rows under the counting rule of
// measure/ifaces, following renames and new members), the BPF probes of
// measure/probeset over them, the drivers' statistics (ethtool -S) and
// /proc (measure.ProcSampler). `netprof watch` is this alone; blob runs add
// their transfer's rows to it.
package host

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/internal/nicstats"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/ifaces"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
)

// ErrUsage is wrapped by Open's errors that are the user's to fix (an
// interface or driver that matches nothing, a bad --link-speed).
var ErrUsage = errors.New("usage")

// Config selects what is recorded about the host.
type Config struct {
	Select     ifaces.Selector  // counted interfaces (default: the default route's)
	LinkSpeeds map[string]int64 // --link-speed overrides, see ifaces.ParseSpeedOverrides
	NoBPF      bool
	// FlowEntries sizes the BPF flow table (0: netdev.DefaultFlowEntries);
	// flows that find it full are counted as lost bytes, not dropped.
	FlowEntries uint32
	// Probes selects probe groups (probeset.Parse; nil: every group).
	Probes []string
	// Netns runs a function inside the namespace to record, with its
	// inode (testbed.Host.Do / NetnsInode); nil records the caller's.
	Netns      func(func() error) error
	NetnsInode uint64
}

// FlowTable returns the flow table size c asks for: netdev's default for
// 0.
func (c Config) FlowTable() uint32 {
	if c.FlowEntries == 0 {
		return netdev.DefaultFlowEntries
	}
	return c.FlowEntries
}

// Host is the host side of one run. Open it, record with Samplers, Close
// it when the run ends.
type Host struct {
	cfg    Config
	ns     *linkstats.NS
	tr     *ifaces.Tracker
	sel    ifaces.Selection
	probes *probeset.Running
	nic    *nicstats.Sampler
}

// Open discovers and selects the interfaces of the namespace and starts
// the probes. It returns an error wrapping ErrUsage when the selection
// matches nothing (listing the interfaces that exist); probes that cannot
// be loaded (not root, no BTF) are reported by Probes, not as an error.
func Open(cfg Config, log *slog.Logger) (*Host, error) {
	if log == nil {
		log = slog.Default()
	}
	ns, err := linkstats.OpenNS(cfg.Netns, cfg.NetnsInode)
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, ns: ns}
	if h.tr, h.sel, err = selectIfaces(ns, cfg, log); err != nil {
		ns.Close()
		return nil, err
	}
	h.probes = startProbes(cfg, h.tr, log)
	h.nic = nicSampler(ns.Netns, cfg.Netns, h.sel, log)
	return h, nil
}

// startProbes starts the selected probes over the namespace's counted
// interfaces and sockets, or none (with the reason) with NoBPF or when BPF
// cannot be used here.
func startProbes(cfg Config, tr *ifaces.Tracker, log *slog.Logger) *probeset.Running {
	if cfg.NoBPF {
		return probeset.Disabled("--no-bpf: probes off")
	}
	if err := loader.Check(log); err != nil {
		return probeset.Disabled(err.Error())
	}
	netns := tr.Netns()
	nss := []tcpstats.Netns{{Inode: netns, Do: cfg.Netns}}
	return probeset.Start(probeset.Options{Selected: cfg.Probes, Stats: true, Scope: probeset.Scope{
		FlowEntries: cfg.FlowEntries,
		Iface:       tr.Scope,
		InRun:       func(n uint64) bool { return n == netns },
		Namespaces:  func() []tcpstats.Netns { return nss },
	}}, log)
}

// Samplers returns the recorder's samplers in their required order:
// netlink rows, BPF counts on them (netdev), the counting rule, then the
// other probes in probeset.Probes order (TCP attaches to the folded flow
// rows) and their program statistics, the drivers' statistics, and
// /proc/stat with softnet_stat (measure.ProcSampler: they fill the cpus
// rows the probes made, and add rows for the other CPUs). A command
// appends its own samplers after them.
func (h *Host) Samplers() []measure.Sampler {
	out := []measure.Sampler{&ifaces.LinkSampler{T: h.tr}}
	if s := h.probes.Sampler("netdev"); s != nil {
		out = append(out, s)
	}
	out = append(out, &ifaces.FoldSampler{T: h.tr})
	out = append(out, h.probes.Samplers("netdev")...)
	if h.nic != nil {
		out = append(out, h.nic)
	}
	return append(out, &measure.ProcSampler{})
}

// Probes says which BPF programs are attached, and why the others are not.
func (h *Host) Probes() []trace.Probe { return h.probes.Status }

// HasProbe reports whether the probe of group runs.
func (h *Host) HasProbe(group string) bool { return h.probes.Has(group) }

// Maps describes the running probes' BPF maps for the manifest.
func (h *Host) Maps() []trace.BPFMap { return h.probes.Maps }

// Netns is the recorded namespace's inode.
func (h *Host) Netns() uint64 { return h.ns.Netns }

// Selection is the interface selection made at Open.
func (h *Host) Selection() ifaces.Selection { return h.sel }

// Tracker follows the selected interfaces through the run.
func (h *Host) Tracker() *ifaces.Tracker { return h.tr }

// Notes are the tracker's notes (renames, removals) so far.
func (h *Host) Notes() []string { return h.tr.Notes() }

// Interfaces describes the selected interfaces for the manifest, each with
// whether it is counted or mirrored by another, with their queue maps.
func (h *Host) Interfaces() []trace.Interface {
	var out []trace.Interface
	for _, g := range h.sel.Groups {
		for _, l := range g.Members {
			role := "counted (" + string(g.Shape) + ")"
			if !g.Counts(l.Index) {
				role = "not counted: mirrored by " + g.Counted[0].Name
			}
			out = append(out, measure.Interface(l, role, h.cfg.Netns))
		}
	}
	return out
}

// Close detaches the probes and closes the namespace handles; idempotent.
func (h *Host) Close() error {
	if h == nil || h.ns == nil {
		return nil
	}
	err := h.probes.Close()
	if h.nic != nil {
		h.nic.Close()
	}
	h.ns.Close()
	h.ns = nil
	return err
}

// selectIfaces discovers, plans and selects, then builds the tracker.
func selectIfaces(ns *linkstats.NS, cfg Config, log *slog.Logger) (*ifaces.Tracker, ifaces.Selection, error) {
	links, err := linkstats.Discover(ns)
	if err != nil {
		return nil, ifaces.Selection{}, err
	}
	named := map[string]int64{}
	for k, v := range cfg.LinkSpeeds {
		if k != "" {
			named[k] = v
		}
	}
	if err := ifaces.ApplySpeeds(links, named); err != nil {
		return nil, ifaces.Selection{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	sel, err := ifaces.Select(ns.Handle, links, ifaces.Plan(links), cfg.Select)
	if err != nil {
		return nil, sel, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if v, ok := cfg.LinkSpeeds[""]; ok {
		for gi := range sel.Groups {
			for ci := range sel.Groups[gi].Counted {
				mbps := v
				sel.Groups[gi].Counted[ci].SpeedMbps, sel.Groups[gi].Counted[ci].SpeedNote = &mbps, "--link-speed"
			}
		}
	}
	return ifaces.NewTracker(ns, sel, cfg.LinkSpeeds, log), sel, nil
}

// nicSampler returns the sampler of the counted interfaces' driver
// statistics (the nics table, ethtool -S), nil (logged) when no ethtool
// socket could be opened. It reads by name: an interface removed or
// renamed during the run has no more rows (logged once).
func nicSampler(netns uint64, do func(func() error) error, sel ifaces.Selection, log *slog.Logger) *nicstats.Sampler {
	var links []nicstats.Link
	for _, c := range sel.Counted() {
		links = append(links, nicstats.Link{Netns: netns, Do: do, Ifname: c.Name})
	}
	if len(links) == 0 {
		return nil
	}
	s, err := nicstats.New(links)
	if err != nil {
		log.Warn("no driver statistics (nics table)", "err", err)
		return nil
	}
	return s
}
