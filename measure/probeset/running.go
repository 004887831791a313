package probeset

import (
	"log/slog"

	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/trace"
)

// Options is what a run asks of its probes.
type Options struct {
	// Selected are the probe groups to attach (Parse; nil: every group).
	Selected []string
	// Stats turns the kernel's BPF run-time statistics on for the run
	// (see New).
	Stats bool
	// Scope is what the probes need to know about the run.
	Scope Scope
}

// Running is the probes of one run, loaded and attached, with their
// samplers: what bench, watch and blob record with. Start it, record with
// Samplers, Close it when the run ends.
type Running struct {
	set      *Set
	groups   []string
	samplers map[string]measure.Sampler
	// Status has a row per program (attached, or why not), or Off's one
	// row when no probe was started: the manifest's probes list.
	Status []trace.Probe
	// Maps describes the loaded probes' maps for the manifest.
	Maps []trace.BPFMap
}

// Start loads and attaches every probe of Probes that opt selects. A
// probe that is not selected, cannot be loaded, has no program attached
// or whose reader cannot start is recorded in Status with its reason and
// left out; the run goes on with the others. It never returns nil.
func Start(opt Options, log *slog.Logger) *Running {
	if log == nil {
		log = slog.Default()
	}
	r := &Running{set: New(opt.Selected, opt.Stats, log)}
	r.groups, r.samplers = r.set.LoadAll(opt.Scope)
	r.Status = r.set.Status
	var err error
	if r.Maps, err = r.set.Maps(); err != nil {
		log.Warn("manifest lists only some BPF maps", "err", err)
	}
	return r
}

// Disabled is a run without probes; Status says why (see Off).
func Disabled(reason string) *Running {
	return &Running{Status: Off(reason)}
}

// Has reports whether the probe of group runs (has a sampler).
func (r *Running) Has(group string) bool { return r.samplers[group] != nil }

// Sampler returns the sampler of group's probe, nil when it does not run.
func (r *Running) Sampler(group string) measure.Sampler { return r.samplers[group] }

// Samplers returns the samplers of the running probes in Probes order,
// leaving out the groups in except (a caller that places them itself,
// e.g. netdev's right after the interface rows it adds to), then the
// sampler of the programs' run-time statistics (the probes table) when
// any probe runs.
func (r *Running) Samplers(except ...string) []measure.Sampler {
	var out []measure.Sampler
next:
	for _, g := range r.groups {
		for _, e := range except {
			if g == e {
				continue next
			}
		}
		out = append(out, r.samplers[g])
	}
	if r.set != nil && len(r.set.Loaded) > 0 {
		out = append(out, r.set.Stats())
	}
	return out
}

// Close stops the event readers, detaches every probe and turns BPF
// statistics off again. It is idempotent.
func (r *Running) Close() error {
	if r == nil || r.set == nil {
		return nil
	}
	return r.set.Close()
}
