// Package traffic is netprof's TCP load generator (ntttcp/iperf3 class): a
// Sender that drives N parallel streams for a fixed time and a Receiver that
// sinks them, each counting payload bytes per stream with atomic counters that
// can be sampled at any time. It knows nothing about network namespaces: it
// takes a net.Listener and a DialFunc, so callers decide where sockets live.
//
// Wire protocol (version 1, big-endian): each connection starts with a 32-byte
// hello from the dialing end (magic "NPTH", version, flags, stream index,
// stream count, 16-byte run id); the accepting end answers with an 8-byte ack
// (magic "NPAK", status). Flag bit 0 (reverse) says the dialing end receives
// and the accepting end sends (iperf3 -R); without it the dialing end sends.
// Payload follows until the sending end half-closes; the receiving end then
// sends a 16-byte trailer (magic "NPFN", payload bytes it read), which the
// sending end checks against what it wrote. Hello, ack and trailer are not
// counted as payload.
//
// NewSender and NewReceiver dial and accept by themselves (forward only);
// DialStreams and AcceptStreams establish every stream of either direction
// first, for NewSenderConns and NewReceiverConns to run on.
package traffic

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

const (
	// DefaultBlockSize is the usual Config.BlockSize: 128 KiB per write/read.
	DefaultBlockSize = 128 << 10
	// MaxBlockSize is the largest Config.BlockSize accepted (64 MiB).
	MaxBlockSize = 64 << 20
	// MaxStreams is the largest Config.Streams accepted.
	MaxStreams = 4096
	// DefaultConnectTimeout bounds each stream's TCP handshake plus hello/ack
	// exchange when Config.ConnectTimeout is zero.
	DefaultConnectTimeout = 5 * time.Second
)

// Config describes one run. Sender and receiver must agree on Streams.
type Config struct {
	// Streams is the number of parallel TCP connections, 1..MaxStreams.
	Streams int
	// Duration is how long the sender writes, measured from the start of
	// Sender.Run (after all streams are connected). Must be positive for a
	// Sender; the Receiver ignores it.
	Duration time.Duration
	// BlockSize is the number of bytes per write (sender) or read buffer
	// size (receiver), 1..MaxBlockSize; DefaultBlockSize is the usual value.
	// Zero is invalid: use WithDefaults to fill it in.
	BlockSize int
	// ConnectTimeout bounds each stream's connect (TCP handshake and the
	// hello/ack exchange). Zero means DefaultConnectTimeout; negative is
	// invalid.
	ConnectTimeout time.Duration
	// CPUs, when set, pins stream i's sending or receiving loop (its OS
	// thread) to CPUs[i % len(CPUs)], like ntttcp -m and iperf3 -A; the
	// kernel work the loop does in the socket calls (and, on veth, the
	// softirq its sends raise) runs there too. Empty: not pinned.
	CPUs []int
}

// DefaultConfig returns one stream for 10 s with DefaultBlockSize.
func DefaultConfig() Config {
	return Config{Streams: 1, Duration: 10 * time.Second, BlockSize: DefaultBlockSize}
}

// WithDefaults returns c with a zero BlockSize replaced by DefaultBlockSize.
// Other fields are left as they are (zero Streams stays invalid).
func (c Config) WithDefaults() Config {
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	return c
}

// Validate returns nil, or an error listing every problem with c (one line
// each). It checks what a Sender needs; a Receiver needs all of it but
// Duration.
func (c Config) Validate() error {
	var errDur error
	if c.Duration <= 0 {
		errDur = fmt.Errorf("invalid duration %v: must be positive", c.Duration)
	}
	return errors.Join(c.validateCommon(), errDur)
}

func (c Config) validateCommon() error {
	var errs []error
	if c.Streams < 1 || c.Streams > MaxStreams {
		errs = append(errs, fmt.Errorf("invalid stream count %d: must be 1..%d", c.Streams, MaxStreams))
	}
	if c.BlockSize < 1 || c.BlockSize > MaxBlockSize {
		errs = append(errs, fmt.Errorf("invalid block size %d bytes: must be 1..%d (default %d)", c.BlockSize, MaxBlockSize, DefaultBlockSize))
	}
	if c.ConnectTimeout < 0 {
		errs = append(errs, fmt.Errorf("invalid connect timeout %v: must not be negative", c.ConnectTimeout))
	}
	for _, cpu := range c.CPUs {
		if cpu < 0 || cpu >= maxPinCPU {
			errs = append(errs, fmt.Errorf("invalid CPU %d to pin a stream to: must be 0..%d", cpu, maxPinCPU-1))
		}
	}
	return errors.Join(errs...)
}

func (c Config) connectTimeout() time.Duration {
	if c.ConnectTimeout == 0 {
		return DefaultConnectTimeout
	}
	return c.ConnectTimeout
}

// maxPinCPU bounds the CPU numbers Config.CPUs takes (the affinity mask's
// size).
const maxPinCPU = 1024

// pinned runs fn on the calling goroutine locked to its OS thread, that
// thread bound to cpus[i % len(cpus)]; with no cpus it just runs fn. The
// thread is not unlocked: when the goroutine ends the runtime ends the
// thread, so no other goroutine inherits the affinity. Only a stream's own
// goroutine calls it, which ends soon after fn returns.
func pinned(cpus []int, i int, fn func() error) error {
	if len(cpus) == 0 {
		return fn()
	}
	runtime.LockOSThread()
	cpu := cpus[i%len(cpus)]
	if err := pinThread(cpu); err != nil {
		return fmt.Errorf("stream %d: pin to CPU %d: %w", i, cpu, err)
	}
	return fn()
}
