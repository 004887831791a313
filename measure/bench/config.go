// Package bench runs netprof's main job: a TCP transfer over a test bed of
// two network namespaces joined by veth, with the BPF probes, netlink
// counters and the generator's own counts recorded every interval into a
// run directory (trace format v1), then analysed.
package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/measure/jsonstream"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/delayline"
)

// Config is what `netprof bench` was asked to do. The zero value is not
// valid; start from DefaultConfig.
type Config struct {
	// Duration is the measured sending time, after every stream is
	// connected and after Warmup; the sender sends for Warmup + Duration +
	// Cooldown in all.
	Duration  time.Duration
	Streams   int           // parallel TCP connections per direction
	BlockSize int           // bytes per write/read
	Interval  time.Duration // sampling period
	Out       string        // run directory; "" means ./runs/<UTC timestamp>
	NoBPF     bool          // generator + netlink only
	// Port is the receiver's TCP port on the local test bed; Ports, when
	// set, replaces it with one port per stream (shared round-robin when
	// there are more streams than ports), as `traffic serve --ports` does.
	Port  int
	Ports []int
	// FlowEntries sizes the BPF flow table, in flows (0: netdev's
	// default; at most MaxFlowEntries). It is not LRU: flows that find it
	// full are counted as lost bytes and packets (probes.parquet's
	// map:netdev rows), which the report notes.
	FlowEntries uint32
	// BPFStats turns on the kernel's BPF run-time statistics for the run
	// (the probes table's run_count and run_time_ns; 0 without it). On by
	// default; off saves the two clock reads per program run (~40 ns here).
	BPFStats bool
	// Probes selects the probe groups to attach (probeset.Groups, `--probes`);
	// nil attaches all of them.
	Probes []string
	// RTT, when positive, joins the namespaces through netprof's
	// user-space delay line (TUN devices, see testbed.Options.Delay)
	// instead of a veth pair, with a one-way delay of RTT/2 in each
	// direction: the path's round trip is RTT plus the line's own
	// ~0.2–0.5 ms. TCP buffer limits are raised inside both namespaces
	// (RTTSysctls) so a stream is not capped at 4 MB per round trip.
	// 0 means a direct veth pair.
	RTT time.Duration
	// Direction is control.Send (the default when empty: this end, or
	// namespace A, sends), control.Reverse or control.Bidir (Streams each
	// way; reverse streams are numbered Streams..2×Streams-1 in the trace).
	Direction control.Direction
	// Warmup and Cooldown are sending time before and after Duration that
	// is recorded (traffic.phase "warmup"/"cooldown") but excluded from
	// every figure.
	Warmup, Cooldown time.Duration
	// Peer, when set, is the HOST[:PORT] of a `netprof traffic serve`
	// (port DefaultPeerPort when absent): the run goes to that machine
	// instead of the local test bed.
	Peer string
	// PeerTimeout is how long a --peer run goes on without an interval
	// report from the peer before it gives up (0: DefaultPeerTimeout).
	PeerTimeout time.Duration
	// ConnectTimeout bounds each data stream's connect (0: the default,
	// traffic.DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// SockOpts are applied to this host's data sockets (both ends on the
	// local test bed; BindDev only to namespace A's).
	SockOpts traffic.SockOpts
	// IPv6 gives the local test bed IPv6 addresses (BedV6A, BedV6B), or
	// prefers a peer name's IPv6 address.
	IPv6 bool
	// LinkSpeedBps is the rated link speed in bit/s (`--link-speed`) and
	// ExpectRTT the min RTT expected of the peer (`--expect-rtt`, the
	// hairpin rule); 0 leaves them to the interfaces and the default.
	// Recorded in the manifest's config (analysis.ConfigLinkSpeed,
	// analysis.ConfigExpectRTT), where the run's report and a later
	// `netprof analyze` take them as defaults.
	LinkSpeedBps float64
	ExpectRTT    time.Duration
	// Live, when set, receives one line per interval (rate, retransmits,
	// busiest CPU).
	Live io.Writer
	// CPUs pins stream i's loop on each end to CPUs[i % len(CPUs)]
	// (--cpus, local test bed only; empty: not pinned).
	CPUs []int
	// Metrics, if set, receives every interval (--prometheus).
	Metrics *metrics.Exporter
	// Stream, if set, gets every interval as a JSON line (--json-stream).
	Stream *jsonstream.Stream
	// Argv is recorded in the manifest.
	Argv []string
}

// MaxFlowEntries is the largest flow table Validate accepts: 4 Mi flows,
// about 770 MB of kernel memory (the kernel charges some 185 bytes each:
// the manifest's maps give its memlock figure).
const MaxFlowEntries = 1 << 22

// DefaultPeerPort is the control port of a peer given without one (the
// default of `netprof traffic serve --listen`).
const DefaultPeerPort = 5000

// DefaultPeerTimeout is Config.PeerTimeout's default.
const DefaultPeerTimeout = 5 * time.Second

