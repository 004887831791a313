package analysis

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
	"github.com/netprof/netprof/trace"
)

// iteratorOnly turns the scenario's flows rows into what the socket
// iterator alone records (netdev and tcp_probe not selected): no interface
// bytes or RTT histogram; the socket's payload counters, its latest RTT
// sample, srtt, cwnd and the kernel's min RTT. The payload is the rows'
// L2 bytes, so the expected rates are known exactly.
func iteratorOnly(t *testing.T, s analysistest.Scenario) (trace.Manifest, Tables, map[string]uint64) {
	t.Helper()
	m := s.Manifest()
	for _, p := range []string{"np_nd_rx", "np_nd_tx", "np_nd_napi", "np_tcp_probe", "np_tcp_retrans", "np_si_entry"} {
		m.Probes = append(m.Probes, trace.Probe{Name: p, Reason: trace.ReasonNotSelected})
	}
	m.Probes = append(m.Probes, trace.Probe{Name: "np_tcp_iter", Hook: "iter:tcp", Attached: true})
	ifaces, cpus, flows, tr := s.Tables()
	perFlow := map[string]uint64{} // src>dst (ip:port) -> payload bytes in the data direction, whole run
	for i := range flows {
		f := &flows[i]
		k := fmt.Sprintf("%s:%d>%s:%d", f.SrcAddr, f.SrcPort, f.DstAddr, f.DstPort)
		acked, received := f.TxBytes, f.RxBytes
		if f.Netns == analysistest.RecvNetns {
			acked = 0
			perFlow[k] += received
		} else {
			received = 0
			perFlow[k] += acked
			f.TCPLastRttUs = f.SrttUs
			segs := f.TxPackets
			f.TCPDataSegsOut = &segs
			perFlow["segments"] += segs
		}
		f.TCPBytesAcked, f.TCPBytesReceived = &acked, &received
		f.RxBytes, f.RxPackets, f.RxSkbs, f.RxWireBytes, f.TxBytes, f.TxPackets, f.TxSkbs, f.TxWireBytes = 0, 0, 0, 0, 0, 0, 0, 0
		f.Ifindex, f.Ifname, f.RTTSamples = 0, "", 0
		f.RTTMinUs, f.RTTP50Us, f.RTTP99Us, f.RTTMaxUs = nil, nil, nil, nil
	}
	for i := range ifaces {
		x := &ifaces[i]
		x.BpfRxBytes, x.BpfRxPackets, x.BpfRxSkbs, x.BpfRxWireBytes = nil, nil, nil, nil
		x.BpfTxBytes, x.BpfTxPackets, x.BpfTxSkbs, x.BpfTxWireBytes = nil, nil, nil, nil
	}
	for i := range cpus {
		cpus[i].NetRxSoftirqNs, cpus[i].NetRxSoftirqCount, cpus[i].NetTxSoftirqNs, cpus[i].NetTxSoftirqCount = nil, nil, nil, nil
		cpus[i].RxPackets, cpus[i].RxBytes, cpus[i].NapiPolls, cpus[i].NapiPackets, cpus[i].NapiBudgetExhausted = nil, nil, nil, nil, nil
	}
	return m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: tr}, perFlow
}

