package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/netprof/netprof/trace"
)

// Counter names (Rate.Counter).
const (
	CounterApp     = "application"
	CounterNetlink = "interface"
	CounterBPF     = "bpf"
	CounterWire    = "wire"
)

// Rate is one counter's throughput in one direction.
type Rate struct {
	// Counter is CounterApp, CounterNetlink, CounterBPF or CounterWire.
	Counter string
	// Label names the counter for people, e.g. "application (receiver
	// payload)"; Source names the trace columns it sums.
	Label, Source string
	// W holds the windows; nil when not measured, with Missing saying why.
	W       *Windows
	Missing string
	// Points are the per-interval deltas W was computed from (excluded
	// intervals left out), in time order.
	Points []Point
}

// Direction is the throughput of one direction: rx of the receiving
// interface or tx of the sending one.
type Direction struct {
	// Name is "rx" or "tx"; Iface the interface (ifaces.ifname) and
	// IfaceNetns its namespace; IfaceMTU its MTU from the manifest (0 when
	// unknown).
	Name       string
	Iface      string
	IfaceNetns uint64
	IfaceMTU   int
	// NoL2 is set when the interface carries IP packets without an
	// Ethernet header or framing: a TUN device (manifest driver "tuntap",
	// e.g. bench --rtt's delay line; the manifest does not tell TUN from
	// TAP, so tuntap is taken for TUN). Its netlink counter then has no L2
	// headers and the wire estimate adds no framing.
	NoL2 bool
	// Loopback is set for the loopback device (manifest driver "loopback",
	// from IFF_LOOPBACK, or name "lo"): its skbs carry a 14 B Ethernet
	// header (zero MACs), which the bpf counters include and its netlink
	// counter does not (lo counts after eth_type_trans), and nothing goes
	// on a wire, so the wire estimate adds no framing.
	Loopback bool
	// Rates holds application, interface (netlink), interface (bpf) and
	// wire estimate, in that order.
	Rates []Rate
	// IfaceBytes is the interface's netlink byte counter (rx_bytes or
	// tx_bytes) summed over every ifaces row of the trace, warm-up and
	// cool-down included: all it received or sent during the run, L2
	// headers included. nil when no interface was chosen.
	IfaceBytes *uint64
	// Gap compares application and wire bytes; nil when either is missing.
	Gap *HeaderGap
}

// Rate returns the direction's rate of the counter, or nil.
func (d *Direction) Rate(counter string) *Rate {
	for i := range d.Rates {
		if d.Rates[i].Counter == counter {
			return &d.Rates[i]
		}
	}
	return nil
}

// HeaderGap is the share of on-the-wire bytes that are not application
// payload, over the whole run, with the share headers explain.
type HeaderGap struct {
	// AppBytes and WireBytes are whole-run totals (bytes).
	AppBytes, WireBytes uint64
	// Pct is (WireBytes − AppBytes) / WireBytes × 100.
	Pct float64
	// MTU (manifest) and MSS (median flows.mss of sending flows, bytes);
	// 0 when unknown.
	MTU, MSS int
	// HeaderBytes is the IP + TCP header of a full segment and
	// HeaderSource how it was found ("MTU - MSS" when the MSS follows
	// from the MTU, else the family's header with TCP timestamps, e.g.
	// IPv4 20 + TCP 20 + 12); L2Bytes (Ethernet header, 14) and
	// FramingBytes (preamble/SFD/FCS/gap, 24) are 0 on a TUN device
	// (NoL2); on loopback (Loopback) FramingBytes is 0. ExpectedPct is the gap full-size segments would show:
	// 1 − MSS / (MSS + HeaderBytes + L2Bytes + FramingBytes), in percent;
	// 0 when unknown.
	HeaderBytes, L2Bytes, FramingBytes int
	HeaderSource                       string
	NoL2, Loopback                     bool
	ExpectedPct                        float64
}

