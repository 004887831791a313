// Package analysistest generates synthetic netprof traces for tests and
// benchmarks of package analysis: a TCP transfer between two namespaces
// (sender 198.18.0.1 on veth-a, or Scenario.SenderIface, receiver 198.18.0.2 on veth-b) whose rate,
// softirq load, RTT, window and retransmits follow the Scenario's
// functions, with every table consistent (application bytes, interface and
// wire bytes from MTU/MSS, per-flow segments).
package analysistest

import (
	"fmt"
	"maps"
	"time"

	"github.com/netprof/netprof/trace"
)

// Addresses of the synthetic test bed (benchmarking range).
const (
	SenderAddr   = "198.18.0.1"
	ReceiverAddr = "198.18.0.2"
	ReceiverPort = 5001
	SenderNetns  = 4026532001
	RecvNetns    = 4026532002
)

// Scenario describes a synthetic run. Zero fields take the defaults noted.
type Scenario struct {
	// Start is the run start (default 2026-01-01T00:00:00Z); Intervals the
	// number of intervals (default 10) of Interval each (default 1 s).
	Start     time.Time
	Intervals int
	Interval  time.Duration
	// Streams is the TCP stream count (default 4); BlockSize goes into the
	// manifest config (default 131072).
	Streams, BlockSize int
	// RateBps returns the application payload rate of interval i (all
	// streams), bit/s (default 10 Gbit/s flat).
	RateBps func(i int) float64
	// MTU and MSS in bytes (default 1500, 1448); RatedMbps the rated speed
	// in the manifest (0: null).
	MTU, MSS  int
	RatedMbps int64
	// CPUs is the CPU count (default 2); Softirq returns CPU c's NET_RX
	// share of interval i (default 0.3 on CPU 0, 0.1 elsewhere);
	// NapiExhausted is napi_budget_exhausted / napi_polls (default 0).
	CPUs          int
	Softirq       func(i, cpu int) float64
	NapiExhausted float64
	// ProcStat, when set, returns CPU c's /proc/stat softirq (every
	// vector) and busy shares of interval i: the cpus rows get proc_*
	// columns (proc_total_ns = interval_ns); nil leaves them null.
	ProcStat func(i, cpu int) (softirq, busy float64)
	// NoSoftirqProbe records the run as bench's --probes default does:
	// the softirq and napi programs not selected (listed in the manifest
	// with trace.ReasonNotSelected) and the cpus rows' NET_RX/NET_TX time
	// and NAPI columns null, so the hot core is /proc/stat's softirq of
	// every vector (give ProcStat) and Softirq is not recorded.
	NoSoftirqProbe bool
	// SenderIface and SenderDriver name the sending interface and its
	// driver in the rows and the manifest (default veth-a, veth: the local
	// test bed's), e.g. eth0/mlx5_core for a run to a peer, lo/loopback.
	SenderIface, SenderDriver string
	// Config holds manifest config keys set over the default's (command
	// bench, streams, block_size), e.g. "peer" or "command": "watch".
	Config map[string]any
	// PossibleCPUs is the machine's possible CPU count (default CPUs): the
	// manifest lists CPUs 0..CPUs-1 online and 0..PossibleCPUs-1 possible.
	// NeverOnlineRows adds the all-zero rows a netprof before the online
	// filter recorded for the CPUs never online (per-CPU BPF maps hold a
	// value for every possible CPU); LegacyManifest leaves cpus_online and
	// cpus_possible out, as in a trace from before them.
	PossibleCPUs    int
	NeverOnlineRows bool
	LegacyManifest  bool
	// IdleCPUs are online CPUs whose rows are all zero (they ran nothing
	// netprof counts) and have no /proc/stat columns.
	IdleCPUs []int
	// RTTMinUs is the min RTT (default 40 µs) and RTTP50Us the p50 of
	// interval i (default 2 × RTTMinUs); srtt is the p50.
	RTTMinUs uint32
	RTTP50Us func(i int) uint32
	// WindowRatio is each stream's rate over snd_cwnd × mss / srtt (cwnd is
	// derived from it; default 0.5).
	WindowRatio float64
	// RetxFraction is retransmitted / sent segments (default 0).
	RetxFraction float64
	// Chrono, when set, gives the sending flows the socket iterator's
	// chrono columns: the shares of each interval sending limited by
	// neither, by the receiver's window and by the send buffer
	// (tcp_busy_us gets their sum: the time with data to send;
	// tcp_rwnd_limited_us, tcp_sndbuf_limited_us).
	Chrono *[3]float64
}

