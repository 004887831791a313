package analysis

import (
	"fmt"
	"time"

	"github.com/netprof/netprof/trace"
)

// CPUShare is one CPU's NET_RX softirq share of time.
type CPUShare struct {
	// CPU is the CPU number (cpus.cpu).
	CPU int
	// Share is sum(net_rx_softirq_ns) / sum(interval_ns) over the report's
	// CPU window (Report.CPUWindow), as a fraction in [0, 1].
	Share float64
	// MaxShare is the largest single-interval net_rx_softirq_ns /
	// interval_ns within the same window, as a fraction; MaxAt is the end of
	// that interval.
	MaxShare float64
	MaxAt    time.Time
	// Intervals is the number of cpus rows of this CPU in the window.
	Intervals int
}

// RTTSummary summarises TCP RTT over the run from the flows table (raw RTT
// samples, tp->rack.rtt_us, taken at the tcp_probe tracepoint when an ACK
// acknowledges new data). It is an APPROXIMATION built
// from per-interval summaries, not from the raw samples: each flows row with
// rtt_samples > 0 contributes its rtt_p50_us and rtt_p99_us weighted by its
// rtt_samples. It covers every flows row with samples, not only the
// generator's streams (the flows table does not mark them), so other TCP
// traffic seen by the probes is included.
type RTTSummary struct {
	// P50Us is the samples-weighted median of the rows' rtt_p50_us, µs.
	P50Us uint32
	// P99Us is the samples-weighted 99th percentile of the rows'
	// rtt_p99_us, µs.
	P99Us uint32
	// MinUs is the smallest rtt_min_us and MaxUs the largest rtt_max_us, µs.
	MinUs, MaxUs uint32
	// Samples is the sum of rtt_samples; Rows the number of flows rows used.
	Samples uint64
	Rows    int
}

// Report holds the figures of one run. Rates are in bit/s.
type Report struct {
	// Dir is the run directory, set by the caller (Build does not know it).
	Dir string
	// Manifest is the run's manifest.json.
	Manifest trace.Manifest
	// RunStart and RunEnd bound the run: the manifest's start/end, or the
	// first interval start / last row time when the manifest lacks them.
	RunStart, RunEnd time.Time

	// App is the application payload throughput: traffic.app_bytes of the
	// AppRole rows summed per interval. AppRole is "receiver" (what the
	// receiver read) unless the trace has no receiver rows, then "sender"
	// (what the sender wrote). App is nil without traffic rows.
	App     *Windows
	AppRole string

	// Iface is the receiving interface's ifaces.rx_bytes (netlink stats64,
	// includes L2 headers). IfaceName names it: the manifest interface with
	// Role "receiver", else the interface with the largest rx_bytes total.
	// Iface is nil without ifaces rows.
	Iface     *Windows
	IfaceName string
	// BpfIface is the same interface's ifaces.bpf_rx_bytes
	// (netif_receive_skb); nil when the column is null (probes off).
	BpfIface *Windows

	// CPUs holds each CPU's NET_RX softirq share, sorted by CPU, over
	// CPUWindow: App's active window, or the whole run when App is nil or
	// has no active window. CPUWindowStart/End bound that window.
	CPUs                         []CPUShare
	CPUWindow                    string
	CPUWindowStart, CPUWindowEnd time.Time
	// BusiestCPU is the CPU with the largest Share (-1 without cpus rows).
	BusiestCPU int

	// RTT summarises flows RTT; nil when no row has rtt_samples > 0.
	RTT *RTTSummary
	// SenderRetransmits is the sum of traffic.tcp_retransmits (TCP_INFO
	// tcpi_total_retrans deltas, segments) over role "sender" rows; nil when
	// no sender row has the column set.
	SenderRetransmits *uint64
	// FlowRetransmits is the sum of flows.retransmits (tcp_retransmit_skb,
	// segments) over the run; nil when probes were off.
	FlowRetransmits *uint64

	// Notes are caveats for the reader, e.g. "probes off: ...".
	Notes []string

	// reasons says why a figure is missing, keyed by figure name.
	reasons map[string]string
}

// Figure names used as keys for missing-data reasons.
const (
	figApp      = "app"
	figIface    = "iface"
	figBpf      = "bpf"
	figCPU      = "cpu"
	figRTT      = "rtt"
	figSndRetx  = "sender_retx"
	figFlowRetx = "flow_retx"
)

// Build computes a Report from a run's manifest and table rows. It does no
// I/O. It returns an error only when the manifest's schema_version is newer
// than this package understands (trace.SchemaVersion); missing tables give
// nil figures with a reason, never zeros.
func Build(m trace.Manifest, ifaces []trace.IfaceRow, cpus []trace.CPURow,
	flows []trace.FlowRow, traffic []trace.TrafficRow) (*Report, error) {
	if m.SchemaVersion > trace.SchemaVersion {
		return nil, fmt.Errorf("build report: schema_version %d is newer than supported %d",
			m.SchemaVersion, trace.SchemaVersion)
	}
	r := &Report{Manifest: m, BusiestCPU: -1, reasons: map[string]string{}}
	r.setBounds(ifaces, cpus, flows, traffic)
	r.buildApp(traffic)
	r.buildIface(ifaces)
	r.buildCPUs(cpus)
	r.buildRTT(flows)
	r.buildRetransmits(flows, traffic)
	r.noteProbesOff(len(cpus), len(flows))
	r.noteManifest()
	return r, nil
}

