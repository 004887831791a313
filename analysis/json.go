package analysis

import (
	"math"
	"time"
)

// JSONReport is the machine-readable report (`--json`): every number is a
// number, every key names its unit (_gbit_per_s decimal 10^9 bit/s, _us,
// _pct, _bytes, _segments, _ns), and a figure that could not be computed
// is null with its reason in notes or the verdicts.
type JSONReport struct {
	RunDir      string         `json:"run_dir"`
	Status      string         `json:"status"`
	RunStart    time.Time      `json:"run_start"`
	RunEnd      time.Time      `json:"run_end"`
	RatedGbps   *float64       `json:"rated_link_speed_gbit_per_s"`
	RatedSource string         `json:"rated_link_speed_source,omitempty"`
	Throughput  JSONThroughput `json:"throughput"`
	CPUWindow   string         `json:"cpu_window"`
	CPUs        []JSONCPU      `json:"cpus"`
	// CPUsNeverOnline counts the CPUs left out of cpus and busiest_cpu:
	// possible (or with rows) and never online during the run (notes
	// says so).
	CPUsNeverOnline int  `json:"cpus_never_online"`
	BusiestCPU      *int `json:"busiest_cpu"`
	// BusiestMedian is the median over the CPU window's intervals of the
	// largest NET_RX share of each; null without the softirq probe.
	BusiestMedian *float64 `json:"busiest_cpu_per_interval_median_pct"`
	// CPUFiguresNA names the per-CPU figures (keys of cpus[], and
	// busiest_cpu_per_interval_median_pct) that are null because their
	// probe did not run, with the reason; omitted when all were measured.
	CPUFiguresNA map[string]string `json:"cpu_figures_na,omitempty"`
	HostCPU      *JSONHostCPU      `json:"host_cpu"`
	RTT          *JSONRTT          `json:"rtt"`
	Peers        []JSONPeer        `json:"peers"`
	Flows        []JSONFlow        `json:"flows"`
	// ControlFlows and ControlFlowBytes are the flows left out of Flows
	// (an end multicast or unspecified: IPv6 MLD, neighbour discovery),
	// and their L2 bytes over the whole run.
	ControlFlows     int             `json:"control_flows"`
	ControlFlowBytes uint64          `json:"control_flow_bytes"`
	BDP              JSONBDP         `json:"bdp"`
	Retransmits      JSONRetransmits `json:"retransmits"`
	// FlowTable and SocketTable are the BPF flow and TCP socket tables
	// over the run; null when the trace has no rows of them.
	FlowTable   *JSONFlowTable   `json:"flow_table"`
	SocketTable *JSONSocketTable `json:"tcp_socket_table"`
	// ProbeCost is what netprof's BPF programs took over cpu_window; null
	// when not measured (probe_cost_na says why).
	ProbeCost *JSONProbeCost `json:"probe_cost"`
	// ReceiveSteering is each receiving generator stream's
	// SO_INCOMING_CPU / SO_INCOMING_NAPI_ID at its last measured interval
	// (traffic.incoming_cpu), this host's streams and then, on a --peer
	// run, the peer's (peer true: its CPUs); empty when not recorded.
	ReceiveSteering []JSONSteering `json:"receive_steering"`
	ProbeCostNA     string         `json:"probe_cost_na,omitempty"`
	// Drops are the kernel's packet drops by reason (skb:kfree_skb, whole
	// run, most first); null when the drops probe did not run (DropsNA).
	Drops   []JSONDrop `json:"drops"`
	DropsNA string     `json:"drops_na,omitempty"`
	// DropsLost and DropsBenign sum the drops' packets by class (lost:
	// every reason not known to be benign; benign: TCP discarding
	// duplicates, sockets freeing what they held at teardown); null when
	// drops is.
	DropsLost   *uint64 `json:"drops_lost_packets"`
	DropsBenign *uint64 `json:"drops_benign_packets"`
	// NICLoss are the loss and error counters of the counted interfaces
	// that moved over the whole run (netlink stats64, ethtool -S),
	// largest first; null when not recorded (NICLossNA).
	NICLoss        []JSONNICLoss `json:"nic_loss"`
	NICLossNA      string        `json:"nic_loss_na,omitempty"`
	Verdicts       []JSONVerdict `json:"verdicts"`
	FiredVerdicts  []string      `json:"fired_verdicts"`
	Notes          []string      `json:"notes"`
	PrimaryCounter string        `json:"primary_counter"`
}

// JSONThroughput holds both directions.
type JSONThroughput struct {
	Rx JSONDirection `json:"rx"`
	Tx JSONDirection `json:"tx"`
}