// CPUStat is one CPU's softirq load over the report's CPU window.
type CPUStat struct {
	// CPU is cpus.cpu.
	CPU int
	// Share and TxShare are sum(net_rx_softirq_ns) and
	// sum(net_tx_softirq_ns) over sum(interval_ns), fractions in [0, 1].
	Share, TxShare float64
	// MaxShare is the largest single-interval NET_RX share; MaxAt is the
	// end of that interval.
	MaxShare float64
	MaxAt    time.Time
	// RxPackets is sum(cpus.rx_packets) (segments); PacketCostNs is
	// net_rx_softirq_ns / rx_packets (ns per packet; 0 without packets).
	RxPackets    uint64
	PacketCostNs float64
	// NapiPolls, NapiExhausted are sums of napi_polls and
	// napi_budget_exhausted; ExhaustedRatio is their quotient (0 without
	// polls).
	NapiPolls, NapiExhausted uint64
	ExhaustedRatio           float64
	// Intervals is the number of cpus rows of this CPU in the window;
	// BusiestIntervals how many of them it had the largest NET_RX share.
	Intervals, BusiestIntervals int
	// Proc is the CPU's /proc/stat time over the window (every softirq
	// vector, busy); nil when its rows there lack the proc_* columns or
	// /proc/stat did not advance (the reason is ProcMissing).
	Proc        *ProcShares
	ProcMissing string
	// Softnet is the CPU's softnet_stat counters over the window; nil when
	// its rows there lack the softnet_* columns.
	Softnet *SoftnetStat
}

// ProcShares are /proc/stat time shares (cpus.proc_* columns, USER_HZ
// units: tick-sampled, reported in 10 ms units per CPU per interval), fractions
// of sum(proc_total_ns) of the rows that have the columns.
type ProcShares struct {
	// Softirq is sum(proc_softirq_ns) / sum(proc_total_ns): every softirq
	// vector (TIMER, NET_TX, NET_RX, TASKLET, HRTIMER, RCU, ...), where
	// CPUStat.Share is NET_RX alone.
	Softirq float64
	// Busy is sum(proc_busy_ns) / sum(proc_total_ns): all but idle,
	// iowait and steal.
	Busy float64
	// TotalNs is sum(proc_total_ns); Intervals the rows that had them.
	TotalNs   uint64
	Intervals int
}

// HostCPU is the /proc/stat time of every CPU with proc_* columns over the
// CPU window: mpstat's "all" line.
type HostCPU struct {
	ProcShares
	// CPUs is how many CPUs had the columns.
	CPUs int
}

// CPUHeat is the softirq share per CPU over time (for plots), with
// intervals merged into at most HeatBins bins: NET_RX softirq time over
// the interval when the softirq probe ran, else /proc/stat's softirq time
// (every vector) over its total (Source says which).
type CPUHeat struct {
	// Source is HotNetRx or HotAllSoftirq.
	Source string
	// BinEnds are the ends of the bins; CPUs the CPU numbers; Share[c][b]
	// is CPU CPUs[c]'s NET_RX share in bin b (NaN when it has no rows).
	BinEnds []time.Time
	CPUs    []int
	Share   [][]float64
}

// HeatBins is the most time bins CPUHeat has.
const HeatBins = 600

// RTTSummary summarises TCP RTT from flows rows (samples taken at the
// tcp_probe tracepoint). It is built from per-interval summaries, not raw
// samples: each flows row with rtt_samples > 0 contributes its rtt_p50_us
// and rtt_p99_us weighted by rtt_samples (values exact below 1000 µs,
// rounded to 3 significant digits above).
type RTTSummary struct {
	// P50Us is the samples-weighted median of the rows' rtt_p50_us, µs.
	P50Us uint32
	// P99Us is the samples-weighted 99th percentile of rtt_p99_us, µs.
	P99Us uint32
	// MinUs is the smallest rtt_min_us and MaxUs the largest rtt_max_us, µs.
	MinUs, MaxUs uint32
	// KernelMinUs is the smallest flows.min_rtt_us (the kernel's windowed
	// minimum), µs; 0 when never set.
	KernelMinUs uint32
	// Samples is the sum of rtt_samples; Rows the number of flows rows used.
	Samples uint64
	Rows    int
	// FromIterator: the run had no tcp_probe and the samples are the
	// socket iterator's tcp_last_rtt_us, one per flow-interval (the
	// socket's latest RTT sample when it was read), each its own min,
	// p50, p99 and max.
	FromIterator bool
}

// FloorUs returns the lowest RTT seen: the smaller of MinUs and a non-zero
// KernelMinUs.
func (s RTTSummary) FloorUs() uint32 {
	if s.FloorFromKernel() {
		return s.KernelMinUs
	}
	return s.MinUs
}

