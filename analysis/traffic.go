package analysis

import (
	"net/netip"

	"github.com/netprof/netprof/trace"
)

// trafficAcc accumulates the traffic table: application bytes per role,
// the sender's TCP_INFO retransmits, and the generator's endpoints.
type trafficAcc struct {
	appRx, appTx     series // receiver / sender app_bytes per interval
	sndRetx          series // sender tcp_retransmits per interval (count in Bytes)
	sndRetxTotal     uint64
	sndRetxSet       bool
	sndRows, rcvRows int
	sentBytes        uint64
	endpoints        map[string]bool // generator connections, "local>remote"
	steering         steeringAcc
	chronoRows       []chronoRow // sender rows' chrono columns
}

// add returns the batch function for trace.TrafficRow.
func (a *trafficAcc) add(b *builder) func([]trace.TrafficRow) error {
	return func(rows []trace.TrafficRow) error {
		for i := range rows {
			a.row(b, &rows[i])
		}
		return nil
	}
}

func (a *trafficAcc) row(b *builder, x *trace.TrafficRow) {
	b.rows.add(x.Time, x.IntervalNs)
	if a.endpoints == nil {
		a.endpoints = map[string]bool{}
	}
	if k := endpointKey(x.LocalAddr, x.RemoteAddr); k != "" {
		a.endpoints[k] = true
	}
	a.steering.row(x)
	s, label := &a.appRx, "traffic.app_bytes (receiver)"
	if x.Role == trace.RoleSender {
		s, label = &a.appTx, "traffic.app_bytes (sender)"
		a.sndRows++
		a.sentBytes += x.AppBytes
		a.senderRetx(x)
		a.chrono(x)
	} else if x.Role == trace.RoleReceiver {
		a.rcvRows++
	} else {
		return
	}
	if !b.anom.plausible(label, x.Time, x.IntervalNs, x.AppBytes) {
		s.exclude(x.Time)
		return
	}
	s.add(x.Time, x.IntervalNs, x.AppBytes)
}

// senderRetx adds a sender row's TCP_INFO retransmits.
func (a *trafficAcc) senderRetx(x *trace.TrafficRow) {
	if x.TCPRetransmits == nil {
		return
	}
	a.sndRetxSet = true
	a.sndRetxTotal += *x.TCPRetransmits
	a.sndRetx.add(x.Time, x.IntervalNs, *x.TCPRetransmits)
}

// endpointKey returns "local>remote" with both ends in canonical ip:port
// form, or "" when either does not parse.
func endpointKey(local, remote string) string {
	l, err1 := netip.ParseAddrPort(local)
	r, err2 := netip.ParseAddrPort(remote)
	if err1 != nil || err2 != nil {
		return ""
	}
	return l.String() + ">" + r.String()
}
