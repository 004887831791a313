package sockstate

import (
	"errors"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/trace"
)

// Source is where a Sampler gets events and counters: a *Reader, or a fake
// in tests.
type Source interface {
	Drain() ([]Event, Clock, error)
	Stats() (Stats, error)
}

// MapHook is the probes-table hook of the sampler's lost-event row.
const MapHook = "map:sockstate"

// Sampler turns the probe's events into sockets rows: each interval, one
// row per connection that opened in it (event "open") and one per
// connection that closed in it (event "close"), attributed by the kernel
// time of the event; plus a probes row (Program "np_ss_events", Hook
// MapHook) whose map_update_failures is the events lost in the interval
// (Stats.Lost delta). Events read before Baseline (connections opened
// between loading the probe and starting the recording) go into the first
// interval: their open_time says when they happened.
//
// Rows get Time (the moment the interval's events were drained, the
// interval end to within the other samplers' run time) and IntervalNs
// here, as measure.Stamp does not know the sockets table.
type Sampler struct {
	src   Source
	scope func(netns uint64) bool
	prev  Stats
}

// NewSampler returns a sampler reading src; scope filters connections by
// network namespace (nil keeps all).
func NewSampler(src Source, scope func(netns uint64) bool) *Sampler {
	return &Sampler{src: src, scope: scope}
}

// Name implements measure.Sampler.
func (s *Sampler) Name() string { return "sockstate" }

// Baseline implements measure.Sampler: it takes the starting counters.
func (s *Sampler) Baseline() error {
	st, err := s.src.Stats()
	s.prev = st
	return err
}

// Sample implements measure.Sampler.
func (s *Sampler) Sample(iv *trace.Interval, intervalNs int64) error {
	evs, clk, derr := s.src.Drain()
	end := clk.Wall.UTC()
	for _, e := range evs {
		if s.scope != nil && !s.scope(e.Netns) {
			continue
		}
		row := Row(e, clk)
		row.Time, row.IntervalNs = end, intervalNs
		iv.Sockets = append(iv.Sockets, row)
	}
	st, err := s.src.Stats()
	if err == nil {
		d := st.Sub(s.prev)
		s.prev = st
		iv.Probes = append(iv.Probes, trace.ProbeRow{
			Program: bpf.SockstateMapNpSsEvents, Hook: MapHook,
			Time: end, IntervalNs: intervalNs, MapUpdateFailures: d.Lost(),
		})
	}
	return errors.Join(derr, err)
}

// Row converts an event to a sockets row (without Time and IntervalNs),
// with clk converting kernel times to wall-clock times.
func Row(e Event, clk Clock) trace.SocketRow {
	row := trace.SocketRow{
		Netns: e.Netns, Family: e.Family,
		SrcAddr: e.Local.Addr().String(), SrcPort: e.Local.Port(),
		DstAddr: e.Remote.Addr().String(), DstPort: e.Remote.Port(),
		Event: e.Kind.String(), Active: e.Active, Cookie: e.Cookie,
		OpenTime:   clk.Time(e.OpenNs),
		BytesAcked: e.BytesAcked, BytesReceived: e.BytesReceived, TotalRetrans: e.TotalRetrans,
	}
	if e.HaveSegs {
		row.SegsOut, row.SegsIn = &e.SegsOut, &e.SegsIn
	}
	if e.Kind == Close {
		ct, d, from := clk.Time(e.CloseNs), e.DurationNs(), e.FromState.String()
		row.CloseTime, row.DurationNs, row.CloseFromState = &ct, &d, &from
	}
	return row
}
