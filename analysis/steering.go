package analysis

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/netprof/netprof/trace"
)

// StreamSteering is where the kernel processed one receiving generator
// stream's packets: traffic.incoming_cpu and incoming_napi_id
// (SO_INCOMING_CPU, SO_INCOMING_NAPI_ID) of its last row that has them.
type StreamSteering struct {
	Stream        int
	Local, Remote string
	CPU           int32
	NapiID        uint32
	// Bytes is the stream's received payload over the run.
	Bytes uint64
	// Moved counts the intervals whose CPU differed from the previous
	// one's (RPS/RFS or an IRQ moving the flow).
	Moved int
}

// steeringAcc keeps each receiving stream's latest steering.
type steeringAcc struct {
	streams map[string]*steeringState
}

type steeringState struct {
	StreamSteering
	at  time.Time
	set bool
}

func (a *steeringAcc) row(x *trace.TrafficRow) {
	if x.Role != trace.RoleReceiver || x.Phase != nil && *x.Phase != trace.PhaseMeasure {
		return
	}
	if a.streams == nil {
		a.streams = map[string]*steeringState{}
	}
	k := x.LocalAddr + ">" + x.RemoteAddr
	s := a.streams[k]
	if s == nil {
		s = &steeringState{StreamSteering: StreamSteering{Stream: int(x.Stream), Local: x.LocalAddr, Remote: x.RemoteAddr}}
		a.streams[k] = s
	}
	s.Bytes += x.AppBytes
	if x.IncomingCPU == nil || (s.set && x.Time.Before(s.at)) {
		return
	}
	if s.set && *x.IncomingCPU != s.CPU {
		s.Moved++
	}
	s.CPU, s.at, s.set = *x.IncomingCPU, x.Time, true
	if x.IncomingNapiID != nil {
		s.NapiID = *x.IncomingNapiID
	}
}

// finish sets Report.Steering: the streams with a CPU, by CPU then stream.
func (a *steeringAcc) finish(r *Report) {
	for _, s := range a.streams {
		if s.set {
			r.Steering = append(r.Steering, s.StreamSteering)
		}
	}
	sort.Slice(r.Steering, func(i, j int) bool {
		x, y := r.Steering[i], r.Steering[j]
		if x.CPU != y.CPU {
			return x.CPU < y.CPU
		}
		return x.Stream < y.Stream
	})
}

// SteeringLine summarises Report.Steering per CPU, busiest first, e.g.
// "CPU 1: streams 0, 2 (61.0% of the bytes); CPU 0: stream 1 (39.0% of the
// bytes)", and says so when every stream landed on one CPU of several, or
// one CPU got at least two more streams than another; "" without steering.
func (r *Report) SteeringLine() string {
	if len(r.Steering) == 0 {
		return ""
	}
	type cpuStreams struct {
		cpu     int32
		streams []string
		bytes   uint64
	}
	var per []*cpuStreams
	var total uint64
	for _, s := range r.Steering {
		if len(per) == 0 || per[len(per)-1].cpu != s.CPU {
			per = append(per, &cpuStreams{cpu: s.CPU})
		}
		c := per[len(per)-1]
		c.streams = append(c.streams, fmt.Sprint(s.Stream))
		c.bytes += s.Bytes
		total += s.Bytes
	}
	sort.SliceStable(per, func(i, j int) bool { return per[i].bytes > per[j].bytes })
	parts := make([]string, len(per))
	for i, c := range per {
		noun := "stream"
		if len(c.streams) > 1 {
			noun = "streams"
		}
		parts[i] = fmt.Sprintf("CPU %d: %s %s", c.cpu, noun, strings.Join(c.streams, ", "))
		if total > 0 {
			parts[i] += fmt.Sprintf(" (%s of the bytes)", pct(float64(c.bytes)/float64(total)))
		}
	}
	s := strings.Join(parts, "; ")
	most, least := per[0], per[0]
	for _, c := range per {
		if len(c.streams) > len(most.streams) {
			most = c
		}
		if len(c.streams) < len(least.streams) {
			least = c
		}
	}
	switch {
	case len(per) == 1 && len(most.streams) > 1 && len(r.CPUs) > 1:
		s += fmt.Sprintf(" — all %d streams were received on CPU %d of %d: RSS/RPS steered them together", len(most.streams), most.cpu, len(r.CPUs))
	case len(most.streams) >= len(least.streams)+2:
		s += fmt.Sprintf(" — uneven: CPU %d received %d streams, CPU %d %d", most.cpu, len(most.streams), least.cpu, len(least.streams))
	}
	return s
}
