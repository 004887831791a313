package analysis

import (
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

func TestProbesOff(t *testing.T) {
	r := &Report{}
	if got := r.probesOff("no flows rows", "np_tcp_"); got != "no flows rows: probes off" {
		t.Errorf("empty manifest: %q", got)
	}
	r.Manifest.Probes = []trace.Probe{
		{Name: "np_nd_rx", Hook: "net:netif_receive_skb", Reason: "not selected (--probes)"},
		{Name: "np_tcp_probe", Hook: "tcp:tcp_probe", Attached: true},
		{Name: "np_tcp_retrans", Hook: "tcp:tcp_retransmit_skb", Reason: "tracepoint missing"},
	}
	for _, tc := range []struct {
		progs []string
		want  string
	}{
		{[]string{"np_nd_rx", "np_nd_tx"}, "bpf columns null: np_nd_rx not attached: not selected (--probes)"},
		{[]string{"np_tcp_"}, "bpf columns null"}, // one attached: cause unknown
		{[]string{"np_tcp_retrans"}, "bpf columns null: np_tcp_retrans not attached: tracepoint missing"},
		{[]string{"np_si_"}, "bpf columns null: probes off"},
	} {
		if got := r.probesOff("bpf columns null", tc.progs...); got != tc.want {
			t.Errorf("probesOff(%q) = %q, want %q", tc.progs, got, tc.want)
		}
	}
}

func TestIsPeer(t *testing.T) {
	for addr, want := range map[string]bool{
		"198.18.0.2": true, "2001:2::2": true, "ff02::16": false, "ff02::2": false, "::": false,
		"224.0.0.251": false, "0.0.0.0": false, "not-an-ip": true,
	} {
		if got := isPeer(addr); got != want {
			t.Errorf("isPeer(%q) = %v, want %v", addr, got, want)
		}
	}
}

// With the softirq probe not selected its columns hold 0: the report must
// print n/a with the manifest's reason (text and JSON), not 0%, and the
// softirq rule judges on NAPI alone.
func TestSoftirqProbeNotSelected(t *testing.T) {
	s := analysistest.Scenario{Intervals: 6, RateBps: flat(10e9), CPUs: 2, Softirq: hot(0.95)}
	m := s.Manifest()
	m.Probes = append(m.Probes, trace.Probe{Name: "np_si_entry", Hook: "irq:softirq_entry", Reason: "not selected (--probes)"})
	ifaces, cpus, flows, tr := s.Tables()
	for i := range cpus {
		cpus[i].NetRxSoftirqNs, cpus[i].NetTxSoftirqNs = 0, 0
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: tr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.SoftirqOff != "np_si_entry not attached: not selected (--probes)" {
		t.Errorf("SoftirqOff %q", r.SoftirqOff)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "NET_RX %, NET_TX %, ns/packet: n/a (np_si_entry not attached: not selected (--probes))") {
		t.Errorf("text lacks the n/a line:\n%s", b.String())
	}
	for _, c := range r.JSON().CPUs {
		if c.NetRxSharePct != nil || c.PacketCostNs != nil {
			t.Errorf("cpu %d: JSON NET_RX %v ns/packet %v, want null", c.CPU, c.NetRxSharePct, c.PacketCostNs)
		}
	}
	v := r.Verdict(RuleSoftirq)
	if v.Fired() || !strings.Contains(strings.Join(v.Evidence, "\n"), "judged on NAPI budget exhaustion only") {
		t.Errorf("softirq-bound %s: %s %q", v.Status, v.Summary, v.Evidence)
	}
}

// A delay line that released packets late is noted with its counts; a
// --probes selection is one note, not one per program.
func TestNotesDelayLineAndSelection(t *testing.T) {
	s := analysistest.Scenario{Intervals: 6, RateBps: flat(1e9)}
	m := s.Manifest()
	m.Config["delay_line"] = map[string]any{
		"a_to_b": map[string]any{"packets": float64(900), "late_packets": float64(300), "max_late_ns": float64(2.5e6)},
		"b_to_a": map[string]any{"packets": float64(100), "late_packets": float64(0), "max_late_ns": float64(0)},
	}
	m.Probes = append(m.Probes,
		trace.Probe{Name: "np_nd_rx", Reason: trace.ReasonNotSelected}, trace.Probe{Name: "np_nd_tx", Reason: trace.ReasonNotSelected},
		trace.Probe{Name: "np_tcp_retrans", Reason: "tracepoint missing"})
	ifaces, cpus, flows, tr := s.Tables()
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: tr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{
		"delay line (bench --rtt): 300 of 1000 packets (30.0%) released late (the user-space line's timer or scheduling), up to 2.50 ms late",
		"probes not selected (--probes): np_nd_rx, np_nd_tx; their figures are n/a",
		"probe np_tcp_retrans () not attached: tracepoint missing",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "CPU-bound") {
		t.Errorf("delay-line note blames the CPU:\n%s", notes)
	}
	if strings.Count(notes, "np_nd_rx") != 1 {
		t.Errorf("np_nd_rx noted more than once:\n%s", notes)
	}
}
