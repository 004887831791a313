package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// A multi-queue NIC on the test bed: veth ends with 4 queues each, TSO off
// on A and GRO on on B, so B's veth receives every data segment through
// the NAPI context of the receive queue matching the transmit queue A
// picked for the flow (a hash of the flow, as RSS on a NIC), and counts
// it there (ethtool -S rx_queue_N_xdp_packets/_bytes: every packet that
// queue's NAPI handled). Checked against ground truth:
//   - the queues' packets summed equal B's netlink rx_packets over the
//     same rows (up to the few packets veth passes to the stack outside
//     NAPI: neighbour discovery);
//   - each receiving stream's SO_INCOMING_NAPI_ID names its queue's NAPI
//     context: the streams grouped by NAPI ID form as many groups as
//     queues carried data, and each group's payload (the generator's own
//     byte count) is its queue's bytes less headers;
//   - the report's queue heat map has B's busy queues, and the manifest
//     B's 4 rx queues (read from B's namespace).
func TestMultiQueueVeth(t *testing.T) {
	requireBench(t, true)
	const queues = 4
	// A flow keeps its transmit queue unless TCP rethinks its hash
	// (after a retransmission timeout, or a receive of duplicate data):
	// not on this bed.
	bed := testbedtest.New(t, testbed.Options{Queues: queues, Sysctls: map[string]string{"net.core.txrehash": "0"}})
	a, b := bed.A(), bed.B()
	hostRun(t, a, "ethtool", "-K", a.Link, "tso", "off")
	hostRun(t, b, "ethtool", "-K", b.Link, "gro", "on")
	cfg := verdictConfig(8, 3*time.Second)
	r, run := bedRun(t, cfg, bed)

	// Per queue: packets and bytes over every row of the run.
	nics, err := run.NICs()
	if err != nil {
		t.Fatal(err)
	}
	type qsum struct{ packets, bytes uint64 }
	perQueue := map[int32]*qsum{}
	rowTimes := map[time.Time]bool{}
	for _, x := range nics {
		if x.Ifname != b.Link || x.Netns != b.NetnsInode() || x.Queue == nil || x.Direction == nil || *x.Direction != "rx" {
			continue
		}
		q := perQueue[*x.Queue]
		if q == nil {
			q = &qsum{}
			perQueue[*x.Queue] = q
		}
		switch {
		case strings.HasSuffix(x.Stat, "_xdp_packets"):
			q.packets += x.Value
			rowTimes[x.Time] = true
		case strings.HasSuffix(x.Stat, "_xdp_bytes"):
			q.bytes += x.Value
		}
	}
	ifaces, err := run.Ifaces()
	if err != nil {
		t.Fatal(err)
	}
	var nlPackets uint64
	for _, x := range ifaces {
		if x.Ifname == b.Link && x.Netns == b.NetnsInode() && rowTimes[x.Time] {
			nlPackets += x.RxPackets
		}
	}
	var qPackets uint64
	var busy []qsum
	for i := range int32(queues) {
		q := perQueue[i]
		if q == nil {
			t.Fatalf("%s rx queue %d: no nics rows (queues %v)", b.Link, i, perQueue)
		}
		t.Logf("%s rx queue %d: %d packets, %d bytes", b.Link, i, q.packets, q.bytes)
		qPackets += q.packets
		if q.packets > 1000 {
			busy = append(busy, *q)
		}
	}
	t.Logf("queues' packets %d; netlink rx_packets %d over the same %d rows", qPackets, nlPackets, len(rowTimes))
	if qPackets > nlPackets || nlPackets-qPackets > 20 || nlPackets < 10000 {
		t.Errorf("queues' packets %d vs netlink rx_packets %d: want equal, up to 20 outside NAPI", qPackets, nlPackets)
	}
	if len(busy) < 2 {
		t.Errorf("8 streams landed on %d of %d queues", len(busy), queues)
	}

	// Per NAPI ID: the receiving streams' payload.
	rows, err := run.Traffic()
	if err != nil {
		t.Fatal(err)
	}
	type stream struct {
		bytes uint64
		napi  uint32
		at    time.Time
		moved int
	}
	streams := map[int32]*stream{}
	for _, x := range rows {
		if x.Role != trace.RoleReceiver {
			continue
		}
		s := streams[x.Stream]
		if s == nil {
			s = &stream{}
			streams[x.Stream] = s
		}
		s.bytes += x.AppBytes
		if x.IncomingNapiID != nil && !x.Time.Before(s.at) {
			if s.napi != 0 && s.napi != *x.IncomingNapiID {
				t.Logf("receiving stream %d moved from NAPI %d to %d at %v", x.Stream, s.napi, *x.IncomingNapiID, x.Time)
				s.moved++
			}
			s.napi, s.at = *x.IncomingNapiID, x.Time
		}
	}
	byNapi := map[uint32]uint64{}
	for i, s := range streams {
		if s.napi == 0 {
			t.Errorf("receiving stream %d: SO_INCOMING_NAPI_ID 0 (no NAPI context)", i)
		}
		byNapi[s.napi] += s.bytes
	}
	var groups []uint64
	for id, n := range byNapi {
		t.Logf("NAPI %d: %d payload bytes", id, n)
		groups = append(groups, n)
	}
	if len(groups) != len(busy) {
		t.Fatalf("%d NAPI IDs among the receiving streams, %d queues carried data", len(groups), len(busy))
	}
	slices.Sort(groups)
	slices.SortFunc(busy, func(x, y qsum) int { return int(x.bytes>>10) - int(y.bytes>>10) })
	for i, g := range groups {
		// Payload over the queue's bytes: MSS 1448 of 1500-byte IP
		// packets (0.965), less for the handshake's and FIN's segments.
		ratio := float64(g) / float64(busy[i].bytes)
		t.Logf("NAPI group %d: payload %d / queue bytes %d = %.4f", i, g, busy[i].bytes, ratio)
		if ratio < 0.93 || ratio > 0.975 {
			t.Errorf("NAPI group %d: payload %d vs its queue's %d bytes (%.4f): want 0.93-0.975", i, g, busy[i].bytes, ratio)
		}
	}

	// The report and manifest.
	var heat []string
	if h := r.QueueHeat; h != nil {
		for _, q := range h.Queues {
			if q.Ifname == b.Link && q.Dir == "rx" {
				heat = append(heat, fmt.Sprint(q.Queue))
			}
		}
	}
	if len(heat) != queues {
		t.Errorf("queue heat map: %s rx queues %v, want all %d", b.Link, heat, queues)
	}
	for _, mi := range run.Manifest.Interfaces {
		if mi.Name == b.Link && (mi.Queues == nil || len(mi.Queues.RxQueues) != queues) {
			t.Errorf("manifest %s queues: %+v", b.Link, mi.Queues)
		}
	}
}