// With the socket iterator alone, each flow's direction and steady rate
// come from its payload counters (labelled payload), the RTT figures from
// its latest RTT samples and the kernel's min RTT, and the verdicts that
// need them judge instead of skipping.
func TestIteratorOnlyFlows(t *testing.T) {
	s := analysistest.Scenario{Intervals: 8, Streams: 2, RateBps: flat(4e9), RTTMinUs: 40, WindowRatio: 0.95, RetxFraction: 0.001}
	m, tabs, perFlow := iteratorOnly(t, s)
	r, err := BuildTables(m, tabs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Flows) != 4 {
		t.Fatalf("%d flows, want 4 (2 streams x 2 ends)", len(r.Flows))
	}
	steadySecs := r.steady().SteadyEnd.Sub(r.steady().SteadyStart).Seconds()
	for _, f := range r.Flows {
		sender := strings.HasPrefix(f.Src, analysistest.SenderAddr+":")
		if f.Sending != sender || !f.PayloadRate || !f.TCPBytes {
			t.Errorf("%s -> %s: sending %v payload rate %v, want sending %v from the payload counters", f.Src, f.Dst, f.Sending, f.PayloadRate, sender)
		}
		total := f.ReceivedBytes
		if sender {
			total = f.AckedBytes
		}
		if total != perFlow[f.Src+">"+f.Dst] {
			t.Errorf("%s: payload %d B, rows hold %d", f.Src, total, perFlow[f.Src+">"+f.Dst])
		}
		// flat rate: the steady rate is the whole run's per-interval rate
		want := float64(total) * 8 / float64(s.Intervals) // 1 s intervals
		if d := f.SteadyBps/want - 1; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: steady %.0f bit/s, want %.0f (steady window %.1f s)", f.Src, f.SteadyBps, want, steadySecs)
		}
	}
	if r.RTT == nil || !r.RTT.FromIterator || r.RTT.P50Us != 80 || r.RTT.KernelMinUs != 40 || r.RTT.Samples != uint64(2*s.Intervals) {
		t.Fatalf("RTT %+v, want the iterator's samples: p50 80 µs, kernel min 40 µs, %d samples", r.RTT, 2*s.Intervals)
	}
	if r.BDP.MinRTTUs != 40 {
		t.Errorf("BDP min RTT %d µs, want the kernel's 40", r.BDP.MinRTTUs)
	}
	wantVerdict(t, r, RuleHairpin, NotFired, "min RTT")
	if x := r.Retx; x.SegmentsSent != perFlow["segments"] || !strings.Contains(x.SegmentsSource, "tcp_data_segs_out") || x.Fraction <= 0 {
		t.Errorf("segments sent %d (%s), fraction %.4f; want the sending flows' %d data segments", x.SegmentsSent, x.SegmentsSource,
			x.Fraction, perFlow["segments"])
	}
	if v := r.Verdict(RuleWindow); v.Status == Skipped {
		t.Errorf("window rule skipped: %s", v.Summary)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(payload)", "steady rate (payload) = flows.tcp_bytes_acked (sending)",
		"flows.retransmits, socket iterator, total_retrans", "socket iterator's tcp_last_rtt_us"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	// The retransmits the iterator counted (growth of total_retrans) are
	// under a key that names no probe, with the source that counted them.
	var retx uint64
	for _, f := range tabs.Flows {
		retx += f.Retransmits
	}
	re := jsonMap(t, r)["retransmits"].(map[string]any)
	if _, old := re["bpf_tcp_retransmit_skb_segments"]; old || retx == 0 || re["flows_retransmit_segments"] != float64(retx) ||
		re["flows_retransmit_source"] != "flows.retransmits (socket iterator, total_retrans)" {
		t.Errorf("JSON retransmits %v: want flows_retransmit_segments %d from the socket iterator", re, retx)
	}
	for _, f := range r.JSON().Flows {
		if f.SteadyGbps == nil || !strings.HasPrefix(f.SteadyCounter, "payload") || f.AckedBytes == nil || f.TxBytes != nil {
			t.Errorf("JSON flow %s: steady %v (%q), acked %v, tx %v", f.Src, f.SteadyGbps, f.SteadyCounter, f.AckedBytes, f.TxBytes)
		}
	}
}

// No rule fires, no core is saturated and the host's CPUs are half idle:
// inconclusive still answers "softirq or wire?" — not this host — and,
// without a rated speed, says how to compare with it.
func TestInconclusiveNotHostBound(t *testing.T) {
	s := analysistest.Scenario{Intervals: 8, RateBps: flat(4e9), Softirq: hot(0.3), WindowRatio: 0.7,
		ProcStat: func(_, c int) (float64, float64) { return 0.2, 0.5 }}
	r := scen(t, s, Options{})
	v := r.Verdict(RuleInconclusive)
	if !v.Fired() || !strings.HasPrefix(v.Summary, "not host-bound: busiest core CPU 0 at 30.0%, host CPUs 50.0% busy") ||
		!strings.Contains(v.Summary, "outside this host") || !strings.HasSuffix(v.Summary, "give --link-speed to compare with the rated speed") {
		t.Errorf("inconclusive %s: %s", v.Status, v.Summary)
	}
	// The first screen carries what the run shows and what to measure next.
	out := summaryText(t, r)
	for prefix, want := range map[string]string{
		"  evidence: ": "  evidence: host CPUs 50.0% busy (/proc/stat, steady state); busiest core CPU 0: 30.0% in NET_RX " +
			"softirq (BPF), 50.0% busy (/proc/stat); steady state ",
		"  next: ": "  next: --link-speed: at >= 90.0% of it the wire is the ceiling; twice the streams, then netprof " +
			"analyze --compare of both runs: a limiter on the path stays flat as retransmits grow, a window limit " +
			"grows with the streams",
	} {
		if got := summaryLine(out, prefix); !strings.HasPrefix(got, want) {
			t.Errorf("line %q\n got %q\nwant %q...", prefix, got, want)
		}
	}
}

