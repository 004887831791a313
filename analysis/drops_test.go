package analysis

import (
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// Drops add up per reason over CPUs and intervals, most first; without
// the probe they are n/a with its reason, never "none".
func TestDropsByReason(t *testing.T) {
	s := analysistest.Scenario{}
	m := s.Manifest()
	m.Probes = []trace.Probe{{Name: "np_drop", Hook: "skb:kfree_skb", Attached: true}}
	ifaces, cpus, flows, traffic := s.Tables()
	rows := []trace.DropRow{
		{CPU: 0, Reason: "NO_SOCKET", ReasonCode: 3, Packets: 5, Bytes: 500},
		{CPU: 1, Reason: "NO_SOCKET", ReasonCode: 3, Packets: 7, Bytes: 700},
		{CPU: 1, Reason: "TCP_CSUM", ReasonCode: 9, Packets: 2, Bytes: 3000},
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic, Drops: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Drops) != 2 || r.Drops[0].Reason != "NO_SOCKET" || r.Drops[0].Packets != 12 || r.Drops[0].Bytes != 1200 ||
		r.Drops[0].CPUs[0] != 1 || r.Drops[1].Packets != 2 {
		t.Fatalf("drops %+v", r.Drops)
	}
	if got := r.DropsLine(); !strings.Contains(got, "14 packets") || !strings.Contains(got, "NO_SOCKET 12, TCP_CSUM 2") {
		t.Errorf("drops line %q", got)
	}
	m.Probes[0] = trace.Probe{Name: "np_drop", Hook: "skb:kfree_skb", Reason: trace.ReasonNotSelected}
	r, _ = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if r.Drops != nil || !strings.Contains(r.DropsLine(), "n/a (np_drop not attached: not selected") {
		t.Errorf("probe off: drops %v, line %q", r.Drops, r.DropsLine())
	}
	m.Probes[0].Reason, m.Probes[0].Attached = "", true
	r, _ = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if r.Drops == nil || len(r.Drops) != 0 || !strings.HasPrefix(r.DropsLine(), "none") {
		t.Errorf("probe on, no drops: %v, %q", r.Drops, r.DropsLine())
	}
}

// The softirq and wire rules cite where packets were dropped.
func TestDropsCitedByRules(t *testing.T) {
	s := analysistest.Scenario{RatedMbps: 10_000, RateBps: flat(9.3e9)}
	m := s.Manifest()
	m.Probes = []trace.Probe{{Name: "np_drop", Hook: "skb:kfree_skb", Attached: true}}
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic,
		Drops: []trace.DropRow{{CPU: 0, Reason: "QDISC_DROP", Packets: 40, Bytes: 60000}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{RuleWire, RuleSoftirq} {
		if ev := strings.Join(r.Verdict(rule).Evidence, "\n"); !strings.Contains(ev, "packets dropped: 40 packets") ||
			!strings.Contains(ev, "QDISC_DROP 40") {
			t.Errorf("%s evidence does not cite the drops:\n%s", rule, ev)
		}
	}
}
