// Package trace is the netprof run-directory format (trace format v1): the
// contract between recording and analysis. It is the only package that writes
// or reads Parquet.
//
// A run is a directory holding manifest.json and, per table (ifaces, cpus,
// flows, traffic, probes, sockets), a directory of Parquet part files
// (flows/part-000000.parquet, part-000001.parquet, ...) whose rows, in part
// order, are the table (trace format v2; v1 runs hold one file per table,
// flows.parquet, and read the same). Parts are closed every ~10 s while
// recording, so a killed recorder loses only the open part. Every row has `time`, the END of its
// interval as TIMESTAMP(MICROS, isAdjustedToUTC=true), and `interval_ns`, the
// measured length of that interval in nanoseconds. Counters are per-interval
// deltas, never lifetime totals. Units are in column names (_bytes, _ns, _us).
// A column never changes meaning or unit without a new SchemaVersion; tables
// may gain columns.
//
// Optional (nullable) columns are pointers: null means "not measured" (probe
// off, not applicable, no sample), never zero.
package trace

import (
	"fmt"
	"strings"
	"time"
)

// SchemaVersion is the version of the run-directory format written by this
// package and stored in manifest.json. Version 2 stores each table as a
// directory of part files; version 1 as one file. Both read the same.
const SchemaVersion = 2

// Table names inside a run directory: the file of a v1 run; in a v2 run the
// table is the directory TableDir(name) of part files. Functions taking a
// table "file" take one of these.
const (
	ManifestFile = "manifest.json"
	IfacesFile   = "ifaces.parquet"
	CPUsFile     = "cpus.parquet"
	FlowsFile    = "flows.parquet"
	TrafficFile  = "traffic.parquet"
	ProbesFile   = "probes.parquet"
	// SocketsFile holds TCP connection events (SocketRow, sockets.go).
	SocketsFile = "sockets.parquet"
	// NICsFile holds the drivers' statistics (NICStatRow).
	NICsFile = "nics.parquet"
	// DropsFile holds the kernel's packet drops by reason (DropRow).
	DropsFile = "drops.parquet"
)

// TableFiles lists every table, in the order the Writer writes them.
var TableFiles = []string{IfacesFile, CPUsFile, FlowsFile, TrafficFile, ProbesFile, SocketsFile, NICsFile, DropsFile}

// TableDir is the directory of table file's part files in a v2 run:
// "flows" for FlowsFile.
func TableDir(file string) string { return strings.TrimSuffix(file, ".parquet") }

// partName is the file name of part seq.
func partName(seq int) string { return fmt.Sprintf("part-%06d.parquet", seq) }

// mergedName is the file name of the parts first..last merged into one.
func mergedName(first, last int) string { return fmt.Sprintf("part-%06d-%06d.parquet", first, last) }

