// Package bench runs netprof's main job: a TCP transfer over a test bed of
// two network namespaces joined by veth, with the BPF probes, netlink
// counters and the generator's own counts recorded every interval into a
// run directory (trace format v1), then analysed.
package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/netprof/netprof/traffic"
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
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("invalid port %d: must be 1..65535", c.Port))
	}
	return errors.Join(errs...)
}

func (c Config) traffic() traffic.Config {
	return traffic.Config{Streams: c.Streams, Duration: c.Duration, BlockSize: c.BlockSize}
}

// manifestConfig is the configuration as recorded in manifest.json.
func (c Config) manifestConfig() map[string]any {
	return map[string]any{
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
}