// FloorFromKernel reports whether FloorUs is the kernel's min_rtt_us
// (KernelMinUs, its minimum over every ACK) rather than the lowest RTT
// sample (MinUs: tcp_probe samples, or the socket iterator's last RTT per
// flow-interval).
func (s RTTSummary) FloorFromKernel() bool {
	return s.KernelMinUs > 0 && (s.MinUs == 0 || s.KernelMinUs < s.MinUs)
}

// HistBin is one bin of the distribution of per-interval RTT percentiles
// (not of RTT samples: the trace keeps each flow-interval's min, p50, p99
// and max only): Samples is the rtt_samples of the flow-intervals whose
// rtt_p50_us lies in [LoUs, HiUs), P99Samples of those whose rtt_p99_us
// does.
type HistBin struct {
	LoUs, HiUs          uint32
	Samples, P99Samples uint64
}

// CountPoint is a count in the interval ending at End.
type CountPoint struct {
	End   time.Time
	Count uint64
}

// RatedLow is the steady state that exceeded the rated link speed.
type RatedLow struct {
	// SteadyBps is the steady state the rated speed was compared with
	// (bit/s); Counter names it briefly ("rx wire estimate", "rx
	// interface") and Label in full (Rate.Label).
	SteadyBps      float64
	Counter, Label string
}