// IfaceRow is one interface × interval.
//
// rx_*/tx_* come from netlink RTM_GETLINK IFLA_STATS64 (delta over the
// interval; kernel counters include L2 headers but not preamble/FCS).
// bpf_* come from the netif_receive_skb (rx) and net_dev_xmit (tx)
// tracepoints and are null when the probes were off. bpf_*_packets count
// segments (GSO/GRO segments, what the wire carries), bpf_*_skbs count skbs.
type IfaceRow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	// Netns is the inode number of the interface's network namespace.
	Netns   uint64 `parquet:"netns"`
	Ifname  string `parquet:"ifname"`
	Ifindex int32  `parquet:"ifindex"`
	Driver  string `parquet:"driver"`

	RxBytes   uint64 `parquet:"rx_bytes"`
	TxBytes   uint64 `parquet:"tx_bytes"`
	RxPackets uint64 `parquet:"rx_packets"`
	TxPackets uint64 `parquet:"tx_packets"`
	RxDropped uint64 `parquet:"rx_dropped"`
	TxDropped uint64 `parquet:"tx_dropped"`
	// The stats64 error counters (netlink, deltas): null in traces from
	// before them. rx_missed_errors counts frames the NIC had no buffer
	// for (the host did not keep up); rx_fifo/over are the NIC's FIFO
	// overruns; the others are link-level faults.
	RxErrors          *uint64 `parquet:"rx_errors,optional"`
	TxErrors          *uint64 `parquet:"tx_errors,optional"`
	RxMissedErrors    *uint64 `parquet:"rx_missed_errors,optional"`
	RxFifoErrors      *uint64 `parquet:"rx_fifo_errors,optional"`
	RxOverErrors      *uint64 `parquet:"rx_over_errors,optional"`
	RxCrcErrors       *uint64 `parquet:"rx_crc_errors,optional"`
	RxFrameErrors     *uint64 `parquet:"rx_frame_errors,optional"`
	RxLengthErrors    *uint64 `parquet:"rx_length_errors,optional"`
	TxAbortedErrors   *uint64 `parquet:"tx_aborted_errors,optional"`
	TxCarrierErrors   *uint64 `parquet:"tx_carrier_errors,optional"`
	TxFifoErrors      *uint64 `parquet:"tx_fifo_errors,optional"`
	TxHeartbeatErrors *uint64 `parquet:"tx_heartbeat_errors,optional"`
	TxWindowErrors    *uint64 `parquet:"tx_window_errors,optional"`
	Collisions        *uint64 `parquet:"collisions,optional"`

	BpfRxBytes   *uint64 `parquet:"bpf_rx_bytes,optional"`
	BpfRxPackets *uint64 `parquet:"bpf_rx_packets,optional"`
	BpfRxSkbs    *uint64 `parquet:"bpf_rx_skbs,optional"`
	BpfTxBytes   *uint64 `parquet:"bpf_tx_bytes,optional"`
	BpfTxPackets *uint64 `parquet:"bpf_tx_packets,optional"`
	BpfTxSkbs    *uint64 `parquet:"bpf_tx_skbs,optional"`
	// bpf_*_wire_bytes add the L2-L4 headers a GSO/GRO skb's segments
	// repeat on the wire (bytes + (segments-1) x header length).
	BpfRxWireBytes *uint64 `parquet:"bpf_rx_wire_bytes,optional"`
	BpfTxWireBytes *uint64 `parquet:"bpf_tx_wire_bytes,optional"`
}