// JSONDirection is one direction's counters; nil when not measured.
type JSONDirection struct {
	Interface        string       `json:"interface"`
	MTU              int          `json:"mtu_bytes"`
	Application      *JSONWindows `json:"application"`
	InterfaceNetlink *JSONWindows `json:"interface_netlink"`
	InterfaceBPF     *JSONWindows `json:"interface_bpf"`
	WireEstimate     *JSONWindows `json:"wire_estimate"`
	Gap              *JSONGap     `json:"application_vs_wire"`
}

// JSONGap is HeaderGap with units in keys.
type JSONGap struct {
	AppBytes  uint64  `json:"application_bytes"`
	WireBytes uint64  `json:"wire_bytes"`
	Pct       float64 `json:"gap_pct"`
	MTU       int     `json:"mtu_bytes"`
	MSS       int     `json:"mss_bytes"`
	// HeaderBytes (IP+TCP per segment, HeaderSource says how it was
	// found), L2Bytes and FramingBytes (0 on a TUN device) give
	// ExpectedPct; null when MTU or MSS is unknown.
	HeaderBytes  *int     `json:"ip_tcp_header_bytes"`
	HeaderSource string   `json:"ip_tcp_header_source,omitempty"`
	L2Bytes      *int     `json:"l2_header_bytes"`
	FramingBytes *int     `json:"framing_bytes"`
	ExpectedPct  *float64 `json:"expected_gap_pct"`
}

// JSONWindows is Windows in decimal Gbit/s.
type JSONWindows struct {
	Source          string     `json:"source"`
	PeakGbps        float64    `json:"peak_gbit_per_s"`
	PeakAt          *time.Time `json:"peak_interval_end"`
	SteadyGbps      float64    `json:"steady_state_gbit_per_s"`
	SteadyApprox    bool       `json:"steady_state_approximate"`
	SteadyStart     *time.Time `json:"steady_state_start"`
	SteadyEnd       *time.Time `json:"steady_state_end"`
	SteadyIntervals int        `json:"steady_state_intervals"`
	SteadyCVPct     *float64   `json:"steady_state_cv_pct"` // null with fewer than 2 steady-state intervals
	WholeRunGbps    float64    `json:"whole_run_gbit_per_s"`
	P50Gbps         float64    `json:"interval_p50_gbit_per_s"`
	P95Gbps         float64    `json:"interval_p95_gbit_per_s"`
	ActiveStart     *time.Time `json:"active_window_start"`
	ActiveEnd       *time.Time `json:"active_window_end"`
	ActiveSeconds   float64    `json:"active_window_s"`
	ActiveIntervals int        `json:"active_window_intervals"`
	TotalBytes      uint64     `json:"total_bytes"`
	Intervals       int        `json:"intervals"`
}

// JSONCPU is one CPU's softirq load over the CPU window.
type JSONCPU struct {
	CPU            int      `json:"cpu"`
	NetRxSharePct  *float64 `json:"net_rx_softirq_pct"` // null when the softirq probe did not run (Report.SoftirqOff)
	NetTxSharePct  *float64 `json:"net_tx_softirq_pct"`
	MaxIntervalPct *float64 `json:"net_rx_softirq_max_interval_pct"`
	// RxPackets is null without the netdev probe, NapiPolls and
	// NapiExhausted without the napi probe, BusiestIntervals (intervals in
	// which this CPU had the largest NET_RX share) without the softirq
	// probe: cpu_figures_na says why.
	RxPackets         *uint64  `json:"rx_packets"`
	PacketCostNs      *float64 `json:"net_rx_ns_per_packet"`
	NapiPolls         *uint64  `json:"napi_polls"`
	NapiExhausted     *uint64  `json:"napi_budget_exhausted"`
	NapiExhaustedPct  *float64 `json:"napi_budget_exhausted_pct"`
	BusiestIntervals  *int     `json:"busiest_intervals"`
	IntervalsInWindow int      `json:"intervals"`
	// ProcSoftirqPct and ProcBusyPct are /proc/stat shares of the CPU
	// (cpus.proc_*: every softirq vector; all but idle, iowait, steal;
	// tick-sampled), null when not recorded.
	ProcSoftirqPct *float64 `json:"proc_stat_all_softirq_pct"`
	ProcBusyPct    *float64 `json:"proc_stat_busy_pct"`
	// Softnet* are /proc/net/softnet_stat counters over the window (skbs
	// processed, backlog drops, time squeezes, RPS IPIs, flow-limit
	// drops), null when not recorded.
	SoftnetProcessed   *uint64 `json:"softnet_processed"`
	SoftnetDropped     *uint64 `json:"softnet_dropped"`
	SoftnetTimeSqueeze *uint64 `json:"softnet_time_squeeze"`
	SoftnetReceivedRPS *uint64 `json:"softnet_received_rps"`
	SoftnetFlowLimit   *uint64 `json:"softnet_flow_limit_drops"`
}