// setBounds sets RunStart/RunEnd from the manifest, falling back to the
// rows' first interval start and last interval end.
func (r *Report) setBounds(ifaces []trace.IfaceRow, cpus []trace.CPURow,
	flows []trace.FlowRow, traffic []trace.TrafficRow) {
	var b bounds
	for _, x := range ifaces {
		b.add(x.Time, x.IntervalNs)
	}
	for _, x := range cpus {
		b.add(x.Time, x.IntervalNs)
	}
	for _, x := range flows {
		b.add(x.Time, x.IntervalNs)
	}
	for _, x := range traffic {
		b.add(x.Time, x.IntervalNs)
	}
	r.RunStart, r.RunEnd = r.Manifest.Start, r.Manifest.End
	if r.RunStart.IsZero() {
		r.RunStart = b.start
		r.note("manifest has no start time: run starts at the first interval's start")
	}
	if r.RunEnd.IsZero() {
		r.RunEnd = b.end
		r.note("manifest has no end time (run interrupted or still recording): run ends at the last row's time")
	}
}

// buildApp sets App from receiver (else sender) traffic rows.
func (r *Report) buildApp(traffic []trace.TrafficRow) {
	if len(traffic) == 0 {
		r.reasons[figApp] = "no traffic rows"
		return
	}
	role := trace.RoleReceiver
	if !hasRole(traffic, role) {
		role = trace.RoleSender
		r.note("no receiver traffic rows: application figures are the sender's app_bytes (written, not received)")
	}
	if !hasRole(traffic, role) {
		r.reasons[figApp] = "no receiver or sender traffic rows"
		return
	}
	var s series
	for _, x := range traffic {
		if x.Role == role {
			s.add(x.Time, x.IntervalNs, x.AppBytes)
		}
	}
	r.AppRole = role
	r.App = r.windows(s, "application ("+role+" payload)")
}

// buildIface picks the receiving interface and sets Iface and BpfIface.
func (r *Report) buildIface(ifaces []trace.IfaceRow) {
	if len(ifaces) == 0 {
		r.reasons[figIface] = "no ifaces rows"
		r.reasons[figBpf] = "no ifaces rows"
		return
	}
	key := r.receiverIface(ifaces)
	r.IfaceName = key.name
	var rx, bpf series
	nullBpf, rows := 0, 0
	for _, x := range ifaces {
		if !key.match(x) {
			continue
		}
		rows++
		rx.add(x.Time, x.IntervalNs, x.RxBytes)
		if x.BpfRxBytes == nil {
			nullBpf++
			continue
		}
		bpf.add(x.Time, x.IntervalNs, *x.BpfRxBytes)
	}
	r.Iface = r.windows(rx, "interface rx (netlink, "+key.name+")")
	switch {
	case nullBpf == rows:
		r.reasons[figBpf] = "bpf_rx_bytes null: probes off"
	case nullBpf > 0:
		r.note(fmt.Sprintf("bpf_rx_bytes null in %d of %d intervals of %s: bpf figures cover the others only",
			nullBpf, rows, key.name))
		fallthrough
	default:
		r.BpfIface = r.windows(bpf, "interface rx (bpf, "+key.name+")")
	}
}

// receiverIface returns the interface marked "receiver" in the manifest when
// ifaces has rows for it, else the one with the largest rx_bytes total.
func (r *Report) receiverIface(ifaces []trace.IfaceRow) ifaceKey {
	for _, mi := range r.Manifest.Interfaces {
		if mi.Role != trace.RoleReceiver {
			continue
		}
		k := ifaceKey{name: mi.Name, netns: mi.Netns}
		for _, x := range ifaces {
			if k.match(x) {
				return k
			}
		}
		r.note("manifest's receiver interface " + mi.Name + " has no ifaces rows")
	}
	k := largestRx(ifaces)
	r.note("no interface marked receiver: using " + k.name + " (largest rx_bytes total)")
	return k
}

// windows computes s's windows over the run and notes an approximate steady
// state under the given label.
func (r *Report) windows(s series, label string) *Windows {
	w := ComputeWindows(s.points(), r.RunStart, r.RunEnd)
	if w.HasActive() && w.SteadyApprox {
		r.note(fmt.Sprintf("steady state approximate (%s): active window has %d interval(s), median of all of them",
			label, w.ActiveIntervals))
	}
	return &w
}

// note appends a caveat.
func (r *Report) note(s string) { r.Notes = append(r.Notes, s) }

// noteProbesOff notes which BPF-derived figures are missing because the
// cpus and/or flows tables are empty.
func (r *Report) noteProbesOff(cpuRows, flowRows int) {
	switch {
	case cpuRows == 0 && flowRows == 0:
		r.note("probes off: no softirq/RTT figures (cpus and flows tables empty)")
	case cpuRows == 0:
		r.note("probes off: no softirq figures (cpus table empty)")
	case flowRows == 0:
		r.note("probes off: no RTT or BPF retransmit figures (flows table empty)")
	}
}

// noteManifest adds notes on the run's status and detached probes.
func (r *Report) noteManifest() {
	if st := r.Manifest.Status; st != "" && st != "ok" {
		r.note("run status: " + st)
	}
	for _, p := range r.Manifest.Probes {
		if !p.Attached {
			r.note(fmt.Sprintf("probe %s (%s) not attached: %s", p.Name, p.Hook, orDash(p.Reason)))
		}
	}
}

// hasRole reports whether any traffic row has the role.
func hasRole(traffic []trace.TrafficRow, role string) bool {
	for _, x := range traffic {
		if x.Role == role {
			return true
		}
	}
	return false
}

// orDash returns s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
