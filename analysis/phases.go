package analysis

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/netprof/netprof/trace"
)

// Phases describes a run whose traffic rows mark warm-up and cool-down
// intervals (traffic.phase, `netprof bench --warmup/--cooldown`). Those
// intervals stay in the trace but are left out of every figure: rows of
// every table whose interval midpoint lies outside the measured window are
// skipped, and the run's bounds (whole-run rate) are the measured window.
type Phases struct {
	// MeasuredStart and MeasuredEnd bound the intervals marked "measure"
	// (start of the first, end of the last); both zero when none was (the
	// run ended during its warm-up).
	MeasuredStart, MeasuredEnd time.Time
	// WarmupIntervals and CooldownIntervals count the distinct intervals
	// (by `time`) marked "warmup" and "cooldown".
	WarmupIntervals, CooldownIntervals int
}

// keep reports whether the interval ending at end (of intervalNs) belongs
// to the measured window.
func (p *Phases) keep(end time.Time, intervalNs int64) bool {
	return !p.MeasuredStart.IsZero() && inWindow(end, intervalNs, p.MeasuredStart, p.MeasuredEnd)
}

// scanPhases reads the traffic table's phase column. It returns nil when no
// row is marked warm-up or cool-down (nothing to exclude).
func scanPhases(src source[trace.TrafficRow]) (*Phases, error) {
	if src == nil {
		return nil, nil
	}
	var p Phases
	var measured bounds
	warm, cool := map[int64]bool{}, map[int64]bool{}
	err := src(func(rows []trace.TrafficRow) error {
		for i := range rows {
			x := &rows[i]
			if x.Phase == nil {
				continue
			}
			switch *x.Phase {
			case trace.PhaseMeasure:
				measured.add(x.Time, x.IntervalNs)
			case trace.PhaseWarmup:
				warm[x.Time.UnixNano()] = true
			case trace.PhaseCooldown:
				cool[x.Time.UnixNano()] = true
			}
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("analyze %s (phase): %w", trace.TrafficFile, err)
	}
	if len(warm)+len(cool) == 0 {
		return nil, nil
	}
	p.MeasuredStart, p.MeasuredEnd = measured.start, measured.end
	p.WarmupIntervals, p.CooldownIntervals = len(warm), len(cool)
	return &p, nil
}

// filter returns src with every table limited to the measured window.
func (p *Phases) filter(src sources) sources {
	src.ifaces = keepRows(src.ifaces, func(x *trace.IfaceRow) bool { return p.keep(x.Time, x.IntervalNs) })
	src.cpus = keepRows(src.cpus, func(x *trace.CPURow) bool { return p.keep(x.Time, x.IntervalNs) })
	src.flows = keepFlows(src.flows, p.keep)
	src.traffic = keepRows(src.traffic, func(x *trace.TrafficRow) bool { return p.keep(x.Time, x.IntervalNs) })
	src.blob = keepRows(src.blob, func(x *BlobRow) bool { return p.keep(x.Time, x.IntervalNs) })
	src.probes = keepRows(src.probes, func(x *trace.ProbeRow) bool { return p.keep(x.Time, x.IntervalNs) })
	src.drops = keepRows(src.drops, func(x *trace.DropRow) bool { return p.keep(x.Time, x.IntervalNs) })
	src.nics = keepRows(src.nics, func(x *trace.NICStatRow) bool { return p.keep(x.Time, x.IntervalNs) })
	return src
}

// keepRows feeds only the rows keep accepts (nil stays nil).
func keepRows[T any](src source[T], keep func(*T) bool) source[T] {
	if src == nil {
		return nil
	}
	return func(fn func([]T) error) error {
		return src(func(rows []T) error {
			kept := rows[:0:0]
			for i := range rows {
				if keep(&rows[i]) {
					kept = append(kept, rows[i])
				}
			}
			if len(kept) == 0 {
				return nil
			}
			return fn(kept)
		})
	}
}

// notePhases says what was excluded.
func (b *builder) notePhases() {
	p := b.r.Phases
	if p == nil {
		return
	}
	if p.MeasuredStart.IsZero() {
		b.r.note(fmt.Sprintf("no interval marked measure (traffic.phase): the run ended during its warm-up (%d interval(s)); no figures",
			p.WarmupIntervals))
		return
	}
	b.r.note(fmt.Sprintf("warm-up (%d interval(s)) and cool-down (%d interval(s)) kept in the trace (traffic.phase) but excluded from every figure; the run is the measured window %s to %s (%.3f s)",
		p.WarmupIntervals, p.CooldownIntervals, fmtTime(p.MeasuredStart), fmtTime(p.MeasuredEnd), p.MeasuredEnd.Sub(p.MeasuredStart).Seconds()))
}
