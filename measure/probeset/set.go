// Package probeset loads the BPF probes a command asks for and keeps what
// closing them needs: the `--probes` group selection, kernel BPF run-time
// statistics, the loaded probes, their event readers and the status rows
// the manifest lists. bench and watch build their samplers on it.
package probeset

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/trace"
)

// Set is the probes of one run. The zero value is not usable; use New.
type Set struct {
	// Loaded are the probes with at least one attached program.
	Loaded []*loader.Loaded
	// Status has a row per program (attached or why not), and one per
	// probe that could not be loaded at all.
	Status  []trace.Probe
	skip    map[string]string
	readers []io.Closer
	stats   io.Closer
	// loadedGroups are the groups LoadAll gave a sampler, in order.
	loadedGroups []string
	log          *slog.Logger
}

// New starts a set attaching the groups selected (nil: all of Groups).
// With stats the kernel's BPF run-time statistics are turned on for the
// set's lifetime (kernel.bpf_stats_enabled: run count and time per
// program; two clock reads per program run); when they cannot be, that is
// logged and the run goes on without them.
func New(selected []string, stats bool, log *slog.Logger) *Set {
	if log == nil {
		log = slog.Default()
	}
	s := &Set{skip: Skip(selected), log: log}
	if stats {
		if c, err := loader.EnableStats(); err != nil {
			log.Warn("bpf run-time stats unavailable; probes table will show 0 run count and time", "err", err)
		} else {
			s.stats = c
		}
	}
	return s
}

// Load loads and attaches spec's programs that the selection keeps (specErr
// is the error of building spec, if any). It returns nil, with the reason
// in Status, when the selection leaves every program out, when the probe
// cannot be loaded, or when none of its programs attached (then it is
// closed again); a probe with some programs attached is returned and its
// failed programs are in Status with their reasons.
func (s *Set) Load(name string, spec loader.Spec, specErr error) *loader.Loaded {
	spec.Skip = s.skip
	if none, progs := allSkipped(spec); specErr == nil && none {
		for _, p := range progs {
			s.Status = append(s.Status, trace.Probe{Name: p.Name, Hook: p.Hook, Reason: NotSelected})
		}
		return nil
	}
	err := specErr
	if err == nil {
		var l *loader.Loaded
		if l, err = loader.Load(spec, s.log); err == nil {
			s.Status = append(s.Status, l.Status...)
			if l.Attached() > 0 {
				s.Loaded = append(s.Loaded, l)
				return l
			}
			if err := l.Close(); err != nil {
				s.log.Warn("probe not closed", "probe", name, "err", err)
			}
			return nil
		}
	}
	s.log.Warn("probe not loaded", "probe", name, "err", err)
	s.Status = append(s.Status, trace.Probe{Name: name, Reason: err.Error()})
	return nil
}

// Maps describes the maps of every loaded probe (loader.Loaded.MapInfos),
// probe by probe in load order: what the manifest's maps list holds. A
// probe whose maps cannot be described is left out and its error joined
// into the one returned; the others are still returned.
func (s *Set) Maps() ([]trace.BPFMap, error) {
	if s == nil {
		return nil, nil
	}
	var out []trace.BPFMap
	var errs []error
	for _, l := range s.Loaded {
		m, err := l.MapInfos()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m...)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("describe probe maps: %w", err)
	}
	return out, nil
}

// AddReader registers an event reader (e.g. sockstate's ring buffer) that
// Close stops before detaching the probes.
func (s *Set) AddReader(r io.Closer) { s.readers = append(s.readers, r) }

// Stats returns the sampler of every loaded probe's program statistics.
func (s *Set) Stats() measure.Sampler { return &statsSampler{probes: s.Loaded} }

// Close stops the event readers, detaches every probe and turns BPF
// statistics off again. It is idempotent.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for _, r := range s.readers {
		errs = append(errs, r.Close())
	}
	for _, l := range s.Loaded {
		errs = append(errs, l.Close())
	}
	s.readers, s.Loaded = nil, nil
	if s.stats != nil {
		errs = append(errs, s.stats.Close())
		s.stats = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close probes: %w", err)
	}
	return nil
}