// CPURow is one CPU × interval: the softirq, netif_receive_skb and
// napi_poll probes' per-CPU counters and the same CPU's /proc/stat and
// /proc/net/softnet_stat figures (proc_*, softnet_*) beside them. A row
// exists when any of these was read for the CPU (netprof bench writes
// them from /proc/stat even with no per-CPU probe). NET_RX/NET_TX softirq
// time is apportioned to the interval in which it ran (a softirq still
// running at the interval end contributes the part already elapsed), so
// NetRxSoftirqNs <= IntervalNs.
//
// Each probe's columns are null when that probe did not run in the
// interval (not selected, or not loadable on this kernel: the manifest's
// probes say which and why), never 0: 0 means it ran and counted nothing.
type CPURow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	CPU        int32     `parquet:"cpu"`

	// irq:softirq_entry/exit (probe group softirq).
	NetRxSoftirqNs    *uint64 `parquet:"net_rx_softirq_ns,optional"`
	NetRxSoftirqCount *uint64 `parquet:"net_rx_softirq_count,optional"`
	NetTxSoftirqNs    *uint64 `parquet:"net_tx_softirq_ns,optional"`
	NetTxSoftirqCount *uint64 `parquet:"net_tx_softirq_count,optional"`
	// RxPackets and RxBytes are netif_receive_skb segments and bytes
	// processed on this CPU (all interfaces, all namespaces; probe group
	// netdev).
	RxPackets *uint64 `parquet:"rx_packets,optional"`
	RxBytes   *uint64 `parquet:"rx_bytes,optional"`
	// napi:napi_poll on this CPU (probe group napi): polls, packets
	// processed, and polls that used their whole budget (more work was
	// waiting).
	NapiPolls           *uint64 `parquet:"napi_polls,optional"`
	NapiPackets         *uint64 `parquet:"napi_packets,optional"`
	NapiBudgetExhausted *uint64 `parquet:"napi_budget_exhausted,optional"`

	// proc_* are this CPU's time in the interval by the kernel's own CPU
	// accounting: the delta of its "cpuN" line of /proc/stat (what mpstat
	// and sar show), read by the recorder in the same tick as the BPF
	// counters. /proc/stat counts USER_HZ ticks (10 ms per CPU at the
	// usual USER_HZ 100), so each value is a multiple of 10 ms; with tick
	// CPU accounting the kernel also charges each of its own ticks whole to
	// the mode the CPU is in when the tick fires, so a figure is a sample,
	// exact only to about a tick per CPU per interval (idle time is exact
	// with NO_HZ). Null when /proc/stat was not read (netprof watch and
	// blob, traces from before these columns, /proc/stat unreadable, or
	// the CPU missing from either read); all three are null or set
	// together.
	//
	// ProcSoftirqNs is the softirq column: time in every softirq vector
	// (HI, TIMER, NET_TX, NET_RX, BLOCK, IRQ_POLL, TASKLET, SCHED,
	// HRTIMER, RCU), ksoftirqd's included, so it is at least the NET_RX
	// time above up to tick sampling.
	ProcSoftirqNs *uint64 `parquet:"proc_softirq_ns,optional"`
	// ProcBusyNs is user + nice + system + irq + softirq (guest time is
	// inside user and nice): everything but idle, iowait and steal (steal,
	// time the hypervisor ran something else, is not counted as busy).
	ProcBusyNs *uint64 `parquet:"proc_busy_ns,optional"`
	// ProcTotalNs is every mode: busy + idle + iowait + steal, about
	// interval_ns (within the tick resolution).
	ProcTotalNs *uint64 `parquet:"proc_total_ns,optional"`

	// From /proc/net/softnet_stat (the kernel's per-CPU softnet_data),
	// read in the same tick, per interval: skbs the receive path processed
	// on this CPU, packets dropped because its backlog queue was full,
	// time squeezes (net_rx_action stopped with work left: its packet
	// budget or time ran out), RPS IPIs received, flow-limit drops. Null
	// when not read (watch and blob traces, older traces, a CPU missing
	// from either read); all five are null or set together.
	SoftnetProcessed      *uint64 `parquet:"softnet_processed,optional"`
	SoftnetDropped        *uint64 `parquet:"softnet_dropped,optional"`
	SoftnetTimeSqueeze    *uint64 `parquet:"softnet_time_squeeze,optional"`
	SoftnetReceivedRPS    *uint64 `parquet:"softnet_received_rps,optional"`
	SoftnetFlowLimitDrops *uint64 `parquet:"softnet_flow_limit_drops,optional"`
	// ProcNetRxSoftirqs counts NET_RX softirq runs on this CPU (the NET_RX
	// row of /proc/softirqs, one per net_rx_action call), read in the same
	// tick; softnet_time_squeeze / proc_net_rx_softirqs is the share of
	// runs that stopped with packets left. Null when not read.
	ProcNetRxSoftirqs *uint64 `parquet:"proc_net_rx_softirqs,optional"`
}

