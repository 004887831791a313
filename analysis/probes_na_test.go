package analysis

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// selected builds s with the manifest listing every program, those whose
// name starts with one of off not attached (not selected with --probes),
// after mutate zeroes/nulls what those programs would have filled.
func selected(t *testing.T, s analysistest.Scenario, off []string, mutate func(ifaces []trace.IfaceRow, cpus []trace.CPURow, flows []trace.FlowRow) []trace.CPURow) *Report {
	t.Helper()
	m := s.Manifest()
	m.Probes = nil
	for _, name := range []string{"np_nd_rx", "np_nd_tx", "np_nd_napi", "np_si_entry", "np_si_exit", "np_tcp_probe", "np_tcp_retrans"} {
		p := trace.Probe{Name: name, Attached: true}
		for _, o := range off {
			if strings.HasPrefix(name, o) {
				p.Attached, p.Reason = false, trace.ReasonNotSelected
			}
		}
		m.Probes = append(m.Probes, p)
	}
	ifaces, cpus, flows, tr := s.Tables()
	cpus = mutate(ifaces, cpus, flows)
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: tr}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func reportText(t *testing.T, r *Report) string {
	t.Helper()
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// jsonFlows returns the JSON report's flows and peers as generic maps.
func jsonFlows(t *testing.T, r *Report) (flows, peers []map[string]any) {
	t.Helper()
	b, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Flows []map[string]any `json:"flows"`
		Peers []map[string]any `json:"peers"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Flows, out.Peers
}

func wantText(t *testing.T, text string, res ...string) {
	t.Helper()
	for _, re := range res {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("text lacks %q", re)
		}
	}
}

// bench --probes tcp: netdev (and softirq, napi) not selected. The flows'
// and peers' bytes and steady rates were never counted: n/a / null, with
// the programs named; no cpus rows: the reason names the programs.
func TestNetdevNotSelected(t *testing.T) {
	s := analysistest.Scenario{Intervals: 8, RateBps: flat(4e9)}
	r := selected(t, s, []string{"np_nd_", "np_si_"}, func(ifaces []trace.IfaceRow, _ []trace.CPURow, flows []trace.FlowRow) []trace.CPURow {
		for i := range ifaces {
			x := &ifaces[i]
			x.BpfRxBytes, x.BpfRxPackets, x.BpfRxSkbs, x.BpfRxWireBytes = nil, nil, nil, nil
			x.BpfTxBytes, x.BpfTxPackets, x.BpfTxSkbs, x.BpfTxWireBytes = nil, nil, nil, nil
		}
		for i := range flows {
			flows[i].TxBytes, flows[i].RxBytes, flows[i].TxPackets, flows[i].RxPackets = 0, 0, 0, 0
		}
		return nil
	})
	text := reportText(t, r)
	const nd = `np_nd_rx not attached: not selected \(--probes\)`
	wantText(t, text,
		`tx bytes, rx bytes, steady rate: n/a \(flows tx/rx bytes not counted: `+nd+`\)`,
		`(?m)^  tx bytes, rx bytes: n/a \(flows tx/rx bytes not counted: `+nd+`\)`,
		`198\.18\.0\.2\s+\d+\s+\d+\s+\d+\s+\d+\s+n/a\s+n/a`, // peers row
		`sending\s+yes\s+n/a\s+n/a\s+n/a\s`,                 // flows row
		`interface tx \(bpf, veth-a\)[ n/a]+\(bpf columns null: np_nd_tx not attached`,
		`interface rx \(bpf, veth-b\)[ n/a]+\(bpf columns null: np_nd_rx not attached`,
		`n/a \(no cpus rows: np_(si_entry|nd_rx) not attached: not selected \(--probes\)\)`,
		`window/BDP-limited: skipped - no sending flow with .*steady-state bytes \(flows tx/rx bytes not counted: `+nd,
		`sender/application-limited: skipped - no sending flow with .*\(flows tx/rx bytes not counted: `+nd,
	)
	if strings.Contains(strings.Join(r.Notes, "\n"), "probes off: no softirq") {
		t.Errorf("notes say probes off:\n%s", strings.Join(r.Notes, "\n"))
	}
	flows, peers := jsonFlows(t, r)
	for _, f := range flows {
		for _, k := range []string{"tx_bytes", "rx_bytes", "steady_state_gbit_per_s"} {
			if f[k] != nil {
				t.Errorf("flow %v: JSON %s = %v, want null", f["src"], k, f[k])
			}
		}
	}
	for _, p := range peers {
		if p["tx_bytes"] != nil || p["rx_bytes"] != nil {
			t.Errorf("peer %v: JSON bytes %v %v, want null", p["peer"], p["tx_bytes"], p["rx_bytes"])
		}
	}
}

// bench --probes netdev,napi: tcp not selected. Retransmits, cwnd and
// srtt were never sampled: n/a / null.
func TestTCPNotSelected(t *testing.T) {
	s := analysistest.Scenario{Intervals: 8, RateBps: flat(4e9)}
	r := selected(t, s, []string{"np_tcp_", "np_si_"}, func(_ []trace.IfaceRow, cpus []trace.CPURow, flows []trace.FlowRow) []trace.CPURow {
		for i := range flows {
			x := &flows[i]
			x.Retransmits, x.RTTSamples = 0, 0
			x.RTTMinUs, x.RTTP50Us, x.RTTP99Us, x.RTTMaxUs, x.SrttUs, x.SndCwnd, x.MinRttUs, x.MSS = nil, nil, nil, nil, nil, nil, nil, nil
		}
		return cpus
	})
	text := reportText(t, r)
	wantText(t, text,
		`(?m)sending\s+yes\s+\d+\s+\d+\s+[\d.]+\s+-\s.*\sn/a$`,
		`retx: n/a \(probe np_tcp_retrans not attached: not selected \(--probes\)\)`,
		`window, srtt, cwnd, mss: n/a \(flows snd_cwnd, mss, srtt not sampled: np_tcp_probe not attached: not selected \(--probes\)\)`,
		`window/BDP-limited: skipped - .*np_tcp_probe not attached`,
	)
	flows, _ := jsonFlows(t, r)
	for _, f := range flows {
		for _, k := range []string{"retransmits_segments", "snd_cwnd_segments", "srtt_us", "mss_bytes"} {
			if f[k] != nil {
				t.Errorf("flow %v: JSON %s = %v, want null", f["src"], k, f[k])
			}
		}
		if f["tx_bytes"] == nil {
			t.Errorf("flow %v: tx_bytes null with netdev on", f["src"])
		}
	}
}

// On a default run a receiving flow has no cwnd/mss/srtt samples (the
// text prints "-"): JSON null, not 0; a sending flow keeps its figures.
func TestReceivingFlowJSONNulls(t *testing.T) {
	r := scen(t, analysistest.Scenario{Intervals: 6}, Options{})
	flows, _ := jsonFlows(t, r)
	var recv, send int
	for _, f := range flows {
		if f["sending"] == true {
			send++
			if f["snd_cwnd_segments"] == nil || f["retransmits_segments"] == nil {
				t.Errorf("sending flow %v lost its figures: %v", f["src"], f)
			}
			continue
		}
		recv++
		for _, k := range []string{"snd_cwnd_segments", "mss_bytes", "srtt_us"} {
			if f[k] != nil {
				t.Errorf("receiving flow %v: JSON %s = %v, want null", f["src"], k, f[k])
			}
		}
	}
	if recv == 0 || send == 0 {
		t.Fatalf("scenario has %d receiving, %d sending flows", recv, send)
	}
}

// bench --rtt 10ms --window 256KiB under BBR: the flows table uses the
// window the verdict uses (the socket buffer, smaller than snd_cwnd x
// mss), in binary units, and the same ratio.
func TestFlowsTableSocketWindow(t *testing.T) {
	s := analysistest.Scenario{Streams: 2, RateBps: flat(0.454e9), WindowRatio: 0.34, RTTMinUs: 10040,
		RTTP50Us: func(int) uint32 { return 10600 }}
	m := s.Manifest()
	m.Config["socket_options"] = map[string]any{"window_bytes": float64(256 << 10)}
	ifaces, cpus, flows, traffic := s.Tables()
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: traffic}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := reportText(t, r)
	wantText(t, text,
		`sending\s+yes\s+\d+\s+\d+\s+0\.23\s+256 KiB \(--window\)\s+\d+\s+0\.20\s+1\.15\s`,
		`window 256 KiB \(the socket buffer \(--window\), smaller than its snd_cwnd x mss\)`,
		`median ratio 1\.15`,
	)
	if strings.Contains(text, "snd_cwnd x mss, at most the socket buffer") || strings.Contains(text, "262.14 KB") {
		t.Errorf("socket buffer labelled snd_cwnd x mss or in decimal units:\n%s", text)
	}
	fl, _ := jsonFlows(t, r)
	for _, f := range fl {
		if f["sending"] == true && f["window_bytes"] != float64(256<<10) {
			t.Errorf("flow %v: JSON window_bytes %v, want the socket buffer", f["src"], f["window_bytes"])
		}
	}
}

// A counter without figures keeps every column of the throughput table:
// the rows below it stay aligned with the header, "(approx.)" or not.
func TestThroughputTableAligned(t *testing.T) {
	r := scen(t, analysistest.Scenario{Intervals: 10, RateBps: flat(10e9)}, Options{})
	r.Rx.Rates[2].W, r.Rx.Rates[2].Missing = nil, "bpf columns null: np_nd_rx not attached"
	r.Rx.Rates[1].W.SteadyApprox = true
	var header, wire string
	for _, l := range strings.Split(reportText(t, r), "\n") {
		switch {
		case strings.HasPrefix(l, "throughput rx"):
			header = l
		case strings.HasPrefix(l, "wire estimate rx"):
			wire = l
		}
	}
	col := strings.Index(header, "whole run")
	if col < 0 || len(wire) <= col || wire[col-1] != ' ' || wire[col] == ' ' {
		t.Errorf("wire row not aligned with the header's whole run column:\n%s\n%s", header, wire)
	}
}

// bench with the default probes (tcpsock, sockstate): no netdev, napi or
// softirq probe, so cpus.rx_packets, napi_* and net_*_softirq_ns are
// null in every row. The per-CPU rx packets, NAPI figures and the
// per-interval busiest figures were never measured: n/a with the
// manifest's reason in text, null in JSON (cpu_figures_na says why),
// never 0. With the probes on, the same scenario gives the counts (CPU 0
// received every packet: its rx_packets are the rows' sum; CPU 1's are a
// measured 0 and stay 0).
func TestDefaultProbesCPUFiguresNA(t *testing.T) {
	s := analysistest.Scenario{Intervals: 8, RateBps: flat(4e9), ProcStat: func(_, c int) (float64, float64) { return 0.2 + 0.1*float64(c), 0.9 }}
	const si, nd, napi = "np_si_entry not attached: not selected (--probes)", "np_nd_rx not attached: not selected (--probes)",
		"np_nd_napi not attached: not selected (--probes)"
	r := selected(t, s, []string{"np_nd_", "np_si_", "np_tcp_"}, func(_ []trace.IfaceRow, cpus []trace.CPURow, _ []trace.FlowRow) []trace.CPURow {
		for i := range cpus {
			x := &cpus[i]
			x.NetRxSoftirqNs, x.NetRxSoftirqCount, x.NetTxSoftirqNs, x.NetTxSoftirqCount = nil, nil, nil, nil
			x.RxPackets, x.RxBytes, x.NapiPolls, x.NapiPackets, x.NapiBudgetExhausted = nil, nil, nil, nil, nil
		}
		return cpus
	})
	if r.SoftirqOff != si || r.RxPacketsOff != nd || r.NapiOff != napi {
		t.Errorf("off reasons %q, %q, %q", r.SoftirqOff, r.RxPacketsOff, r.NapiOff)
	}
	text := reportText(t, r)
	wantText(t, text,
		`(?m)^  0\s+n/a\s+20\.0\s+90\.0\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a$`,
		`(?m)^  1\s+n/a\s+30\.0\s+90\.0\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a\s+n/a$`,
		`busiest in \(largest NET_RX share per interval\): n/a \(`+regexp.QuoteMeta(si)+`\)`,
		`rx packets: n/a \(`+regexp.QuoteMeta(nd)+`\)`,
		`NAPI budget exhausted %: n/a \(`+regexp.QuoteMeta(napi)+`\)`,
	)
	m := jsonMap(t, r)
	cpus := m["cpus"].([]any)
	if len(cpus) != 2 {
		t.Fatalf("JSON cpus %v", cpus)
	}
	for _, c := range cpus {
		c := c.(map[string]any)
		for _, k := range []string{"rx_packets", "napi_polls", "napi_budget_exhausted", "napi_budget_exhausted_pct", "busiest_intervals",
			"net_rx_softirq_pct", "net_rx_ns_per_packet"} {
			if v, ok := c[k]; !ok || v != nil {
				t.Errorf("cpu %v: JSON %s = %v (present %v), want null", c["cpu"], k, v, ok)
			}
		}
		if c["proc_stat_all_softirq_pct"] == nil {
			t.Errorf("cpu %v: /proc/stat softirq null although recorded", c["cpu"])
		}
	}
	if v, ok := m["busiest_cpu_per_interval_median_pct"]; !ok || v != nil {
		t.Errorf("busiest_cpu_per_interval_median_pct = %v, want null", v)
	}
	na, _ := m["cpu_figures_na"].(map[string]any)
	for k, want := range map[string]string{"rx_packets": nd, "napi_polls": napi, "napi_budget_exhausted": napi,
		"busiest_intervals": si, "busiest_cpu_per_interval_median_pct": si} {
		if na[k] != want {
			t.Errorf("cpu_figures_na[%s] = %v, want %q", k, na[k], want)
		}
	}

	on := scen(t, s, Options{})
	_, cpuRows, _, _ := s.Tables()
	var want0 uint64
	for _, x := range cpuRows {
		if x.CPU == 0 && inWindow(x.Time, x.IntervalNs, on.CPUWindowStart, on.CPUWindowEnd) {
			want0 += *x.RxPackets
		}
	}
	mo := jsonMap(t, on)
	c0, c1 := mo["cpus"].([]any)[0].(map[string]any), mo["cpus"].([]any)[1].(map[string]any)
	if want0 == 0 || c0["rx_packets"] != float64(want0) || c1["rx_packets"] != float64(0) || c1["napi_polls"] != float64(0) ||
		c0["busiest_intervals"] != float64(on.CPUIntervals) || mo["busiest_cpu_per_interval_median_pct"] == nil || mo["cpu_figures_na"] != nil {
		t.Errorf("probes on: cpu0 %v, cpu1 %v (want rx_packets %d and 0), median %v, na %v", c0, c1, want0,
			mo["busiest_cpu_per_interval_median_pct"], mo["cpu_figures_na"])
	}
}
