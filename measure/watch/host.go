package watch

import (
	"log/slog"

	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/probes/ifaces"
	"github.com/netprof/netprof/probes/linkstats"
	"github.com/netprof/netprof/trace"
)

// HostConfig selects what a command records about the host it runs on.
type HostConfig struct {
	Select     ifaces.Selector  // counted interfaces (default: the default route's)
	LinkSpeeds map[string]int64 // --link-speed overrides, see ifaces.ParseSpeedOverrides
	NoBPF      bool
	// FlowEntries sizes the BPF flow table (0: netdev.DefaultFlowEntries).
	FlowEntries uint32
	// Probes selects probe groups (probeset.Parse; nil: every group).
	Probes []string
}

// Host records the host side of a run for commands other than watch (blob
// runs): netlink rows of the counted interfaces under the counting rule of
// probes/ifaces, the BPF probes when they load (netdev, tcp, softirq, with
// /proc/stat softirq time otherwise) and their program statistics — the
// same tables `netprof watch --out` writes. Close it when the run ends.
type Host struct {
	ns  *linkstats.NS
	tr  *ifaces.Tracker
	sel ifaces.Selection
	ps  *probes
	cfg Config
}

// OpenHost discovers and selects the interfaces in the caller's network
// namespace and loads the probes. It returns an error wrapping ErrUsage when
// the selection matches nothing; probes that cannot be loaded (not root, no
// BTF) are reported by Probes, not as an error.
func OpenHost(hc HostConfig, log *slog.Logger) (*Host, error) {
	if log == nil {
		log = slog.Default()
	}
	ns, err := linkstats.OpenNS(nil, 0)
	if err != nil {
		return nil, err
	}
	cfg := Config{Select: hc.Select, LinkSpeeds: hc.LinkSpeeds, NoBPF: hc.NoBPF, FlowEntries: hc.FlowEntries, Probes: hc.Probes}
	tr, sel, err := selectIfaces(ns, cfg, log)
	if err != nil {
		ns.Close()
		return nil, err
	}
	ps := &probes{status: probeset.Off("--no-bpf: probes off")}
	if !hc.NoBPF {
		ps = loadProbes(tr, nil, hc.FlowEntries, hc.Probes, log)
	}
	return &Host{ns: ns, tr: tr, sel: sel, ps: ps, cfg: cfg}, nil
}

// Samplers returns the recorder samplers, in their required order; append
// the command's own samplers after them.
func (h *Host) Samplers() []measure.Sampler {
	return h.ps.samplers(h.tr)
}

// Probes says which BPF programs are attached, and why the others are not.
func (h *Host) Probes() []trace.Probe { return h.ps.status }

// Maps describes the loaded probes' BPF maps for the manifest (none when
// no probe loaded).
func (h *Host) Maps() []trace.BPFMap { return h.ps.maps }

// Interfaces describes the selected interfaces for the manifest, each with
// whether it is counted or mirrored by another.
func (h *Host) Interfaces() []trace.Interface {
	return manifest(h.cfg, h.ns.Netns, h.sel, nil).Interfaces
}

// Notes are the tracker's notes (renames, removals) so far.
func (h *Host) Notes() []string { return h.tr.Notes() }

// Close detaches the probes and closes the namespace handles; idempotent.
func (h *Host) Close() error {
	if h == nil || h.ns == nil {
		return nil
	}
	err := h.ps.Close()
	h.ns.Close()
	h.ns = nil
	return err
}
