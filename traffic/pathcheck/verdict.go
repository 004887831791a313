package pathcheck

import (
	"fmt"
	"time"
)

// DefaultExpectRTT is the RTT floor expected of a nearby peer (same rack or
// on-link in one cloud region: 50-150 µs measured in the field).
const DefaultExpectRTT = 150 * time.Microsecond

// Verdict statuses.
const (
	StatusOK      = "ok"
	StatusHairpin = "hairpin suspected"
	StatusUnknown = "unknown"
)

// Check is everything measured about one peer.
type Check struct {
	Route Route
	RTT   Result
}

// Verdict is the judgement on one peer, with the evidence for it.
type Verdict struct {
	Status   string
	Evidence []string
}

// Hairpin reports whether a hairpin is suspected.
func (v Verdict) Hairpin() bool { return v.Status == StatusHairpin }

// Judge says whether the path to c's peer looks like a hairpin: its RTT
// floor (the smallest connect time) is above expect, what a nearby peer
// shows, or a peer inside one of this host's connected prefixes is routed
// through a gateway. other, if not nil, is a second peer measured the same
// way (--compare): the floors are set side by side as evidence. A peer with
// no RTT sample gets StatusUnknown.
func Judge(c Check, expect time.Duration, other *Check) Verdict {
	if expect <= 0 {
		expect = DefaultExpectRTT
	}
	r := c.Route
	if r.Local {
		return Verdict{Status: StatusOK, Evidence: []string{r.Peer.String() + " is an address of this host"}}
	}
	v := Verdict{Status: StatusOK}
	if r.Connected.IsValid() && !r.OnLink() {
		v.Status = StatusHairpin
		v.Evidence = append(v.Evidence, fmt.Sprintf("%s is inside %s, connected on %s, yet the kernel routes it via gateway %s",
			r.Peer, r.Connected, r.ConnectedDev, r.Gateway))
	}
	if c.RTT.Samples == 0 {
		if v.Status == StatusOK {
			v.Status = StatusUnknown
		}
		v.Evidence = append(v.Evidence, "no RTT sample: "+c.RTT.Kind())
		return v
	}
	floor := c.RTT.Min
	if floor > expect {
		v.Status = StatusHairpin
		e := fmt.Sprintf("RTT floor %s is %.1fx the %s expected of a nearby peer (--expect-rtt)", fmtDur(floor), float64(floor)/float64(expect), fmtDur(expect))
		if r.OnLink() {
			e += "; the peer is on-link, so the detour is beyond this host's routing table"
		} else {
			e += "; reached via gateway " + r.Gateway.String()
		}
		v.Evidence = append(v.Evidence, e)
		if Public(r.Peer) {
			v.Evidence = append(v.Evidence, "public address: the path may leave through a NAT or load-balancer edge and come back; try the peer's private address (--compare)")
		}
	} else {
		v.Evidence = append(v.Evidence, fmt.Sprintf("RTT floor %s within the %s expected of a nearby peer", fmtDur(floor), fmtDur(expect)))
	}
	if other != nil && other.RTT.Samples > 0 && other.RTT.Min > 0 {
		ratio := float64(floor) / float64(other.RTT.Min)
		v.Evidence = append(v.Evidence, fmt.Sprintf("floor %.2fx that of %s (%s, %s)", ratio, other.Route.Peer, fmtDur(other.RTT.Min), other.Route.Class))
	}
	return v
}

// fmtDur prints a duration in ms with µs resolution ("0.052 ms").
func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

// Ms returns d in milliseconds (for tables and JSON).
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
