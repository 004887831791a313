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
	if got := r.DropsLine(); !strings.HasPrefix(got, "14 lost (NO_SOCKET 12, TCP_CSUM 2) (packets, skb:kfree_skb, whole run") ||
		strings.Contains(got, "benign") {
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
		if ev := strings.Join(r.Verdict(rule).Evidence, "\n"); !strings.Contains(ev, "packets dropped: 40 lost") ||
			!strings.Contains(ev, "QDISC_DROP 40") {
			t.Errorf("%s evidence does not cite the drops:\n%s", rule, ev)
		}
	}
}

// The trial's clean veth run with --probes deep: TCP discarding
// duplicates (TCP_OLD_DATA, TCP_OLD_SEQUENCE) and sockets' teardown
// (QUEUE_PURGE, TCP_ABORT_ON_DATA) are benign, NOT_SPECIFIED is counted
// lost. The one screen gives both counts, naming the benign ones as such;
// JSON classes every reason and sums each class; the rules cite lost
// drops, never benign ones alone; "1 more reason", singular.
func TestDropsBenignVsLost(t *testing.T) {
	s := analysistest.Scenario{Intervals: 8, RetxFraction: 0.001}
	m := s.Manifest()
	m.Probes = []trace.Probe{{Name: "np_drop", Hook: "skb:kfree_skb", Attached: true}}
	ifaces, cpus, flows, traffic := s.Tables()
	build := func(rows []trace.DropRow) *Report {
		r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic, Drops: rows}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	trial := []trace.DropRow{
		{CPU: 0, Reason: "TCP_OLD_DATA", Packets: 40, Bytes: 40 * 1448}, {CPU: 1, Reason: "TCP_OLD_DATA", Packets: 19, Bytes: 19 * 1448},
		{CPU: 1, Reason: "TCP_OLD_SEQUENCE", Packets: 43, Bytes: 43 * 1448}, {CPU: 0, Reason: "NOT_SPECIFIED", Packets: 16, Bytes: 16 * 90},
		{CPU: 1, Reason: "QUEUE_PURGE", Packets: 8, Bytes: 8 * 1448}, {CPU: 0, Reason: "TCP_ABORT_ON_DATA", Packets: 1, Bytes: 1448},
	}
	r := build(trial)
	const want = "16 lost (NOT_SPECIFIED 16); 111 benign TCP/socket discards of duplicates or at teardown " +
		"(TCP_OLD_DATA 59, TCP_OLD_SEQUENCE 43, QUEUE_PURGE 8, TCP_ABORT_ON_DATA 1) (packets, skb:kfree_skb, whole run, by reason)"
	if got := r.DropsLine(); got != want {
		t.Errorf("drops line\n%s\nwant\n%s", got, want)
	}
	if lost, benign := r.DropTotals(); lost != 16 || benign != 111 {
		t.Errorf("totals lost %d benign %d, want 16 and 111", lost, benign)
	}
	var sum strings.Builder
	if err := r.WriteSummary(&sum); err != nil {
		t.Fatal(err)
	}
	// The share of segments sent puts the retransmits to scale (lines
	// wrap: compared with single spaces).
	wantText(t, strings.Join(strings.Fields(sum.String()), " "), `drops 16 lost \(NOT_SPECIFIED 16\); 111 benign TCP/socket discards of duplicates or at`,
		`retransmits \d+ segments sent again \(.*?, whole run\): 0\.100% of \d+ segments sent; [\d.]+ per GB sent drops`)
	wantText(t, reportText(t, r), `(?m)^  TCP_OLD_DATA\s+benign\s+59\s+85432\s+0,1\s+data already received \(a spurious retransmit\)$`,
		`(?m)^  NOT_SPECIFIED\s+lost\s+16\s+1440\s+0\s+-$`)
	js := jsonMap(t, r)
	if js["drops_lost_packets"] != float64(16) || js["drops_benign_packets"] != float64(111) {
		t.Errorf("JSON drops lost %v benign %v", js["drops_lost_packets"], js["drops_benign_packets"])
	}
	for _, d := range js["drops"].([]any) {
		d := d.(map[string]any)
		if want := map[bool]string{true: "lost", false: "benign"}[d["reason"] == "NOT_SPECIFIED"]; d["class"] != want {
			t.Errorf("JSON drop %v: class %v, want %s", d["reason"], d["class"], want)
		}
	}
	for _, rule := range []string{RuleSoftirq, RuleWire} {
		if ev := strings.Join(r.Verdict(rule).Evidence, "\n"); rule == RuleSoftirq && !strings.Contains(ev, "packets dropped: 16 lost") {
			t.Errorf("%s evidence lacks the lost drops:\n%s", rule, ev)
		}
	}

	// Benign drops alone: 0 lost, no rule cites them, and on this veth
	// bed the retransmits were spurious.
	benign := build(trial[:3])
	if got := benign.DropsLine(); !strings.HasPrefix(got, "0 lost; 102 benign TCP/socket discards") {
		t.Errorf("benign only: %q", got)
	}
	if ev := strings.Join(benign.Verdict(RuleSoftirq).Evidence, "\n"); strings.Contains(ev, "packets dropped") {
		t.Errorf("softirq-bound cites benign drops:\n%s", ev)
	}
	if got := benign.retxText(); !strings.Contains(got, "; no packet lost on this veth path (skb:kfree_skb): the retransmits were spurious") {
		t.Errorf("retransmits line %q lacks the no-loss note", got)
	}
	if strings.Contains(r.retxText(), "no packet lost") {
		t.Errorf("retransmits line %q says no loss with 16 lost", r.retxText())
	}

	// Five lost reasons: four named, "and 1 more reason".
	five := build([]trace.DropRow{{Reason: "NO_SOCKET", Packets: 5}, {Reason: "QDISC_DROP", Packets: 4}, {Reason: "CPU_BACKLOG", Packets: 3},
		{Reason: "SOCKET_RCVBUFF", Packets: 2}, {Reason: "NETFILTER_DROP", Packets: 1}})
	if got := five.DropsLine(); !strings.Contains(got, "SOCKET_RCVBUFF 2, and 1 more reason)") {
		t.Errorf("five reasons: %q", got)
	}
}
