package bench

import (
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
)

// remoteRows turns the peer's interval reports into traffic rows of the
// trace: role "receiver" rows for the payload it read on each forward
// stream, role "sender" rows for what it wrote on each reverse stream.
// Sender rows get the tcp_* columns from the peer's TCP_INFO of that
// stream (sent_tcp), receiver rows incoming_cpu and incoming_napi_id from
// its SO_INCOMING_CPU/SO_INCOMING_NAPI_ID (received_steering); both null
// where the peer reported none (an older peer). local_addr is the peer's
// end of the connection, remote_addr this end's.
//
// The peer's intervals are its own (its clock starts when the start
// message arrives, its interval_ns is its measured length); each is
// written at the time of the local interval it belongs to — the first
// local interval not yet taken that ends no earlier than half a period
// before the peer's interval end, mapped to local time — so both ends'
// rows of one interval share `time` and phase.
type remoteRows struct {
	period     time.Duration
	reverseOff int       // stream number of reverse stream 0
	base       time.Time // local time of the peer's clock zero

	done, next int // peer intervals written; next local interval to match
	// usage holds the peer's CPU per written interval, with its phase;
	// moved, recvTotal and sentTotal its payload (measured intervals, and
	// all intervals).
	usage                []phasedUsage
	moved                uint64
	recvTotal, sentTotal uint64
}

func newRemoteRows(period time.Duration, reverseOff int) *remoteRows {
	return &remoteRows{period: period, reverseOff: reverseOff}
}

// flush writes the reports of remote not written yet whose local interval
// has been recorded (all of them when final: a report past the last local
// interval is then written at its own mapped time). local holds this
// end's stream samples, for the connections' addresses.
func (r *remoteRows) flush(tl *timeline, w *trace.Writer, remote []control.Interval, local []traffic.StreamSample, final bool) error {
	addrs := map[streamKey]traffic.StreamSample{}
	for _, s := range local {
		addrs[streamKey{s.Role, s.Stream}] = s
	}
	var out trace.Interval
	for ; r.done < len(remote); r.done++ {
		ri := remote[r.done]
		end := r.base.Add(time.Duration(ri.EndNs))
		at, phase := end, tl.phaseAt(end.Add(-time.Duration(ri.IntervalNs)/2))
		if i, ok := tl.match(&r.next, end, r.period); ok {
			at, phase = tl.ivs[i].end, tl.ivs[i].phase
		} else if !final {
			break
		}
		out.Traffic = append(out.Traffic, r.rows(ri, at, phase, addrs)...)
		r.usage = append(r.usage, phasedUsage{at, phase, ri.CPU.Usage()})
	}
	if len(out.Traffic) == 0 {
		return nil
	}
	return w.WriteInterval(out)
}

// rows returns one report's rows, stamped at and marked with phase.
func (r *remoteRows) rows(ri control.Interval, at time.Time, phase string, addrs map[streamKey]traffic.StreamSample) []trace.TrafficRow {
	var rows []trace.TrafficRow
	add := func(role, localRole string, stream int, n uint64) *trace.TrafficRow {
		l := addrs[streamKey{localRole, stream}]
		p := phase
		rows = append(rows, trace.TrafficRow{Time: at, IntervalNs: ri.IntervalNs, Stream: int32(stream), Role: role,
			LocalAddr: l.RemoteAddr, RemoteAddr: l.LocalAddr, AppBytes: n, Phase: &p})
		if phase == trace.PhaseMeasure {
			r.moved += n
		}
		return &rows[len(rows)-1]
	}
	for i, n := range ri.ReceivedBytes {
		row := add(trace.RoleReceiver, traffic.RoleSender, i, n)
		if i < len(ri.ReceivedSteering) && ri.ReceivedSteering[i] != nil {
			fillSteering(row, ri.ReceivedSteering[i].Steering())
		}
		r.recvTotal += n
	}
	for i, n := range ri.SentBytes {
		row := add(trace.RoleSender, traffic.RoleReceiver, r.reverseOff+i, n)
		if i < len(ri.SentTCP) && ri.SentTCP[i] != nil {
			fillTCP(row, ri.SentTCP[i].Delta())
		}
		r.sentTotal += n
	}
	return rows
}