// FlowRow is one flow × interval, as seen in one network namespace on one
// interface. Src is the LOCAL end in that namespace and Dst the remote end
// (like `ss`): rx_* count packets arriving from dst to src, tx_* packets
// leaving src for dst. A transfer between two namespaces on one host
// therefore appears as two rows (one per namespace), each counting one side.
//
// Bytes are L2 frame bytes (skb->len plus the MAC header, as interface
// counters count them); packets are segments; skbs are skbs as the stack
// handled them (GSO/GRO batches); wire bytes add the headers repeated per
// segment. Retransmits are TCP segments retransmitted by the
// local end (tcp_retransmit_skb); they are only meaningful on the sender.
// RTT columns summarise srtt samples taken at tcp_probe in this interval and
// are null when there were none.
type FlowRow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	Netns      uint64    `parquet:"netns"`
	Ifindex    int32     `parquet:"ifindex"`
	Ifname     string    `parquet:"ifname"`
	// Family is 4 or 6; Proto is the IP protocol number (6 TCP, 17 UDP).
	Family  uint8  `parquet:"family"`
	Proto   uint8  `parquet:"proto"`
	SrcAddr string `parquet:"src_addr"`
	SrcPort uint16 `parquet:"src_port"`
	DstAddr string `parquet:"dst_addr"`
	DstPort uint16 `parquet:"dst_port"`

	RxBytes     uint64 `parquet:"rx_bytes"`
	RxPackets   uint64 `parquet:"rx_packets"`
	RxSkbs      uint64 `parquet:"rx_skbs"`
	TxBytes     uint64 `parquet:"tx_bytes"`
	TxPackets   uint64 `parquet:"tx_packets"`
	TxSkbs      uint64 `parquet:"tx_skbs"`
	RxWireBytes uint64 `parquet:"rx_wire_bytes"`
	TxWireBytes uint64 `parquet:"tx_wire_bytes"`
	Retransmits uint64 `parquet:"retransmits"`
	// RetransmitFailures counts retransmit attempts the kernel could not
	// send (tcp_retransmit_skb with err != 0), kept apart from Retransmits.
	// Null where the kernel's tracepoint does not report them (it has no
	// err argument before recent kernels, and fires only on success there).
	RetransmitFailures *uint64 `parquet:"retransmit_failures,optional"`

	RTTSamples uint64  `parquet:"rtt_samples"`
	RTTMinUs   *uint32 `parquet:"rtt_min_us,optional"`
	RTTP50Us   *uint32 `parquet:"rtt_p50_us,optional"`
	RTTP99Us   *uint32 `parquet:"rtt_p99_us,optional"`
	RTTMaxUs   *uint32 `parquet:"rtt_max_us,optional"`
	SrttUs     *uint32 `parquet:"srtt_us,optional"`
	SndCwnd    *uint32 `parquet:"snd_cwnd,optional"`
	// MinRttUs is the kernel's windowed minimum RTT (tp->rtt_min), µs.
	MinRttUs *uint32 `parquet:"min_rtt_us,optional"`
	// MSS is tp->mss_cache, bytes.
	MSS *uint32 `parquet:"mss,optional"`

	// From the TCP socket iterator (probe group tcp): the socket's own
	// counters over the interval and its latest values at the interval's
	// end, as TCP_INFO gives them. Null without the iterator, and for
	// sockets it did not see.
	TCPBytesAcked    *uint64 `parquet:"tcp_bytes_acked,optional"`    // payload bytes the peer acknowledged
	TCPBytesReceived *uint64 `parquet:"tcp_bytes_received,optional"` // payload bytes received in order
	// TCPDataSegsOut counts data segments sent, retransmits included
	// (tcpi_data_segs_out).
	TCPDataSegsOut *uint64 `parquet:"tcp_data_segs_out,optional"`
	// What limited the sender (the kernel's chrono accounting), µs: busy
	// is the time the socket had data to send (TCP_INFO's tcpi_busy_time);
	// rwnd-limited and sndbuf-limited are the parts of it the peer's
	// receive window and this socket's send buffer limited.
	TCPBusyUs          *uint64 `parquet:"tcp_busy_us,optional"`
	TCPRwndLimitedUs   *uint64 `parquet:"tcp_rwnd_limited_us,optional"`
	TCPSndbufLimitedUs *uint64 `parquet:"tcp_sndbuf_limited_us,optional"`
	// TCPDeliveryRateBps is the latest delivery rate sample (bit/s,
	// decimal), as tcpi_delivery_rate; TCPDeliveryAppLimited is 1 when
	// the application, not the network, limited that sample, else 0.
	TCPDeliveryRateBps    *uint64 `parquet:"tcp_delivery_rate_bps,optional"`
	TCPDeliveryAppLimited *uint8  `parquet:"tcp_delivery_app_limited,optional"`
	TCPLastRttUs          *uint32 `parquet:"tcp_last_rtt_us,optional"`   // the latest RTT sample
	TCPSndWndBytes        *uint32 `parquet:"tcp_snd_wnd_bytes,optional"` // the peer's advertised window
	TCPRcvWndBytes        *uint32 `parquet:"tcp_rcv_wnd_bytes,optional"` // this socket's advertised window
}

// Stream roles in TrafficRow.Role.
const (
	RoleSender   = "sender"
	RoleReceiver = "receiver"
)

