package analysis

import (
	"encoding/json"
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
	// Peer is true for a stream the peer of a --peer run received
	// (`netprof traffic serve`, reported over the control protocol): CPU
	// and NapiID are the peer's, not this host's.
	Peer bool
}

// steeringAcc keeps each receiving stream's latest steering.
type steeringAcc struct {
	streams map[string]*steeringState
	// peerStreams is the number of forward streams of a --peer run:
	// receiver rows of streams below it are the peer's (this end's
	// receiving streams, reverse ones, are numbered after them).
	peerStreams int
}

// peerReceivers returns how many of a run's receiving streams the peer
// received: the forward streams of a --peer run (manifest config "peer",
// "direction" other than reverse, "streams"), else 0.
func peerReceivers(cfg map[string]any) int {
	if configString(cfg, "peer") == "" || configString(cfg, "direction") == "reverse" {
		return 0
	}
	return int(ConfigInt(cfg, "streams"))
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
		s = &steeringState{StreamSteering: StreamSteering{Stream: int(x.Stream), Local: x.LocalAddr, Remote: x.RemoteAddr,
			Peer: int(x.Stream) < a.peerStreams}}
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

// finish sets Report.Steering: the streams with a CPU, this host's
// before the peer's, by CPU then stream.
func (a *steeringAcc) finish(r *Report) {
	for _, s := range a.streams {
		if s.set {
			r.Steering = append(r.Steering, s.StreamSteering)
		}
	}
	sort.Slice(r.Steering, func(i, j int) bool {
		x, y := r.Steering[i], r.Steering[j]
		if x.Peer != y.Peer {
			return !x.Peer
		}
		if x.CPU != y.CPU {
			return x.CPU < y.CPU
		}
		return x.Stream < y.Stream
	})
}

// SteeringLine summarises this host's receiving streams of
// Report.Steering (the peer's are in PeerSteeringLine) per CPU, busiest
// first, e.g. "CPU 1: streams 0, 2 (61.0% of the bytes); CPU 0: stream 1
// (39.0% of the bytes)", and says so when every stream landed on one CPU
// of several, or one CPU got at least two more streams than another; ""
// without steering.
func (r *Report) SteeringLine() string {
	return steeringLine(r.steeringOf(false), len(r.CPUs), "CPU")
}

// PeerSteeringLine is SteeringLine for the streams the peer of a --peer
// run received, on the peer's CPUs ("peer CPU 1: streams 0, 1 (…)"); the
// one-CPU-of-several call-out needs the peer's CPU count from the
// manifest (config.cpu_intervals.peer). "" without.
func (r *Report) PeerSteeringLine() string {
	return steeringLine(r.steeringOf(true), peerCPUCount(r.Manifest.Config), "peer CPU")
}

// steeringOf returns the peer's streams of Report.Steering, or this
// host's.
func (r *Report) steeringOf(peer bool) []StreamSteering {
	var out []StreamSteering
	for _, s := range r.Steering {
		if s.Peer == peer {
			out = append(out, s)
		}
	}
	return out
}

// peerCPUCount returns the most CPUs the peer's interval reports listed
// (manifest config.cpu_intervals.peer[].cpu.cpus), 0 when absent.
func peerCPUCount(cfg map[string]any) int {
	raw, err := json.Marshal(cfg["cpu_intervals"])
	if err != nil {
		return 0
	}
	var ivs struct {
		Peer []struct {
			CPU struct {
				CPUs int `json:"cpus"`
			} `json:"cpu"`
		} `json:"peer"`
	}
	if json.Unmarshal(raw, &ivs) != nil {
		return 0
	}
	n := 0
	for _, iv := range ivs.Peer {
		n = max(n, iv.CPU.CPUs)
	}
	return n
}

// steeringLine summarises streams (sorted by CPU) per CPU, busiest first,
// each CPU named "<cpuName> N"; cpus is the host's CPU count (0 unknown).
func steeringLine(streams []StreamSteering, cpus int, cpuName string) string {
	if len(streams) == 0 {
		return ""
	}
	type cpuStreams struct {
		cpu     int32
		streams []string
		bytes   uint64
	}
	var per []*cpuStreams
	var total uint64
	for _, s := range streams {
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
		parts[i] = fmt.Sprintf("%s %d: %s %s", cpuName, c.cpu, noun, strings.Join(c.streams, ", "))
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
	case len(per) == 1 && len(most.streams) > 1 && cpus > 1:
		s += fmt.Sprintf(" — all %d streams were received on %s %d of %d: RSS/RPS steered them together", len(most.streams), cpuName, most.cpu, cpus)
	case len(most.streams) >= len(least.streams)+2:
		s += fmt.Sprintf(" — uneven: %s %d received %d streams, %s %d %d", cpuName, most.cpu, len(most.streams), cpuName, least.cpu, len(least.streams))
	}
	return s
}
