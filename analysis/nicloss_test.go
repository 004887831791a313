package analysis

import (
	"encoding/json"
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
	if r.NICLoss == nil || len(r.NICLoss) != 0 || r.NICLossLine() != "none (netlink rx/tx_dropped only (trace without the stats64 error columns), no ethtool -S rows (nics table: bench only), whole run)" {
		t.Errorf("nothing lost: %v, %q", r.NICLoss, r.NICLossLine())
	}
	// No ifaces rows: n/a.
	r, _ = BuildTables(m, Tables{CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if r.NICLoss != nil || !strings.HasPrefix(r.NICLossLine(), "n/a") {
		t.Errorf("no ifaces: %v, %q", r.NICLoss, r.NICLossLine())
	}
}

func itoa(v uint64) string { b, _ := json.Marshal(v); return string(b) }