// JSONHostCPU is HostCPU: every CPU's /proc/stat time over the CPU window.
type JSONHostCPU struct {
	BusyPct    float64 `json:"proc_stat_busy_pct"`
	SoftirqPct float64 `json:"proc_stat_all_softirq_pct"`
	CPUs       int     `json:"cpus"`
	TotalNs    uint64  `json:"proc_total_ns"`
}

// JSONRTT is RTTSummary with units in keys.
type JSONRTT struct {
	P50Us uint32 `json:"p50_us"`
	P99Us uint32 `json:"p99_us"`
	MinUs uint32 `json:"min_us"`
	MaxUs uint32 `json:"max_us"`
	// KernelMinUs is the kernel's windowed min RTT (flows.min_rtt_us);
	// null when never recorded (no tcp_probe or iterator row had it).
	KernelMinUs *uint32 `json:"kernel_min_rtt_us"`
	Samples     uint64  `json:"samples"`
}

// JSONPeer is one remote address.
type JSONPeer struct {
	Peer  string `json:"peer"`
	Flows int    `json:"flows"`
	// TxBytes and RxBytes are null when the netdev programs did not run.
	TxBytes *uint64  `json:"tx_bytes"`
	RxBytes *uint64  `json:"rx_bytes"`
	RTT     *JSONRTT `json:"rtt"`
}

// JSONFlow is one flow.
type JSONFlow struct {
	Src       string `json:"src"`
	Dst       string `json:"dst"`
	Netns     uint64 `json:"netns"`
	Proto     uint8  `json:"proto"`
	Generator bool   `json:"generator"`
	Sending   bool   `json:"sending"`
	// TxBytes, RxBytes and SteadyGbps are null when the netdev programs
	// (np_nd_rx, np_nd_tx) did not run, Retransmits when np_tcp_retrans
	// did not.
	TxBytes     *uint64  `json:"tx_bytes"`
	RxBytes     *uint64  `json:"rx_bytes"`
	Retransmits *uint64  `json:"retransmits_segments"`
	SteadyGbps  *float64 `json:"steady_state_gbit_per_s"`
	// SteadyCounter names what SteadyGbps counts: interface-level L2
	// bytes (netdev), or payload from the socket iterator when netdev
	// did not run; "" when SteadyGbps is null.
	SteadyCounter string `json:"steady_state_counter,omitempty"`
	// AckedBytes and ReceivedBytes are the socket iterator's payload
	// counters (flows.tcp_bytes_acked, tcp_bytes_received), whole run;
	// null without the iterator.
	AckedBytes    *uint64 `json:"tcp_bytes_acked"`
	ReceivedBytes *uint64 `json:"tcp_bytes_received"`
	// WindowGbps, WindowBytes and SteadySrttUs are steady-state averages
	// that multiply out (window_bytes x 8 / steady_state_srtt_us =
	// window_limited_gbit_per_s), the window being snd_cwnd x mss or the
	// --window socket buffer when smaller (as in the verdicts); CwndSegments
	// and SrttUs are the flow's
	// last sample; they and MSSBytes are null when never sampled (a
	// receiving flow, or np_tcp_probe not run).
	WindowGbps     *float64 `json:"window_limited_gbit_per_s"`
	WindowBytes    *float64 `json:"window_bytes"`
	SteadySrttUs   *float64 `json:"steady_state_srtt_us"`
	CwndSegments   *uint32  `json:"snd_cwnd_segments"`
	MSSBytes       *uint32  `json:"mss_bytes"`
	SrttUs         *uint32  `json:"srtt_us"`
	RTT            *JSONRTT `json:"rtt"`
	WindowRatioPct *float64 `json:"rate_of_window_pct"`
}

