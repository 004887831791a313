// Package bench runs netprof's main job: a TCP transfer over a test bed of
// two network namespaces joined by veth, with the BPF probes, netlink
// counters and the generator's own counts recorded every interval into a
// run directory (trace format v1), then analysed.
package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/delayline"
)

// Config is what `netprof bench` was asked to do. The zero value is not
// valid; start from DefaultConfig.
type Config struct {
	Duration  time.Duration // sending time, after every stream is connected
	Streams   int           // parallel TCP connections
	BlockSize int           // bytes per write/read
	Interval  time.Duration // sampling period
	Out       string        // run directory; "" means ./runs/<UTC timestamp>
	NoBPF     bool          // generator + netlink only
	Port      int           // receiver's TCP port
	// FlowEntries sizes the BPF flow table (LRU; evictions are recorded).
	FlowEntries uint32
	// RTT, when positive, joins the namespaces through netprof's
	// user-space delay line (TUN devices, see testbed.Options.Delay)
	// instead of a veth pair, with a one-way delay of RTT/2 in each
	// direction: the path's round trip is RTT plus the line's own
	// ~0.2–0.5 ms. TCP buffer limits are raised inside both namespaces
	// (RTTSysctls) so a stream is not capped at 4 MB per round trip.
	// 0 means a direct veth pair.
	RTT time.Duration
	// Argv is recorded in the manifest.
	Argv []string
}

// DefaultConfig is `netprof bench` with no flags: 4 streams for 10 s,
// 128 KiB blocks, 1 s intervals, probes on.
func DefaultConfig() Config {
	return Config{
		Duration: 10 * time.Second, Streams: 4, BlockSize: traffic.DefaultBlockSize,
		Interval: time.Second, Port: 5001, FlowEntries: 16384,
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
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("invalid port %d: must be 1..65535", c.Port))
	}
	return errors.Join(errs...)
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
	if c.RTT <= 0 {
		return testbed.Options{}
	}
	return testbed.Options{Delay: c.RTT / 2, Sysctls: RTTSysctls}
}

func (c Config) traffic() traffic.Config {
	return traffic.Config{Streams: c.Streams, Duration: c.Duration, BlockSize: c.BlockSize}
}

// manifestConfig is the configuration as recorded in manifest.json.
func (c Config) manifestConfig() map[string]any {
	m := map[string]any{
		"command":      "bench",
		"duration_ns":  c.Duration.Nanoseconds(),
		"streams":      c.Streams,
		"block_size":   c.BlockSize,
		"interval_ns":  c.Interval.Nanoseconds(),
		"no_bpf":       c.NoBPF,
		"port":         c.Port,
		"flow_entries": c.FlowEntries,
		"testbed":      "veth pair between two network namespaces",
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