// Addresses of the local test bed with Config.IPv6 (from 2001:2::/48).
var (
	BedV6A = netip.MustParsePrefix("2001:2::1/64")
	BedV6B = netip.MustParsePrefix("2001:2::2/64")
)

// DefaultConfig is `netprof bench` with no flags: 4 streams for 10 s,
// 128 KiB blocks, 1 s intervals, probes on.
func DefaultConfig() Config {
	return Config{
		Duration: 10 * time.Second, Streams: 4, BlockSize: traffic.DefaultBlockSize,
		Interval: time.Second, Port: 5001, FlowEntries: 16384, BPFStats: true, Direction: control.Send,
	}
}

// Validate returns an error listing every invalid field.
func (c Config) Validate() error {
	var errs []error
	if err := c.traffic().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Interval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("invalid interval %v: must be at least 10ms", c.Interval))
	}
	if c.Interval > c.Duration && c.Duration > 0 {
		errs = append(errs, fmt.Errorf("interval %v is longer than the duration %v: no complete interval would be recorded", c.Interval, c.Duration))
	}
	if c.RTT < 0 || c.RTT > 2*testbed.MaxDelay {
		errs = append(errs, fmt.Errorf("invalid rtt %v: must be 0 (direct veth) up to %v", c.RTT, 2*testbed.MaxDelay))
	}
	for _, p := range append([]int{c.Port}, c.Ports...) {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("invalid port %d: must be 1..65535", p))
		}
	}
	if c.FlowEntries > MaxFlowEntries {
		errs = append(errs, fmt.Errorf("invalid flow entries %d: must be 1..%d", c.FlowEntries, MaxFlowEntries))
	}
	if c.LinkSpeedBps < 0 || c.ExpectRTT < 0 {
		errs = append(errs, fmt.Errorf("invalid link speed %g bit/s or expected RTT %v: must not be negative", c.LinkSpeedBps, c.ExpectRTT))
	}
	if c.Warmup < 0 || c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("invalid warmup %v or cooldown %v: must not be negative", c.Warmup, c.Cooldown))
	}
	if len(c.CPUs) > 0 && c.Peer != "" {
		errs = append(errs, errors.New("--cpus pins the local test bed's streams; with --peer it is not supported yet"))
	}
	if len(c.CPUs) > 0 {
		var allowed unix.CPUSet
		if err := unix.SchedGetaffinity(0, &allowed); err == nil {
			for _, cpu := range c.CPUs {
				if cpu >= 0 && cpu < 1024 && !allowed.IsSet(cpu) {
					errs = append(errs, fmt.Errorf("--cpus: CPU %d is not one this process may run on (affinity has %d CPUs)", cpu, allowed.Count()))
				}
			}
		}
	}
	switch c.dir() {
	case control.Send, control.Reverse, control.Bidir:
	default:
		errs = append(errs, fmt.Errorf("invalid direction %q: want send, reverse or bidir", c.Direction))
	}
	errs = append(errs, c.validatePeer(), c.SockOpts.Validate())
	return errors.Join(errs...)
}

func (c Config) validatePeer() error {
	if c.Peer == "" {
		return nil
	}
	var errs []error
	if c.RTT > 0 {
		errs = append(errs, errors.New("rtt adds a delay line to the local test bed; it does not combine with a peer"))
	}
	if c.Interval < control.MinInterval {
		errs = append(errs, fmt.Errorf("invalid interval %v: with a peer it must be at least %v", c.Interval, control.MinInterval))
	}
	if c.PeerTimeout != 0 && c.PeerTimeout <= c.Interval {
		errs = append(errs, fmt.Errorf("invalid peer timeout %v: must be longer than the interval %v", c.PeerTimeout, c.Interval))
	}
	return errors.Join(errs...)
}

// dir returns the direction, Send when unset.
func (c Config) dir() control.Direction {
	if c.Direction == "" {
		return control.Send
	}
	return c.Direction
}

// streamCounts returns the number of forward (A or this end sends) and
// reverse streams.
func (c Config) streamCounts() (forward, reverse int) {
	switch c.dir() {
	case control.Reverse:
		return 0, c.Streams
	case control.Bidir:
		return c.Streams, c.Streams
	}
	return c.Streams, 0
}

// sendTime is the whole sending time: warm-up, measured duration and
// cool-down.
func (c Config) sendTime() time.Duration { return c.Warmup + c.Duration + c.Cooldown }

// ports returns the local test bed's data ports.
func (c Config) ports() []int {
	if len(c.Ports) > 0 {
		return c.Ports
	}
	return []int{c.Port}
}

func (c Config) peerTimeout() time.Duration {
	if c.PeerTimeout > 0 {
		return c.PeerTimeout
	}
	return max(DefaultPeerTimeout, 2*c.Interval+time.Second)
}

func (c Config) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return traffic.DefaultConnectTimeout
}

