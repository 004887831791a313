package analysis

import (
	"time"
)

// JSONReport is the machine-readable report (`--json`): every number is a
// number, every key names its unit (_gbit_per_s decimal 10^9 bit/s, _us,
// _pct, _bytes, _segments), and a figure that could not be computed is
// null with its reason in notes.
type JSONReport struct {
	RunDir      string          `json:"run_dir"`
	Status      string          `json:"status"`
	RunStart    time.Time       `json:"run_start"`
	RunEnd      time.Time       `json:"run_end"`
	Throughput  JSONThroughput  `json:"throughput"`
	CPUWindow   string          `json:"cpu_window"`
	CPUs        []JSONCPU       `json:"cpus"`
	BusiestCPU  *int            `json:"busiest_cpu"`
	RTT         *JSONRTT        `json:"rtt"`
	Retransmits JSONRetransmits `json:"retransmits"`
	Notes       []string        `json:"notes"`
}

// JSONThroughput holds the three counters' windows; nil when not measured.
type JSONThroughput struct {
	// Application is traffic.app_bytes of AppRole rows (payload).
	Application *JSONWindows `json:"application"`
	AppRole     string       `json:"application_role"`
	// InterfaceNetlink is ifaces.rx_bytes (netlink stats64, incl. L2
	// headers) of Interface; InterfaceBPF is ifaces.bpf_rx_bytes.
	Interface        string       `json:"interface"`
	InterfaceNetlink *JSONWindows `json:"interface_netlink_rx"`
	InterfaceBPF     *JSONWindows `json:"interface_bpf_rx"`
}

// JSONWindows is Windows in decimal Gbit/s.
type JSONWindows struct {
	PeakGbps        float64    `json:"peak_gbit_per_s"`
	PeakAt          *time.Time `json:"peak_interval_end"`
	SteadyGbps      float64    `json:"steady_state_gbit_per_s"`
	SteadyApprox    bool       `json:"steady_state_approximate"`
	WholeRunGbps    float64    `json:"whole_run_gbit_per_s"`
	ActiveStart     *time.Time `json:"active_window_start"`
	ActiveEnd       *time.Time `json:"active_window_end"`
	ActiveIntervals int        `json:"active_window_intervals"`
	TotalBytes      uint64     `json:"total_bytes"`
	Intervals       int        `json:"intervals"`
}

// JSONCPU is one CPU's NET_RX softirq share in percent of CPU time.
type JSONCPU struct {
	CPU            int     `json:"cpu"`
	NetRxSharePct  float64 `json:"net_rx_softirq_pct"`
	MaxIntervalPct float64 `json:"net_rx_softirq_max_interval_pct"`
}

// JSONRTT is RTTSummary with units in keys.
type JSONRTT struct {
	P50Us   uint32 `json:"p50_us"`
	P99Us   uint32 `json:"p99_us"`
	MinUs   uint32 `json:"min_us"`
	MaxUs   uint32 `json:"max_us"`
	Samples uint64 `json:"samples"`
}

// JSONRetransmits are TCP segments retransmitted over the run.
type JSONRetransmits struct {
	SenderTCPInfo *uint64 `json:"sender_tcp_info_segments"`
	BPF           *uint64 `json:"bpf_tcp_retransmit_skb_segments"`
	// Receiver is always null: retransmits are counted on the sender.
	Receiver *uint64 `json:"receiver_segments"`
}

// JSON returns the report in its machine-readable form.
func (r *Report) JSON() JSONReport {
	out := JSONReport{
		RunDir: r.Dir, Status: r.Manifest.Status, RunStart: r.RunStart, RunEnd: r.RunEnd,
		Throughput: JSONThroughput{
			Application: jsonWindows(r.App), AppRole: r.AppRole, Interface: r.IfaceName,
			InterfaceNetlink: jsonWindows(r.Iface), InterfaceBPF: jsonWindows(r.BpfIface),
		},
		CPUWindow:   r.CPUWindow,
		CPUs:        []JSONCPU{},
		Retransmits: JSONRetransmits{SenderTCPInfo: r.SenderRetransmits, BPF: r.FlowRetransmits},
		Notes:       append([]string{}, r.Notes...),
	}
	for _, c := range r.CPUs {
		out.CPUs = append(out.CPUs, JSONCPU{CPU: c.CPU, NetRxSharePct: 100 * c.Share, MaxIntervalPct: 100 * c.MaxShare})
	}
	if r.BusiestCPU >= 0 && len(r.CPUs) > 0 {
		b := r.BusiestCPU
		out.BusiestCPU = &b
	}
	if t := r.RTT; t != nil {
		out.RTT = &JSONRTT{P50Us: t.P50Us, P99Us: t.P99Us, MinUs: t.MinUs, MaxUs: t.MaxUs, Samples: t.Samples}
	}
	return out
}

func jsonWindows(w *Windows) *JSONWindows {
	if w == nil {
		return nil
	}
	return &JSONWindows{
		PeakGbps: w.PeakBps / 1e9, PeakAt: optTime(w.PeakAt),
		SteadyGbps: w.SteadyBps / 1e9, SteadyApprox: w.SteadyApprox,
		WholeRunGbps: w.WholeRunBps / 1e9,
		ActiveStart:  optTime(w.ActiveStart), ActiveEnd: optTime(w.ActiveEnd),
		ActiveIntervals: w.ActiveIntervals, TotalBytes: w.TotalBytes, Intervals: w.Intervals,
	}
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
