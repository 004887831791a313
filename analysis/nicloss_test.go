package analysis

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// The counted interfaces' loss counters add up over the run from netlink
// (stats64) and ethtool -S; an interface not counted and statistics that
// count no loss are left out; the rules cite them; a trace without the
// columns says "none" only for what it measured, and n/a without ifaces.
func TestNICLossCountedInterfaces(t *testing.T) {
	s := analysistest.Scenario{RatedMbps: 10_000, RateBps: flat(9.3e9)}
	m := s.Manifest()
	ifaces, cpus, flows, traffic := s.Tables()
	var missed uint64
	for i := range ifaces {
		x := &ifaces[i]
		zero := uint64(0)
		x.RxErrors, x.TxErrors, x.RxFifoErrors = &zero, &zero, &zero
		v := uint64(0)
		if x.Ifname == "veth-b" {
			v = 3
			missed += v
		}
		x.RxMissedErrors = &v
	}
	q := int32(2)
	nics := []trace.NICStatRow{
		{Netns: analysistest.RecvNetns, Ifname: "veth-b", Stat: "rx_out_of_buffer", Value: 100},
		{Netns: analysistest.RecvNetns, Ifname: "veth-b", Stat: "rx_out_of_buffer", Value: 20},
		{Netns: analysistest.RecvNetns, Ifname: "veth-b", Stat: "rx_queue_2_drops", Queue: &q, Value: 5},
		{Netns: analysistest.RecvNetns, Ifname: "veth-b", Stat: "rx_packets", Value: 1 << 30},
		{Netns: analysistest.RecvNetns, Ifname: "other0", Stat: "rx_dropped", Value: 999},
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic, NICs: nics}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"veth-b rx_out_of_buffer 120 (ethtool -S)", "veth-b rx_missed_errors " + itoa(missed) + " (netlink)",
		"veth-b rx_queue_2_drops 5 (ethtool -S)"} // largest first: missed is 3 per interval, > 5 over the run
	var got []string
	for _, l := range r.NICLoss {
		got = append(got, l.String())
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("nic loss %q, want %q", got, want)
	}
	for _, rule := range []string{RuleWire, RuleSoftirq} {
		if ev := strings.Join(r.Verdict(rule).Evidence, "\n"); !strings.Contains(ev, "interface loss counters: veth-b rx_out_of_buffer 120 (ethtool -S)") {
			t.Errorf("%s evidence does not cite the NIC's loss:\n%s", rule, ev)
		}
	}
	var sum strings.Builder
	if err := r.WriteSummary(&sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "NIC loss     veth-b rx_out_of_buffer 120 (ethtool -S)") {
		t.Errorf("summary lacks the NIC loss line:\n%s", sum.String())
	}
	var js struct {
		NICLoss []JSONNICLoss `json:"nic_loss"`
	}
	b, _ := json.Marshal(r.JSON())
	if err := json.Unmarshal(b, &js); err != nil || len(js.NICLoss) != len(want) || js.NICLoss[2].Queue == nil || *js.NICLoss[2].Queue != 2 {
		t.Errorf("json nic_loss %+v (%v)", js.NICLoss, err)
	}

	// Nothing moved: "none" names what was read; no summary line.
	ifaces, cpus, flows, traffic = s.Tables()
	r, _ = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if r.NICLoss == nil || len(r.NICLoss) != 0 || r.NICLossLine() != "none (netlink rx/tx_dropped only (trace without the stats64 error columns), no ethtool -S rows (nics table: bench and watch), whole run)" {
		t.Errorf("nothing lost: %v, %q", r.NICLoss, r.NICLossLine())
	}
	// No ifaces rows: n/a.
	r, _ = BuildTables(m, Tables{CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if r.NICLoss != nil || !strings.HasPrefix(r.NICLossLine(), "n/a") {
		t.Errorf("no ifaces: %v, %q", r.NICLoss, r.NICLossLine())
	}
}

func itoa(v uint64) string { b, _ := json.Marshal(v); return string(b) }

// Per-queue packet counters of a counted interface become packets per
// second per queue and bin; other statistics (XDP's, LRO's, device-wide)
// and interfaces not counted are left out. On a veth the queue's count is
// rx_queue_N_xdp_packets (all its NAPI handled), and only that.
func TestQueueHeat(t *testing.T) {
	s := analysistest.Scenario{}
	m := s.Manifest()
	for i := range m.Interfaces {
		if m.Interfaces[i].Name == "veth-b" {
			m.Interfaces[i].Driver = "mlx5_core" // the rows below are mlx5's names
		}
	}
	ifaces, cpus, flows, traffic := s.Tables()
	rx := "rx"
	var nics []trace.NICStatRow
	for _, x := range ifaces {
		if x.Ifname != "veth-b" {
			continue
		}
		for q := range int32(3) {
			qq := q
			for _, st := range []struct {
				name string
				v    uint64
			}{{"rx" + itoa(uint64(q)) + "_packets", uint64(1000 * (q + 1))}, {"rx" + itoa(uint64(q)) + "_lro_packets", 7}, {"rx_queue_" + itoa(uint64(q)) + "_xdp_packets", 9}} {
				nics = append(nics, trace.NICStatRow{Time: x.Time, IntervalNs: x.IntervalNs, Netns: x.Netns, Ifname: x.Ifname,
					Stat: st.name, Direction: &rx, Queue: &qq, Value: st.v})
			}
			nics = append(nics, trace.NICStatRow{Time: x.Time, IntervalNs: x.IntervalNs, Netns: x.Netns, Ifname: "other0",
				Stat: "rx0_packets", Direction: &rx, Queue: &qq, Value: 5})
		}
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic, NICs: nics}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := r.QueueHeat
	if h == nil || len(h.Queues) != 3 {
		t.Fatalf("queue heat %+v", h)
	}
	sec := float64(ifaces[0].IntervalNs) / 1e9
	for qi, q := range h.Queues {
		if q.Ifname != "veth-b" || q.Queue != int32(qi) || q.Stat != "rx"+itoa(uint64(qi))+"_packets" {
			t.Errorf("queue %d: %+v", qi, q)
		}
		seen := 0
		for _, v := range h.PacketsPerSec[qi] {
			if math.IsNaN(v) {
				continue
			}
			seen++
			if want := float64(1000*(qi+1)) / sec; math.Abs(v-want) > 1e-6*want {
				t.Errorf("queue %d: %v packets/s, want %v", qi, v, want)
			}
		}
		if seen == 0 {
			t.Errorf("queue %d: no bins", qi)
		}
	}
	m = s.Manifest() // veth-b a veth again
	r, err = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic, NICs: nics}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h := r.QueueHeat; h == nil || len(h.Queues) != 3 || h.Queues[2].Stat != "rx_queue_2_xdp_packets" ||
		math.Abs(slices.Max(slices.DeleteFunc(slices.Clone(h.PacketsPerSec[2]), math.IsNaN))-9/sec) > 1e-6 {
		t.Errorf("veth: queue heat %+v", h)
	}
	r, _ = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if r.QueueHeat != nil {
		t.Errorf("no nics rows: queue heat %+v", r.QueueHeat)
	}
}