// The receiving streams' SO_INCOMING_CPU: the last measured value per
// stream, grouped by CPU (busiest first) with their share of the bytes;
// every stream on one CPU of several is called out, as are CPU changes.
func TestSteering(t *testing.T) {
	s := analysistest.Scenario{Intervals: 4, Streams: 3, CPUs: 2}
	m := s.Manifest()
	ifaces, cpus, flows, tr := s.Tables()
	var rows []trace.TrafficRow
	for i := range tr {
		x := tr[i]
		if x.Role == trace.RoleReceiver {
			cpu, napi := int32(1), uint32(0)
			if x.Stream == 2 && x.Time.Equal(tr[len(tr)-1].Time) {
				cpu = 0 // stream 2 moves to CPU 0 in the last interval
			}
			x.IncomingCPU, x.IncomingNapiID = &cpu, &napi
		}
		rows = append(rows, x)
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steering) != 3 || r.Steering[0].CPU != 0 || r.Steering[0].Stream != 2 || r.Steering[0].Moved != 1 {
		t.Fatalf("steering %+v", r.Steering)
	}
	if got := r.SteeringLine(); !strings.HasPrefix(got, "CPU 1: streams 0, 1 (66.7% of the bytes); CPU 0: stream 2 (33.3% of the bytes)") {
		t.Errorf("line %q", got)
	}
	for i := range rows {
		if c := rows[i].IncomingCPU; c != nil {
			*c = 1
		}
	}
	r, err = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.SteeringLine(); !strings.HasSuffix(got, "all 3 streams were received on CPU 1 of 2: RSS/RPS steered them together") {
		t.Errorf("line %q", got)
	}
	if j := r.JSON().ReceiveSteering; len(j) != 3 || j[0].CPU != 1 {
		t.Errorf("JSON %+v", j)
	}
}

// On a --peer bidir run the forward streams' receiver rows are the peer's
// (their incoming_cpu is the peer's CPU) and the reverse streams' this
// host's: Steering marks them, SteeringLine (and softirq-bound's evidence)
// keeps to this host's, PeerSteeringLine gives the peer's with the peer's
// CPU count from the manifest, and the text and JSON reports say "peer".
func TestPeerSteering(t *testing.T) {
	s := analysistest.Scenario{Intervals: 4, Streams: 2, CPUs: 2}
	m := s.Manifest()
	m.Config["peer"], m.Config["direction"] = "198.18.0.2:5000", "bidir"
	m.Config["cpu_intervals"] = map[string]any{"peer": []any{map[string]any{"cpu": map[string]any{"cpus": 4.0}}}}
	ifaces, cpus, flows, tr := s.Tables()
	var rows []trace.TrafficRow
	for _, x := range tr {
		if x.Role != trace.RoleReceiver {
			rows = append(rows, x)
			continue
		}
		peer, local := x, x
		pc, lc, napi := int32(3), int32(1), uint32(0)
		peer.IncomingCPU, peer.IncomingNapiID = &pc, &napi
		local.Stream += 2 // reverse stream: this host received it
		local.LocalAddr, local.RemoteAddr = x.RemoteAddr, x.LocalAddr
		local.IncomingCPU, local.IncomingNapiID = &lc, &napi
		rows = append(rows, peer, local)
	}
	r, err := BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steering) != 4 || r.Steering[0].Peer || r.Steering[0].Stream != 2 || !r.Steering[2].Peer || r.Steering[2].CPU != 3 {
		t.Fatalf("steering %+v", r.Steering)
	}
	if got := r.SteeringLine(); !strings.HasPrefix(got, "CPU 1: streams 2, 3 (100.0% of the bytes) — all 2 streams were received on CPU 1 of 2") {
		t.Errorf("line %q", got)
	}
	if got := r.PeerSteeringLine(); got != "peer CPU 3: streams 0, 1 (100.0% of the bytes) — all 2 streams were received on peer CPU 3 of 4: RSS/RPS steered them together" {
		t.Errorf("peer line %q", got)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n  peer receive steering (") || !strings.Contains(b.String(), "): peer CPU 3: streams 0, 1") {
		t.Errorf("text report without the peer's steering:\n%s", b.String())
	}
	if j := r.JSON().ReceiveSteering; len(j) != 4 || j[0].Peer || !j[3].Peer || j[3].CPU != 3 {
		t.Errorf("JSON %+v", j)
	}
	// Not a peer run: the same rows are all this host's.
	delete(m.Config, "peer")
	r, err = BuildTables(m, Tables{Ifaces: ifaces, CPUs: cpus, Flows: flows, Traffic: rows}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.PeerSteeringLine(); got != "" || len(r.Steering) != 4 || r.Steering[3].Peer {
		t.Errorf("local run: peer line %q, steering %+v", got, r.Steering)
	}
}
