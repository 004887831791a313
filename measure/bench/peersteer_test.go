package bench

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/control"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// A bidir run against a server in B, with RPS steering B's receive
// processing to CPU 1 and A's to CPU 0 (the independent ground truth):
// every peer receiver row with data in the measured phase has the peer's
// SO_INCOMING_CPU, reported over the control protocol
// (received_steering), as incoming_cpu 1, and this end's receiver rows 0;
// the report keeps the two apart (SteeringLine this host's, "peer CPU 1"
// in PeerSteeringLine).
func TestPeerReceiverSteering(t *testing.T) {
	requireBench(t, false)
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	bed := testbedtest.New(t, testbed.Options{})
	const peerCPU, localCPU = 1, 0
	setRPS(t, bed.B(), peerCPU)
	setRPS(t, bed.A(), localCPU)
	srv := startPeer(t, bed, 5001, 5002)
	cfg := peerConfig(t, srv)
	cfg.Direction, cfg.Warmup = control.Bidir, 250*time.Millisecond
	res, _, rows := peerTraffic(t, cfg, bed)
	peerHost := bed.B().Addr.String()
	want := map[string]int32{"peer": peerCPU, "local": localCPU}
	n, bad := map[string]int{}, map[string]int{}
	for _, r := range rows {
		if r.Role != trace.RoleReceiver || r.AppBytes == 0 || r.Phase == nil || *r.Phase != trace.PhaseMeasure {
			continue
		}
		end := "local"
		if strings.HasPrefix(r.LocalAddr, peerHost+":") {
			end = "peer"
		}
		n[end]++
		if r.IncomingCPU == nil || *r.IncomingCPU != want[end] {
			bad[end]++
			t.Errorf("%s receiver stream %d at %v: incoming_cpu %v, RPS steered it to %d", end, r.Stream, r.Time, deref(r.IncomingCPU), want[end])
		}
	}
	t.Logf("measured receiver rows with data: peer %d (incoming_cpu %d on %d), local %d (incoming_cpu %d on %d)",
		n["peer"], peerCPU, n["peer"]-bad["peer"], n["local"], localCPU, n["local"]-bad["local"])
	if n["peer"] < 2*cfg.Streams || n["local"] < 2*cfg.Streams {
		t.Errorf("measured receiver rows with data: peer %d, local %d; want >= %d each", n["peer"], n["local"], 2*cfg.Streams)
	}
	r := res.Report
	var peers, locals int
	for _, s := range r.Steering {
		w := want["local"]
		if s.Peer {
			peers++
			w = want["peer"]
		} else {
			locals++
		}
		if s.CPU != w {
			t.Errorf("report steering %+v: CPU %d, want %d", s, s.CPU, w)
		}
	}
	t.Logf("report: receive steering %q; peer %q", r.SteeringLine(), r.PeerSteeringLine())
	if peers != cfg.Streams || locals != cfg.Streams {
		t.Errorf("report steering %+v: %d peer and %d local streams, want %d each", r.Steering, peers, locals, cfg.Streams)
	}
	if !strings.HasPrefix(r.PeerSteeringLine(), fmt.Sprintf("peer CPU %d: streams 0, 1", peerCPU)) ||
		!strings.HasPrefix(r.SteeringLine(), fmt.Sprintf("CPU %d: streams 2, 3", localCPU)) {
		t.Errorf("steering lines %q, peer %q", r.SteeringLine(), r.PeerSteeringLine())
	}
}
