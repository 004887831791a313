package analysis

import (
	"encoding/json"
	"strings"
	"testing"
)

// The JSON report carries the same figures as the Report, in decimal Gbit/s
// with units in keys, and null (not 0) for what was not measured.
func TestJSONReport(t *testing.T) {
	r := newFixture(true).build(t)
	m := jsonMap(t, r)
	app := m["throughput"].(map[string]any)["rx"].(map[string]any)["application"].(map[string]any)
	if got := app["peak_gbit_per_s"].(float64); !approxEq(got, 9.6) {
		t.Errorf("peak_gbit_per_s = %v, want 9.6", got)
	}
	if got := app["steady_state_gbit_per_s"].(float64); !approxEq(got, 8.8) {
		t.Errorf("steady_state_gbit_per_s = %v, want 8.8", got)
	}
	rtt := m["rtt"].(map[string]any)
	if rtt["p50_us"].(float64) != 60 || rtt["p99_us"].(float64) != 1000 {
		t.Errorf("rtt = %v", rtt)
	}
	re := m["retransmits"].(map[string]any)
	if re["sender_tcp_info_segments"].(float64) != 12 || re["receiver_segments"] != nil {
		t.Errorf("retransmits = %v: want sender 12, receiver null", re)
	}
	if re["flows_retransmit_segments"].(float64) != 7 || re["flows_retransmit_source"] != "flows.retransmits (BPF tcp_retransmit_skb)" {
		t.Errorf("retransmits = %v: want flows 7 from BPF tcp_retransmit_skb", re)
	}

	f := newFixture(false)
	f.cpus, f.flows = nil, nil
	off := f.build(t).JSON()
	b, _ := json.Marshal(off)
	s := string(b)
	for _, want := range []string{`"interface_bpf":null`, `"rtt":null`, `"busiest_cpu":null`, `"cpus":[]`, `"flows_retransmit_segments":null`,
		`"flows_retransmit_na":"no flows rows: probes off"`} {
		if !strings.Contains(s, want) {
			t.Errorf("probes-off JSON lacks %s: %s", want, s)
		}
	}
}

// Figures a run did not record are null in JSON, not 0: the kernel's min
// RTT when no row had min_rtt_us, the retransmit halves when no
// retransmit counter was recorded; recorded ones keep their values.
func TestJSONUnrecordedNull(t *testing.T) {
	if j := jsonRTT(&RTTSummary{P50Us: 60, MinUs: 30, MaxUs: 90, Samples: 4}); j.KernelMinUs != nil {
		t.Errorf("kernel_min_rtt_us %v without min_rtt_us rows, want null", *j.KernelMinUs)
	}
	if j := jsonRTT(&RTTSummary{P50Us: 60, MinUs: 30, KernelMinUs: 25}); j.KernelMinUs == nil || *j.KernelMinUs != 25 {
		t.Errorf("kernel_min_rtt_us %v, want 25", j.KernelMinUs)
	}
	r := &Report{}
	if j := jsonRetx(r); j.FirstHalf != nil || j.SecondHalf != nil {
		t.Errorf("no retransmit counter: halves %v %v, want null", j.FirstHalf, j.SecondHalf)
	}
	f := newFixture(true).build(t)
	if j := jsonRetx(f); j.FirstHalf == nil || j.SecondHalf == nil || *j.FirstHalf+*j.SecondHalf != 12 {
		t.Errorf("halves %v %v, want the sender's 12 split", j.FirstHalf, j.SecondHalf)
	}
}