// withDefaults fills zero fields.
func (s Scenario) withDefaults() Scenario {
	if s.Start.IsZero() {
		s.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	s.Intervals = or(s.Intervals, 10)
	if s.Interval == 0 {
		s.Interval = time.Second
	}
	s.Streams, s.BlockSize = or(s.Streams, 4), or(s.BlockSize, 131072)
	s.MTU, s.MSS, s.CPUs = or(s.MTU, 1500), or(s.MSS, 1448), or(s.CPUs, 2)
	s.PossibleCPUs = max(s.PossibleCPUs, s.CPUs)
	if s.RateBps == nil {
		s.RateBps = func(int) float64 { return 10e9 }
	}
	if s.Softirq == nil {
		s.Softirq = func(_, c int) float64 { return map[bool]float64{true: 0.3, false: 0.1}[c == 0] }
	}
	if s.RTTMinUs == 0 {
		s.RTTMinUs = 40
	}
	if s.RTTP50Us == nil {
		m := s.RTTMinUs
		s.RTTP50Us = func(int) uint32 { return 2 * m }
	}
	if s.WindowRatio == 0 {
		s.WindowRatio = 0.5
	}
	if s.SenderIface == "" {
		s.SenderIface = "veth-a"
	}
	if s.SenderDriver == "" {
		s.SenderDriver = "veth"
	}
	return s
}

func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Manifest returns the run's manifest (status ok).
func (s Scenario) Manifest() trace.Manifest {
	s = s.withDefaults()
	var rated *int64
	if s.RatedMbps > 0 {
		rated = &s.RatedMbps
	}
	m := trace.Manifest{SchemaVersion: trace.SchemaVersion, ToolVersion: "test", Start: s.Start,
		End: s.Start.Add(time.Duration(s.Intervals) * s.Interval), Host: "synthetic", Kernel: "6.18",
		CPUCount: s.CPUs, CPUsOnline: cpuRange(s.CPUs), CPUsPossible: cpuRange(s.PossibleCPUs),
		IntervalNs: s.Interval.Nanoseconds(), Status: trace.StatusOK,
		Interfaces: []trace.Interface{
			{Name: s.SenderIface, Index: 2, Netns: SenderNetns, Driver: s.SenderDriver, MTU: s.MTU, RatedSpeedMbps: rated, Role: trace.RoleSender},
			{Name: "veth-b", Index: 2, Netns: RecvNetns, Driver: "veth", MTU: s.MTU, RatedSpeedMbps: rated, Role: trace.RoleReceiver},
		},
		Config: map[string]any{"command": "bench", "streams": float64(s.Streams), "block_size": float64(s.BlockSize)},
	}
	maps.Copy(m.Config, s.Config)
	if s.LegacyManifest {
		m.CPUsOnline, m.CPUsPossible = "", ""
	}
	if s.NoSoftirqProbe {
		for _, p := range [][2]string{{"np_si_entry", "irq:softirq_entry"}, {"np_si_exit", "irq:softirq_exit"}, {"np_nd_napi", "napi:napi_poll"}} {
			m.Probes = append(m.Probes, trace.Probe{Name: p[0], Hook: p[1], Reason: trace.ReasonNotSelected})
		}
	}
	return m
}

// cpuRange returns "0-(n-1)" in the kernel's CPU list format.
func cpuRange(n int) string {
	if n == 1 {
		return "0"
	}
	return fmt.Sprintf("0-%d", n-1)
}

// Tables returns every interval's rows, concatenated per table.
func (s Scenario) Tables() (ifaces []trace.IfaceRow, cpus []trace.CPURow, flows []trace.FlowRow, traffic []trace.TrafficRow) {
	s = s.withDefaults()
	for i := range s.Intervals {
		iv := s.IntervalRows(i)
		ifaces, cpus = append(ifaces, iv.Ifaces...), append(cpus, iv.CPUs...)
		flows, traffic = append(flows, iv.Flows...), append(traffic, iv.Traffic...)
	}
	return
}

// Write records the scenario as a run directory through trace.Create.
func (s Scenario) Write(dir string) error {
	s = s.withDefaults()
	w, err := trace.Create(dir, s.Manifest())
	if err != nil {
		return err
	}
	for i := range s.Intervals {
		if err := w.WriteInterval(s.IntervalRows(i)); err != nil {
			w.Close(time.Now(), "failed") //nolint:errcheck // already failing
			return err
		}
	}
	return w.Close(s.Start.Add(time.Duration(s.Intervals)*s.Interval), trace.StatusOK)
}

// streamPort is stream k's sender port.
func streamPort(k int) uint16 { return uint16(40000 + k) }

// IntervalRows returns the rows of interval i (0-based).
func (s Scenario) IntervalRows(i int) trace.Interval {
	s = s.withDefaults()
	end := s.Start.Add(time.Duration(i+1) * s.Interval)
	ns := s.Interval.Nanoseconds()
	app := uint64(s.RateBps(i) / 8 * s.Interval.Seconds())
	per := app / uint64(s.Streams)
	var iv trace.Interval
	var segsTotal uint64
	for k := range s.Streams {
		segs := (per + uint64(s.MSS) - 1) / uint64(s.MSS)
		segsTotal += segs
		iv.Traffic = append(iv.Traffic, s.traffic(end, ns, k, per, segs)...)
		iv.Flows = append(iv.Flows, s.flows(i, end, ns, k, per, segs)...)
	}
	iv.Ifaces = s.ifaces(end, ns, app, segsTotal)
	iv.CPUs = s.cpus(i, end, ns, segsTotal)
	return iv
}

func (s Scenario) traffic(end time.Time, ns int64, k int, per, segs uint64) []trace.TrafficRow {
	local := fmt.Sprintf("%s:%d", SenderAddr, streamPort(k))
	remote := fmt.Sprintf("%s:%d", ReceiverAddr, ReceiverPort)
	retx := uint64(s.RetxFraction * float64(segs))
	p50 := s.RTTP50Us(0)
	return []trace.TrafficRow{
		{Time: end, IntervalNs: ns, Stream: int32(k), Role: trace.RoleSender, LocalAddr: local, RemoteAddr: remote,
			AppBytes: per, TCPRetransmits: &retx, TCPRttUs: &p50},
		{Time: end, IntervalNs: ns, Stream: int32(k), Role: trace.RoleReceiver, LocalAddr: remote, RemoteAddr: local, AppBytes: per},
	}
}