// TrafficRow is one generator stream × interval. AppBytes is the payload the
// application wrote (sender) or read (receiver). The tcp_* columns come from
// getsockopt(TCP_INFO) on the sender's socket; they are null on the receiver
// (retransmits are counted on the sender; a receiver's 0 would mean nothing).
type TrafficRow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	Stream     int32     `parquet:"stream"`
	Role       string    `parquet:"role"`
	LocalAddr  string    `parquet:"local_addr"`
	RemoteAddr string    `parquet:"remote_addr"`
	AppBytes   uint64    `parquet:"app_bytes"`
	// TCPRetransmits is the delta of tcpi_total_retrans (segments).
	TCPRetransmits *uint64 `parquet:"tcp_retransmits,optional"`
	// TCPRttUs is tcpi_rtt (smoothed RTT, µs) at the interval end.
	TCPRttUs *uint32 `parquet:"tcp_rtt_us,optional"`
	// TCPCwnd is tcpi_snd_cwnd (segments) at the interval end.
	TCPCwnd *uint32 `parquet:"tcp_cwnd,optional"`
	// What limited the stream (the kernel's chrono accounting, TCP_INFO,
	// deltas over the interval, µs), as the flows table's columns: busy
	// (time with data to send), and the parts of it the receiver's window
	// and the stream's own send buffer limited; for the generator's own
	// streams on either end (a peer reports its own).
	TCPBusyUs          *uint64 `parquet:"tcp_busy_us,optional"`
	TCPRwndLimitedUs   *uint64 `parquet:"tcp_rwnd_limited_us,optional"`
	TCPSndbufLimitedUs *uint64 `parquet:"tcp_sndbuf_limited_us,optional"`
	// TCPDeliveryRateBps is the latest delivery rate sample (bit/s) and
	// TCPSndWndBytes the peer's advertised window, at the interval end.
	TCPDeliveryRateBps *uint64 `parquet:"tcp_delivery_rate_bps,optional"`
	TCPSndWndBytes     *uint32 `parquet:"tcp_snd_wnd_bytes,optional"`
	// IncomingCPU and IncomingNapiID are the receiving socket's
	// SO_INCOMING_CPU (the CPU that last processed a packet for it: where
	// RSS/RPS steered the stream) and SO_INCOMING_NAPI_ID (the receive
	// queue's NAPI context; 0 for none, e.g. veth) at the interval end;
	// for the generator's streams on either end (a peer reports its own:
	// its CPU). Null on sender rows, before the kernel set them, and on a
	// peer's rows when it did not report them (older peers).
	IncomingCPU    *int32  `parquet:"incoming_cpu,optional"`
	IncomingNapiID *uint32 `parquet:"incoming_napi_id,optional"`

	// Blob columns: set on rows of `netprof blob` runs (one row per blob
	// target × interval; Role "receiver" for pull, "sender" for push;
	// RemoteAddr is the storage endpoint host:port) and null on TCP
	// generator rows. They count HTTP attempts as the azblob pipeline saw
	// them, inside its retry loop: every retry is one more request.
	// Requests = HTTP2xx + HTTP503 + HTTP500 + HTTPOtherErrors.

	// Requests is the number of HTTP attempts sent in the interval.
	Requests *uint64 `parquet:"requests,optional"`
	// HTTP2xx counts attempts answered with a 2xx status.
	HTTP2xx *uint64 `parquet:"http_2xx,optional"`
	// HTTP503 counts attempts answered 503 (ServerBusy: throttling).
	HTTP503 *uint64 `parquet:"http_503,optional"`
	// HTTP500 counts attempts answered 500 (e.g. OperationTimedOut).
	HTTP500 *uint64 `parquet:"http_500,optional"`
	// HTTPOtherErrors counts attempts with any other status, or with no
	// response at all (connection refused or reset, timeout).
	HTTPOtherErrors *uint64 `parquet:"http_other_errors,optional"`
	// Retries counts attempts that repeated an earlier one (the retry
	// policy's second and later tries).
	Retries *uint64 `parquet:"retries,optional"`
	// RequestLatencyP50Us and RequestLatencyP99Us summarise, in µs, the
	// time from sending an attempt to receiving its response headers
	// (time to first byte), over the attempts of the interval that got a
	// response; null when none did. Resolution is 1/16 of a power of two
	// (about 6%).
	RequestLatencyP50Us *uint64 `parquet:"request_latency_p50_us,optional"`
	RequestLatencyP99Us *uint64 `parquet:"request_latency_p99_us,optional"`
	// HTTP503ErrorCodes lists the x-ms-error-code values of the
	// interval's 503 responses with their counts, sorted by code:
	// "ServerBusy=12" or "OperationTimedOut=1;ServerBusy=3" ("-" for a
	// 503 without the header); null when there was no 503.
	HTTP503ErrorCodes *string `parquet:"http_503_error_codes,optional"`

	// Phase says which part of a bench run the interval belongs to:
	// PhaseWarmup, PhaseMeasure or PhaseCooldown. Warm-up and cool-down
	// intervals are kept in the trace but left out of every figure
	// (analysis excludes them from all tables by time). Null on rows of
	// runs without phases (blob runs, traces from before this column).
	Phase *string `parquet:"phase,optional"`
}