// RTTSysctls are written inside both namespaces when Config.RTT is set:
// the maximum TCP receive and send buffers raised from the usual 32 MiB /
// 4 MiB to 64 MiB, so one stream can keep 64 MiB in flight (about
// 25 Gbit/s at 20 ms, 3 Gbit/s at 170 ms). Minimum and default sizes are
// Linux's defaults. tcp_rmem and tcp_wmem are per network namespace, so the
// host's own settings are untouched.
var RTTSysctls = map[string]string{
	"net.ipv4.tcp_rmem": "4096 131072 67108864",
	"net.ipv4.tcp_wmem": "4096 16384 67108864",
}

// bedOptions returns the test bed for c: a veth pair, or the delay line.
func (c Config) bedOptions() testbed.Options {
	var o testbed.Options
	if c.IPv6 {
		o.AddrA, o.AddrB = BedV6A, BedV6B
	}
	if c.RTT > 0 {
		o.Delay, o.Sysctls = c.RTT/2, RTTSysctls
	}
	return o
}

func (c Config) traffic() traffic.Config {
	return traffic.Config{Streams: c.Streams, Duration: c.sendTime(), BlockSize: c.BlockSize, ConnectTimeout: c.ConnectTimeout, CPUs: c.CPUs}
}

// manifestConfig is the configuration as recorded in manifest.json.
func (c Config) manifestConfig() map[string]any {
	m := map[string]any{
		"command":      "bench",
		"cpus":         cpusConfig(c.CPUs),
		"duration_ns":  c.Duration.Nanoseconds(),
		"streams":      c.Streams,
		"block_size":   c.BlockSize,
		"interval_ns":  c.Interval.Nanoseconds(),
		"no_bpf":       c.NoBPF,
		"port":         c.Port,
		"flow_entries": c.FlowEntries,
		"testbed":      "veth pair between two network namespaces",
		"direction":    string(c.dir()),
		"warmup_ns":    c.Warmup.Nanoseconds(),
		"cooldown_ns":  c.Cooldown.Nanoseconds(),
		"send_time_ns": c.sendTime().Nanoseconds(),
		"ipv6":         c.IPv6,
	}
	if len(c.Ports) > 0 {
		m["ports"] = c.Ports
	}
	// The probe selection as asked (--probes; absent: every group) and
	// --bpf-stats=false, for the report's config line.
	if len(c.Probes) > 0 && !c.NoBPF {
		m["probes"] = c.Probes
	}
	if !c.BPFStats && !c.NoBPF {
		m["bpf_stats"] = false
	}
	if !c.SockOpts.IsZero() {
		m["socket_options"] = sockOptsConfig(c.SockOpts)
	}
	if c.LinkSpeedBps > 0 {
		m[analysis.ConfigLinkSpeed] = int64(c.LinkSpeedBps)
	}
	if c.ExpectRTT > 0 {
		m[analysis.ConfigExpectRTT] = c.ExpectRTT.Nanoseconds()
	}
	if c.Peer != "" {
		delete(m, "testbed")
		delete(m, "port")
		m["peer"] = c.Peer
		m["peer_timeout_ns"] = c.peerTimeout().Nanoseconds()
	}
	if c.RTT > 0 {
		m["testbed"] = "TUN device in each of two network namespaces, joined by netprof's user-space delay line"
		m["rtt_ns"] = c.RTT.Nanoseconds()
		m["one_way_delay_ns"] = (c.RTT / 2).Nanoseconds()
		m["netns_sysctls"] = c.bedOptions().Sysctls
	}
	return m
}

// recordDelayLine adds the delay line's counters (if the bed has one) to
// the manifest's config as "delay_line": packets and bytes forwarded and
// dropped per direction, and packets released late (more than
// delayline.LateThreshold after arrival + delay, because the line was
// CPU-bound). Drops there are loss on the path, so they are also logged.
func recordDelayLine(bed *testbed.Bed, w *trace.Writer, log *slog.Logger) {
	st, ok := bed.DelayStats()
	if !ok {
		return
	}
	dir := func(d delayline.DirStats) map[string]uint64 {
		return map[string]uint64{
			"packets": d.Packets, "bytes": d.Bytes, "dropped_packets": d.Dropped,
			"dropped_bytes": d.DroppedBytes, "write_errors": d.WriteErrors,
			"late_packets": d.Late, "max_late_ns": uint64(d.MaxLate.Nanoseconds()),
		}
	}
	if st.AB.Dropped+st.BA.Dropped+st.AB.WriteErrors+st.BA.WriteErrors > 0 {
		log.Warn("delay line lost packets", "a_to_b_dropped", st.AB.Dropped, "b_to_a_dropped", st.BA.Dropped,
			"write_errors", st.AB.WriteErrors+st.BA.WriteErrors)
	}
	err := w.UpdateManifest(func(m *trace.Manifest) {
		if m.Config == nil {
			m.Config = map[string]any{}
		}
		m.Config["delay_line"] = map[string]any{"a_to_b": dir(st.AB), "b_to_a": dir(st.BA)}
	})
	if err != nil {
		log.Error("record delay line counters", "err", err)
	}
}

// cpusConfig is --cpus as recorded in the manifest: the list, or nil.
func cpusConfig(cpus []int) any {
	if len(cpus) == 0 {
		return nil
	}
	return cpus
}