// Report holds the figures and verdicts of one run. Rates are in bit/s.
type Report struct {
	// Dir is the run directory (set by Analyze; Build does not know it).
	Dir string
	// Manifest is the run's manifest.json.
	Manifest trace.Manifest
	// Units is how the text report prints rates; Color lets it use ANSI
	// bold for verdicts (set it only when writing to a terminal).
	Units Units
	Color bool
	// RunStart and RunEnd bound the run: the manifest's start/end, or the
	// first interval start / last row time when the manifest lacks them.
	RunStart, RunEnd time.Time

	// Rx is the receiving interface's direction, Tx the sending one's.
	Rx, Tx Direction
	// Primary is the rate that defines the active window and steady state
	// for every other figure: rx application, else rx interface, else tx
	// application, else tx interface; nil when none was measured.
	Primary *Rate
	// PrimaryDir is "rx" or "tx", the direction of Primary.
	PrimaryDir string

	// RatedBps is the rated link speed in bit/s (0 unknown) and RatedSource
	// where it came from.
	RatedBps    float64
	RatedSource string
	// RatedLow is set when the steady state exceeds RatedBps by more than
	// Thresholds.RatedExcess: a link cannot carry more than its rated
	// speed, so the rated speed is wrong (too low), and the verdicts judge
	// as if it were unknown; nil otherwise.
	RatedLow *RatedLow

	// CPUs holds each CPU's load over CPUWindow, sorted by CPU: Primary's
	// steady state, or the whole run when there is none.
	CPUs                         []CPUStat
	CPUWindow                    string
	CPUWindowStart, CPUWindowEnd time.Time
	// BusiestCPU is the CPU with the largest HotShare (-1 without cpus
	// rows). HotSource says what HotShare is: HotNetRx (NET_RX softirq
	// time, BPF) when the softirq probe ran, else HotAllSoftirq (every
	// softirq vector, /proc/stat) when the rows have it, else "".
	BusiestCPU int
	HotSource  string
	// Steering is where each receiving generator stream's packets were
	// processed (traffic.incoming_cpu, at its last measured interval),
	// this host's streams first, then those a --peer run's peer received
	// (Peer set: the peer's CPUs); nil when not recorded (sender-only
	// traces, peers older than received_steering, older traces).
	Steering []StreamSteering
	// CPUsNeverOnline counts the CPUs left out of CPUs, BusiestCPU, the
	// averages and Heat: possible (manifest cpus_possible) or in the cpus
	// table, and never online during the run (see cpuOnline; Notes says
	// so once).
	CPUsNeverOnline int
	// CPUIntervals is the number of intervals in the CPU window;
	// BusiestMedianShare the median over them of the largest per-interval
	// NET_RX share (whichever CPU had it).
	CPUIntervals       int
	BusiestMedianShare float64
	// Heat is the per-CPU softirq share over the whole run (CPUHeat.Source
	// says which counter); nil without rows.
	Heat *CPUHeat
	// QueueHeat is the counted interfaces' per-queue packet rates over
	// the whole run (nics table); nil without per-queue packet counters.
	QueueHeat *QueueHeat
	// ProbeCost is what netprof's BPF programs themselves took over
	// CPUWindow; nil when not measured (reasons[figProbeCost] says why).
	ProbeCost *ProbeCost
	// HostCPU is every CPU's /proc/stat time over CPUWindow added up; nil
	// when no cpus row there has the proc_* columns (the reason is
	// reasons[figProcStat]).
	HostCPU *HostCPU

	// RTT summarises all flows' RTT; nil when no row has rtt_samples > 0.
	RTT *RTTSummary
	// RTTHist bins the flow-intervals' p50 and p99 RTT weighted by their
	// samples, from the min to the max RTT (for plots).
	RTTHist []HistBin
	// Flows holds every data flow, largest (tx+rx bytes) first; Peers
	// every remote unicast address (multicast and :: are not peers), by
	// bytes. Control flows (an end multicast or unspecified: IPv6 MLD
	// reports, neighbour discovery, duplicate address detection) are not
	// in Flows: ControlFlows counts them and ControlBytes sums their L2
	// bytes (tx + rx, whole run), and a note says so.
	Flows        []FlowSummary
	ControlFlows int
	ControlBytes uint64
	// SoftirqOff says why NET_RX/NET_TX softirq time is unknown although
	// cpus rows exist (the softirq probe was not selected or not
	// attached: its columns then hold 0); "" when the probe ran. The
	// per-interval busiest figures (CPUStat.BusiestIntervals,
	// BusiestMedianShare) compare NET_RX shares and are unknown with it.
	// RxPacketsOff says the same of cpus.rx_packets (netdev probe,
	// np_nd_rx) and NapiOff of napi_polls and napi_budget_exhausted (napi
	// probe, np_nd_napi): CPUStat.RxPackets, NapiPolls and NapiExhausted
	// then hold 0, not a count.
	SoftirqOff, RxPacketsOff, NapiOff string

	Peers []PeerSummary
	// BDP is the bandwidth-delay product and streams-needed estimate.
	BDP BDP

	// SenderRetransmits is the sum of traffic.tcp_retransmits (TCP_INFO,
	// segments) over sender rows; nil when no sender row has it.
	SenderRetransmits *uint64
	// FlowRetransmits is the sum of flows.retransmits (tcp_retransmit_skb,
	// segments) over all flows; nil when probes were off.
	FlowRetransmits *uint64
	// Retx derives rates and the trend from the sender's retransmits.
	Retx RetxSummary
	// RetxTimeline is sender retransmits per interval (TCP_INFO, else BPF).
	RetxTimeline []CountPoint

	// StreamChrono is the generator's sending streams' chrono accounting
	// over the steady state (traffic table); nil without those columns.
	StreamChrono *StreamChrono

	// Drops are the kernel's packet drops by reason over the run (drops
	// table), most first; nil when the drops probe did not run (the
	// reason says why), empty when it ran and nothing was dropped.
	Drops []DropReason
	// NICLoss are the loss and error counters of the counted interfaces
	// that moved over the run (netlink stats64, ethtool -S), largest
	// first; nil when no counted interface had rows (the reason says
	// why), empty when none moved.
	NICLoss        []NICLoss
	nicLossSources string

	// Blob summarises HTTP 503s of blob rows; nil without blob rows.
	Blob *BlobSummary

	// FlowTable is the netdev probe's flow table (np_nd_flows) over the
	// run, from probes.parquet's "map:netdev" rows; SocketTable the tcp
	// probe's socket table (np_tcp_socks, "map:tcp" rows). nil when the
	// trace has no such rows (older traces, probe not loaded). Notes says
	// when either was full.
	FlowTable, SocketTable *MapTable

	// Phases is set when traffic rows mark warm-up or cool-down intervals:
	// every figure then covers the measured window only.
	Phases *Phases

	// Verdicts are the rules' outcomes, in rule order.
	Verdicts []Verdict

	// Notes are caveats for the reader, e.g. "probes off: ...".
	Notes []string

	// reasons says why a figure is missing, keyed by figure name.
	reasons map[string]string
}

// Figure names used as keys for missing-data reasons.
const (
	figCPU      = "cpu"
	figProcStat = "procstat"
	figRTT      = "rtt"
	figSndRetx  = "sender_retx"
	figFlowRetx = "flow_retx"
)

// note appends a caveat.
func (r *Report) note(s string) { r.Notes = append(r.Notes, s) }