// JSONBDP is BDP with units in keys.
type JSONBDP struct {
	RateGbps float64 `json:"steady_state_gbit_per_s"`
	MinRTTUs uint32  `json:"min_rtt_us"`
	Bytes    float64 `json:"bdp_bytes"`
	// InFlightBytes is the sending flows' steady-state windows summed
	// (BDP.InFlightBytes); null when none has a window.
	InFlightBytes *float64 `json:"in_flight_bytes"`
	InFlightFlows int      `json:"in_flight_flows"`
	TargetGbps    *float64 `json:"target_gbit_per_s"`
	TargetBytes   *float64 `json:"target_bdp_bytes"`
	// PerStream* are the median sending flow's own steady-state figures
	// (BDP.PerStreamFlow): window_bytes x 8 / srtt_us = the rate.
	PerStreamFlow   string   `json:"per_stream_flow,omitempty"`
	PerStreamGbps   *float64 `json:"per_stream_window_limited_gbit_per_s"`
	PerStreamWindow *float64 `json:"per_stream_window_bytes"`
	PerStreamSrttUs *float64 `json:"per_stream_srtt_us"`
	Streams         *int     `json:"streams_needed"`
	Missing         string   `json:"streams_needed_missing,omitempty"`
}

// JSONRetransmits are TCP segments retransmitted over the run.
type JSONRetransmits struct {
	SenderTCPInfo *uint64 `json:"sender_tcp_info_segments"`
	// Flows is flows.retransmits summed over every flow, whole run;
	// FlowsSource names the probe that counted it: the tcp_retransmit_skb
	// tracepoint (BPF, np_tcp_retrans) or the socket iterator (np_tcp_iter:
	// growth of each socket's total_retrans). Null when neither ran
	// (FlowsNA says why).
	Flows       *uint64 `json:"flows_retransmit_segments"`
	FlowsSource string  `json:"flows_retransmit_source,omitempty"`
	FlowsNA     string  `json:"flows_retransmit_na,omitempty"`
	// Receiver is always null: retransmits are counted on the sender.
	Receiver     *uint64  `json:"receiver_segments"`
	Source       string   `json:"source"`
	PerGB        *float64 `json:"per_gb_sent"`
	SegmentsSent *uint64  `json:"segments_sent"`
	SharePct     *float64 `json:"share_of_segments_sent_pct"`
	// FirstHalf and SecondHalf split the retransmits at the run's
	// midpoint; null when no retransmit counter was recorded (source "")
	// or the run has no start or end.
	FirstHalf   *uint64  `json:"first_half_segments"`
	SecondHalf  *uint64  `json:"second_half_segments"`
	FirstPerGB  *float64 `json:"first_half_per_gb_sent"`
	SecondPerGB *float64 `json:"second_half_per_gb_sent"`
}

// JSONVerdict is one rule's outcome.
type JSONVerdict struct {
	Rule       string   `json:"rule"`
	Status     string   `json:"status"`
	Summary    string   `json:"summary"`
	Evidence   []string `json:"evidence"`
	Thresholds []string `json:"thresholds"`
}

// optF returns &v, or nil for NaN, Inf or (when zeroNil) 0.
func optF(v float64, zeroNil bool) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || (zeroNil && v == 0) {
		return nil
	}
	return &v
}

// optU64 returns &v, or nil when off.
func optU64(v uint64, off bool) *uint64 {
	if off {
		return nil
	}
	return &v
}

// optU32 returns &v, or nil for 0 (never sampled).
func optU32(v uint32) *uint32 {
	if v == 0 {
		return nil
	}
	return &v
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// JSONSteering is one receiving stream's steering (StreamSteering).
type JSONSteering struct {
	Stream int    `json:"stream"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	CPU    int32  `json:"incoming_cpu"`
	// NapiID is null when the kernel reported none (SO_INCOMING_NAPI_ID
	// 0: the socket's packets came through no NAPI instance with an ID,
	// e.g. a veth without GRO).
	NapiID     *uint32 `json:"incoming_napi_id"`
	Bytes      uint64  `json:"received_app_bytes"`
	CPUChanges int     `json:"incoming_cpu_changes"`
	// Peer is true for a stream the peer of a --peer run received: the
	// CPU is the peer's.
	Peer bool `json:"peer"`
}

// JSONDrop is one drop reason over the run.
// JSONNICLoss is one interface loss or error counter over the run.
type JSONNICLoss struct {
	Ifname  string `json:"ifname"`
	Counter string `json:"counter"`
	Source  string `json:"source"`
	Queue   *int32 `json:"queue"`
	Count   uint64 `json:"count"`
}

type JSONDrop struct {
	Reason string `json:"reason"`
	// Class is "lost" or "benign" (DropLost, DropBenign); Meaning says
	// what a benign reason means.
	Class   string `json:"class"`
	Meaning string `json:"meaning,omitempty"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
	CPUs    []int  `json:"cpus"`
}
