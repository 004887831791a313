package blobrun

import (
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/blob"
)

// sampler adds one traffic row per blob target per interval from the
// transfer's cumulative counters.
type sampler struct {
	x    *blob.Transfer
	role string
	prev []blob.Stats
}

func (s *sampler) Name() string { return "blob" }

// Baseline starts from zero, not from the counters' current values: the
// first interval also holds the requests made while preparing (the
// GetProperties of every URL, a push's container create), so every
// attempt is in the trace, except a push's expected probe answers (404 of
// a new blob or container, 409 of a racing create), which are not errors
// and are recorded in the manifest (targets[].expected_probe_answers).
func (s *sampler) Baseline() error {
	s.prev = make([]blob.Stats, len(s.x.Targets()))
	return nil
}

func (s *sampler) Sample(iv *trace.Interval, _ int64) error {
	for _, ts := range s.x.Stats() {
		d := ts.Stats.Sub(s.prev[ts.Index])
		s.prev[ts.Index] = ts.Stats
		iv.Traffic = append(iv.Traffic, row(ts.Index, s.role, ts.Target, d))
	}
	return nil
}

// row is one target's traffic row for an interval's counts d.
func row(stream int, role string, t blob.Target, d blob.Stats) trace.TrafficRow {
	r := trace.TrafficRow{
		Stream: int32(stream), Role: role, RemoteAddr: t.Host, AppBytes: d.Bytes,
		Requests: ptr(d.Requests), HTTP2xx: ptr(d.HTTP2xx), HTTP503: ptr(d.HTTP503),
		HTTP500: ptr(d.HTTP500), HTTPOtherErrors: ptr(d.HTTPOther), Retries: ptr(d.Retries),
	}
	if p50, ok := d.Latency.Quantile(0.50); ok {
		p99, _ := d.Latency.Quantile(0.99)
		r.RequestLatencyP50Us, r.RequestLatencyP99Us = ptr(p50), ptr(p99)
	}
	if len(d.Codes503) > 0 {
		r.HTTP503ErrorCodes = ptr(blob.FormatCodes(d.Codes503))
	}
	return r
}

func ptr[T any](v T) *T { return &v }