// Values of TrafficRow.Phase.
const (
	PhaseWarmup   = "warmup"
	PhaseMeasure  = "measure"
	PhaseCooldown = "cooldown"
)

// ProbeRow is one BPF program × interval, from the kernel's BPF runtime
// statistics (bpf_prog_info run_cnt, run_time_ns; run time needs
// kernel.bpf_stats_enabled=1, else 0) and recursion_misses (kernel >= 5.12).
// Rows whose Hook starts with "map:" describe a BPF map instead of a
// program: Program is the map name and only the map_* columns are set.
type ProbeRow struct {
	Time            time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs      int64     `parquet:"interval_ns"`
	Program         string    `parquet:"program"`
	Hook            string    `parquet:"hook"`
	RunCount        uint64    `parquet:"run_count"`
	RunTimeNs       uint64    `parquet:"run_time_ns"`
	RecursionMisses uint64    `parquet:"recursion_misses"`
	// MapEvictions counts entries an LRU map evicted (seen as keys that
	// vanished between reads); MapUpdateFailures counts inserts the
	// programs could not make (map full).
	MapEvictions      uint64 `parquet:"map_evictions"`
	MapUpdateFailures uint64 `parquet:"map_update_failures"`
	// MapEntries is how many entries the map held at the read (its
	// capacity is in the manifest's maps); MapDeleted how many idle
	// entries netprof deleted this interval to keep room (their counts
	// were already recorded). Null on rows of programs.
	MapEntries *uint64 `parquet:"map_entries,optional"`
	MapDeleted *uint64 `parquet:"map_deleted,optional"`
	// MapLostBytes and MapLostPackets are what the programs counted this
	// interval for keys the full map refused (flows table: L2 bytes and
	// segments, both directions): traffic that is in no flows row. Null
	// where the map does not count it.
	MapLostBytes   *uint64 `parquet:"map_lost_bytes,optional"`
	MapLostPackets *uint64 `parquet:"map_lost_packets,optional"`
}

// NICStatRow is one driver statistic of one interface × interval: what
// `ethtool -S IFNAME` prints, as the change over the interval (counters;
// statistics that went down, i.e. were reset, and values that are not
// counts, such as veth's peer_ifindex, have no row). Names are the
// driver's own; Direction and Queue are parsed from per-queue names
// (rx_queue_0_packets, rx0_packets, rx_0_packets, queue_0_tx_cnt) and
// null where the name gives none. Interfaces whose driver has no
// statistics (lo, dummy) have no rows.
type NICStatRow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	Netns      uint64    `parquet:"netns"`
	Ifname     string    `parquet:"ifname"`
	Stat       string    `parquet:"stat"`
	Direction  *string   `parquet:"direction,optional"`
	Queue      *int32    `parquet:"queue,optional"`
	Value      uint64    `parquet:"value"`
}

// DropRow is the packets the kernel dropped on one CPU for one reason in
// one interval (skb:kfree_skb, the drops probe): Reason is the kernel's
// enum skb_drop_reason name without its SKB_DROP_REASON_ prefix
// (NO_SOCKET, TCP_CSUM, QDISC_DROP, SOCKET_RCVBUFF, ...; "unknown ..." on
// kernels before 5.17, which pass none), ReasonCode its value. Bytes sums
// skb->len (what the skb held where it was dropped: with or without L2
// headers depending on the layer). Only CPUs and reasons with drops have
// rows; no rows at all when the probe did not run (manifest probes).
type DropRow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	CPU        int32     `parquet:"cpu"`
	Reason     string    `parquet:"reason"`
	ReasonCode int32     `parquet:"reason_code"`
	Packets    uint64    `parquet:"packets"`
	Bytes      uint64    `parquet:"bytes"`
}
