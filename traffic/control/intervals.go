package control

import (
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/traffic"
)

// intervalState turns the generator's cumulative counters and CPU samples
// into per-interval deltas.
type intervalState struct {
	t                  *serverTest
	start, last        time.Time
	index              int
	prevRecv, prevSent []uint64 // cumulative per stream at the last tick
	prevTCP            []*traffic.TCPInfo
	cpu0, cpuLast      cpustat.Sample
	cpuOK              bool
}

func newIntervalState(t *serverTest, start time.Time, cpu0 cpustat.Sample) *intervalState {
	s := &intervalState{t: t, start: start, last: start, cpu0: cpu0, cpuLast: cpu0, cpuOK: !cpu0.Time.IsZero()}
	if t.recv != nil {
		s.prevRecv = make([]uint64, t.info.Streams)
	}
	if t.send != nil {
		s.prevSent = make([]uint64, t.info.Streams)
		s.prevTCP = make([]*traffic.TCPInfo, t.info.Streams)
	}
	return s
}

// next returns the interval ending now and advances.
func (s *intervalState) next(now time.Time) Interval {
	iv := Interval{Index: s.index, EndNs: now.Sub(s.start).Nanoseconds(), IntervalNs: now.Sub(s.last).Nanoseconds()}
	if s.t.recv != nil {
		smp := s.t.recv.Sample()
		iv.ReceivedBytes = deltas(smp, s.prevRecv)
		iv.ReceivedSteering = steering(smp, len(s.prevRecv))
	}
	if s.t.send != nil {
		smp := s.t.send.Sample()
		iv.SentBytes = deltas(smp, s.prevSent)
		iv.SentTCP = s.tcpDeltas(smp)
	}
	if s.cpuOK {
		if c, err := cpustat.Read(); err == nil {
			iv.CPU = WireCPU(cpustat.Delta(s.cpuLast, c))
			s.cpuLast = c
		}
	}
	s.index++
	s.last = now
	return iv
}

// total is the CPU use from the start to the last interval.
func (s *intervalState) total() cpustat.Usage {
	if !s.cpuOK {
		return cpustat.Usage{}
	}
	return cpustat.Delta(s.cpu0, s.cpuLast)
}

// tcpDeltas returns each sending stream's TCP_INFO over the interval (nil
// for streams without), or nil when no stream had any.
func (s *intervalState) tcpDeltas(samples []traffic.StreamSample) []*StreamTCP {
	out := make([]*StreamTCP, len(s.prevTCP))
	seen := false
	for _, smp := range samples {
		if smp.Stream < 0 || smp.Stream >= len(out) || smp.TCP == nil {
			continue
		}
		out[smp.Stream] = wireTCP(traffic.DeltaTCP(smp.TCP, s.prevTCP[smp.Stream]))
		s.prevTCP[smp.Stream] = smp.TCP
		seen = true
	}
	if !seen {
		return nil
	}
	return out
}

// steering returns each of n receiving streams' steering at the end of
// the interval (nil for streams without), or nil when no stream had any.
func steering(samples []traffic.StreamSample, n int) []*StreamSteering {
	out := make([]*StreamSteering, n)
	seen := false
	for _, smp := range samples {
		if smp.Stream < 0 || smp.Stream >= n || smp.Steering == nil {
			continue
		}
		out[smp.Stream] = wireSteering(smp.Steering)
		seen = true
	}
	if !seen {
		return nil
	}
	return out
}

// deltas returns each stream's bytes since prev and updates prev to the
// cumulative counts.
func deltas(samples []traffic.StreamSample, prev []uint64) []uint64 {
	out := make([]uint64, len(prev))
	for _, smp := range samples {
		if smp.Stream < 0 || smp.Stream >= len(prev) {
			continue
		}
		out[smp.Stream] = smp.AppBytes - prev[smp.Stream]
		prev[smp.Stream] = smp.AppBytes
	}
	return out
}