// reason returns why figure key is missing, or def.
func (r *Report) reason(key, def string) string {
	if s := r.reasons[key]; s != "" {
		return s
	}
	return def
}

// Bidir reports whether the run sent both ways at once (bench --bidir:
// manifest config direction "bidir"): the application rows then add both
// directions' payload, while each interface row counts one direction.
func (r *Report) Bidir() bool { return configString(r.Manifest.Config, "direction") == "bidir" }

// bidirText explains a bidir run's throughput rows; "" for other runs.
func (r *Report) bidirText() string {
	if !r.Bidir() {
		return ""
	}
	each := ""
	if n := ConfigInt(r.Manifest.Config, "streams"); n > 0 {
		each = fmt.Sprintf(" (%s each way)", plural(n, "stream"))
	}
	return fmt.Sprintf("bidir: the application rows add both directions' payload%s; each interface row counts "+
		"one direction's data: rx what %s received, tx what %s sent", each, orDash(r.Rx.Iface), orDash(r.Tx.Iface))
}

// steady returns Primary's windows, or nil.
func (r *Report) steady() *Windows {
	if r.Primary == nil || r.Primary.W == nil || !r.Primary.W.HasActive() {
		return nil
	}
	return r.Primary.W
}

// primaryDirection returns the direction Primary belongs to (PrimaryDir).
func (r *Report) primaryDirection() *Direction {
	if r.PrimaryDir == "tx" {
		return &r.Tx
	}
	return &r.Rx
}

// orDash returns s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Hot-core sources (Report.HotSource).
const (
	HotNetRx      = "NET_RX softirq (BPF irq:softirq_entry/exit)"
	HotAllSoftirq = "softirq of every vector (/proc/stat; NET_RX alone not measured)"
)

// HotShare is the share of c's time the hot-core figures and the softirq
// rules judge: NET_RX softirq (Share) when the softirq probe ran, else
// softirq of every vector from /proc/stat (an upper bound of NET_RX,
// tick-sampled), else 0.
func (r *Report) HotShare(c CPUStat) float64 {
	switch {
	case r.HotSource == HotAllSoftirq && c.Proc != nil:
		return c.Proc.Softirq
	case r.HotSource == HotAllSoftirq:
		return 0
	}
	return c.Share
}

// programDown returns the manifest's reason when program name is listed
// and not attached.
func (r *Report) programDown(name string) (string, bool) {
	for _, p := range r.Manifest.Probes {
		if p.Name == name && !p.Attached {
			return orDash(p.Reason), true
		}
	}
	return "", false
}

// programAttached reports whether the manifest lists the program named
// name as attached.
func (r *Report) programAttached(name string) bool {
	for _, p := range r.Manifest.Probes {
		if p.Name == name && p.Attached {
			return true
		}
	}
	return false
}

// probesOff explains BPF figures that are missing because the programs
// behind them did not run: "probes off" when the manifest lists none of
// progs (program names or name prefixes, e.g. "np_nd_"), else the first
// one's name and reason, e.g. "np_nd_rx not attached: not selected
// (--probes)". When one of them was attached it returns what, with the
// cause unknown.
func (r *Report) probesOff(what string, progs ...string) string {
	first, attached := r.matchProbes(progs)
	switch {
	case attached:
		return what
	case first == nil || first.Reason == "":
		return what + ": probes off"
	}
	return fmt.Sprintf("%s: %s not attached: %s", what, first.Name, first.Reason)
}

// programsDown returns probesOff(what, progs...) and true when the
// manifest lists programs matching progs (names or prefixes) and none of
// them attached: their columns then hold 0, not a measurement.
func (r *Report) programsDown(what string, progs ...string) (string, bool) {
	if first, attached := r.matchProbes(progs); attached || first == nil {
		return "", false
	}
	return r.probesOff(what, progs...), true
}

// matchProbes returns the first program the manifest lists that matches
// progs (names or name prefixes) and is not attached, and whether one
// that matches is attached (first is then not meaningful).
func (r *Report) matchProbes(progs []string) (first *trace.Probe, attached bool) {
	for i, p := range r.Manifest.Probes {
		for _, prefix := range progs {
			if !strings.HasPrefix(p.Name, prefix) {
				continue
			}
			if p.Attached {
				return nil, true
			}
			if first == nil {
				first = &r.Manifest.Probes[i]
			}
		}
	}
	return first, false
}
