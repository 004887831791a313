package analysis

import (
	"fmt"
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
		cpus[i].NetRxSoftirqNs, cpus[i].NetTxSoftirqNs = nil, nil
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
	if !strings.Contains(b.String(), "NET_RX %, NET_TX %, max interval NET_RX %, ns/packet, busiest in (largest NET_RX share per interval): "+
		"n/a (np_si_entry not attached: not selected (--probes))") {
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

// Without the softirq probe (its columns null) and with /proc/stat in the
// rows, the hot core is the CPU with the most softirq of every vector,
// labelled as such, and softirq-bound judges on it: fired at 95% on CPU 1,
// not fired at 40%.
func TestHotCoreFromProcStat(t *testing.T) {
	for _, tc := range []struct {
		soft  float64
		fired bool
	}{{0.95, true}, {0.40, false}} {
		s := analysistest.Scenario{Intervals: 6, RateBps: flat(10e9), CPUs: 3, Softirq: hot(0.99),
			ProcStat: func(_, c int) (float64, float64) {
				if c == 1 {
					return tc.soft, 1
				}
				return 0.05, 0.3
			}}
		m := s.Manifest()
		m.Probes = append(m.Probes, trace.Probe{Name: "np_si_entry", Hook: "irq:softirq_entry", Reason: trace.ReasonNotSelected},
			trace.Probe{Name: "np_nd_napi", Hook: "napi:napi_poll", Reason: trace.ReasonNotSelected})
		ifaces, cpus, flows, tr := s.Tables()
		for i := range cpus {
			cpus[i].NetRxSoftirqNs, cpus[i].NetRxSoftirqCount, cpus[i].NetTxSoftirqNs, cpus[i].NetTxSoftirqCount = nil, nil, nil, nil
			cpus[i].NapiPolls, cpus[i].NapiPackets, cpus[i].NapiBudgetExhausted = nil, nil, nil
		}
		r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: tr}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.HotSource != HotAllSoftirq || r.BusiestCPU != 1 {
			t.Errorf("proc softirq %.2f: hot source %q, busiest CPU %d, want /proc/stat and CPU 1", tc.soft, r.HotSource, r.BusiestCPU)
		}
		v := r.Verdict(RuleSoftirq)
		ev := strings.Join(v.Evidence, "\n")
		if v.Fired() != tc.fired || !strings.Contains(ev, fmt.Sprintf("busiest CPU 1: softirq of every vector %s", pct(tc.soft))) {
			t.Errorf("proc softirq %.2f: softirq-bound %s: %s\n%s", tc.soft, v.Status, v.Summary, ev)
		}
		var b strings.Builder
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), fmt.Sprintf("busiest CPU: 1 (softirq of every vector %s of the steady state, /proc/stat", pct(tc.soft))) {
			t.Errorf("text lacks the busiest CPU line:\n%s", b.String())
		}
	}
}

// Without the napi probe, NET_RX runs that stopped with packets left
// (softnet time squeezes per /proc/softirqs NET_RX run) stand in for NAPI
// budget exhaustion: CPU 1 squeezed in 80% of its runs fires softirq-bound
// below the softirq-share threshold; 20% does not.
func TestSqueezedRunsWithoutNapi(t *testing.T) {
	for _, tc := range []struct {
		squeezed uint64
		fired    bool
	}{{800, true}, {200, false}} {
		s := analysistest.Scenario{Intervals: 6, RateBps: flat(10e9), CPUs: 2, Softirq: hot(0.99),
			ProcStat: func(_, c int) (float64, float64) { return 0.5, 1 }}
		m := s.Manifest()
		m.Probes = append(m.Probes, trace.Probe{Name: "np_si_entry", Reason: trace.ReasonNotSelected},
			trace.Probe{Name: "np_nd_napi", Reason: trace.ReasonNotSelected})
		ifaces, cpus, flows, tr := s.Tables()
		for i := range cpus {
			c := &cpus[i]
			c.NetRxSoftirqNs, c.NetRxSoftirqCount, c.NetTxSoftirqNs, c.NetTxSoftirqCount = nil, nil, nil, nil
			c.NapiPolls, c.NapiPackets, c.NapiBudgetExhausted = nil, nil, nil
			runs, sq, zero, proc := uint64(1000), uint64(0), uint64(0), uint64(50_000)
			if c.CPU == 1 {
				sq = tc.squeezed
			}
			c.SoftnetProcessed, c.SoftnetDropped, c.SoftnetTimeSqueeze, c.SoftnetReceivedRPS, c.SoftnetFlowLimitDrops = &proc, &zero, &sq, &zero, &zero
			c.ProcNetRxSoftirqs = &runs
		}
		r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: tr}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := r.Verdict(RuleSoftirq)
		ev := strings.Join(v.Evidence, "\n")
		q := float64(tc.squeezed) / 1000
		if v.Fired() != tc.fired || (tc.fired && !strings.Contains(ev, fmt.Sprintf("CPU 1 (%s of ", pct(q)))) {
			t.Errorf("%.0f%% squeezed: softirq-bound %s: %s\n%s", 100*q, v.Status, v.Summary, ev)
		}
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
