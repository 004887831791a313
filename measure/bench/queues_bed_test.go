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
//   - RPS per queue (rx-0 and rx-2 to CPU 1, rx-1 and rx-3 to CPU 0,
//     written through `ip netns exec`): each stream's SO_INCOMING_CPU is
//     the CPU the mask RPS applied names. On veth that is not always its
//     NAPI queue's mask: veth hands NAPI queue q the skbs of A's transmit
//     queue q but leaves the skb's queue_mapping as A set it, which RPS
//     reads as "receive queue + 1", so queue q's packets are steered by
//     rx-(q-1)'s mask, queues 0 and 1 both by rx-0's (measured on 6.18
//     with these masks and with 0,0,1,1). A real NIC's driver records its
//     receive queue; the report's "fed by" lines follow the masks as
//     written;
//   - the report's queue heat map has B's busy queues, and the manifest
//     B's 4 rx queues with those masks (read from B's namespace).
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
	rpsCPU := []int32{1, 0, 1, 0}
	rpsQueue := func(q int32) int32 { return max(q-1, 0) } // see above
	for q, cpu := range rpsCPU {
		p := fmt.Sprintf("/sys/class/net/%s/queues/rx-%d/rps_cpus", b.Link, q)
		hostRun(t, b, "sh", "-c", fmt.Sprintf("echo %x > %s", 1<<cpu, p))
	}
	cfg := verdictConfig(8, 3*time.Second)
	r, run := bedRun(t, cfg, bed)

	// Per queue: packets and bytes over every row of the run.
	nics, err := run.NICs()
	if err != nil {
		t.Fatal(err)
	}
	type qsum struct {
		index          int32
		packets, bytes uint64
	}
	perQueue := map[int32]*qsum{}
	rowTimes := map[time.Time]bool{}
	for _, x := range nics {
		if x.Ifname != b.Link || x.Netns != b.NetnsInode() || x.Queue == nil || x.Direction == nil || *x.Direction != "rx" {
			continue
		}
		q := perQueue[*x.Queue]
		if q == nil {
			q = &qsum{index: *x.Queue}
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
		cpu   int32
		at    time.Time
	}
	streams := map[int32]*stream{}
	for _, x := range rows {
		if x.Role != trace.RoleReceiver {
			continue
		}
		s := streams[x.Stream]
		if s == nil {
			s = &stream{cpu: -1}
			streams[x.Stream] = s
		}
		s.bytes += x.AppBytes
		if x.IncomingNapiID != nil && x.IncomingCPU != nil && !x.Time.Before(s.at) {
			if s.napi != 0 && s.napi != *x.IncomingNapiID {
				t.Errorf("receiving stream %d moved from NAPI %d to %d at %v (net.core.txrehash 0 should keep it)",
					x.Stream, s.napi, *x.IncomingNapiID, x.Time)
			}
			s.napi, s.cpu, s.at = *x.IncomingNapiID, *x.IncomingCPU, x.Time
		}
	}
	type group struct {
		bytes   uint64
		streams []int32
	}
	byNapi := map[uint32]*group{}
	var payload uint64
	for i, s := range streams {
		if s.napi == 0 {
			t.Errorf("receiving stream %d: SO_INCOMING_NAPI_ID 0 (no NAPI context)", i)
		}
		g := byNapi[s.napi]
		if g == nil {
			g = &group{}
			byNapi[s.napi] = g
		}
		g.bytes += s.bytes
		g.streams = append(g.streams, i)
		payload += s.bytes
	}
	if len(byNapi) != len(busy) {
		t.Fatalf("%d NAPI IDs among the receiving streams, %d queues carried data", len(byNapi), len(busy))
	}
	// Each NAPI group's payload is its queue's bytes times the run's
	// payload share (MSS 1448 of 1500-byte IP packets: 0.965): the queue
	// within 0.2% of that is the group's. Two queues that close in bytes
	// are told apart only when their RPS CPUs agree.
	var qBytes uint64
	for _, q := range busy {
		qBytes += q.bytes
	}
	share := float64(payload) / float64(qBytes)
	t.Logf("payload %d over the busy queues' %d bytes: %.4f", payload, qBytes, share)
	if share < 0.93 || share > 0.975 {
		t.Errorf("payload share %.4f of the queues' bytes: want 0.93-0.975 (MSS over IP packet)", share)
	}
	for id, g := range byNapi {
		var match []qsum
		for _, q := range busy {
			if r := float64(g.bytes) / float64(q.bytes) / share; r > 0.998 && r < 1.002 {
				match = append(match, q)
			}
		}
		t.Logf("NAPI %d: streams %v, %d payload bytes; queues within 0.2%%: %v", id, g.streams, g.bytes, match)
		if len(match) == 0 {
			t.Errorf("NAPI %d (streams %v, %d bytes): no queue's bytes match (busy queues %v)", id, g.streams, g.bytes, busy)
			continue
		}
		cpu := rpsCPU[rpsQueue(match[0].index)]
		if slices.ContainsFunc(match, func(q qsum) bool { return rpsCPU[rpsQueue(q.index)] != cpu }) {
			t.Logf("NAPI %d: queues %v match equally and steer to different CPUs: CPU not checked", id, match)
			continue
		}
		for _, i := range g.streams {
			if c := streams[i].cpu; c != cpu {
				t.Errorf("receiving stream %d (NAPI %d, rx queue %d): SO_INCOMING_CPU %d, RPS CPU %d (rx-%d's mask)",
					i, id, match[0].index, c, cpu, rpsQueue(match[0].index))
			}
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
		if mi.Name != b.Link {
			continue
		}
		if mi.Queues == nil || len(mi.Queues.RxQueues) != queues {
			t.Fatalf("manifest %s queues: %+v", b.Link, mi.Queues)
		}
		for q, rq := range mi.Queues.RxQueues {
			if rq.CPUs != fmt.Sprint(rpsCPU[q]) {
				t.Errorf("manifest %s rx-%d rps_cpus %q, want %d", b.Link, q, rq.CPUs, rpsCPU[q])
			}
		}
	}
}
