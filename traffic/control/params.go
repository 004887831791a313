// Package control is netprof's test-control protocol and server (the role
// of iperf3 -s and ntttcp -r): a client asks a server for a test over one
// TCP control connection, both ends open the negotiated data ports, and the
// server reports what its end saw every interval.
//
// # Protocol (version 1)
//
// Every message is a frame: a 12-byte header (magic "NPCT", uint16
// version, uint16 reserved = 0, uint32 body length; big-endian) and a JSON
// body of at most MaxMessage bytes with a "type" field. Every read and write
// has a deadline. A session is:
//
//  1. client → setup {params}: streams, duration_ns, block_size, direction
//     (send, reverse, bidir), interval_ns, connect_timeout_ns, run_id.
//  2. server → setup_ok {session}: the parameters as accepted plus the data
//     ports (stream i of the forward set uses ports[i mod len(ports)]; in a
//     bidir test reverse stream i uses ports[(streams+i) mod len(ports)]), or
//     error {code, error}: busy (another test runs; the client is
//     disconnected), version, limit (naming the limit), invalid.
//  3. the client opens every data stream (traffic.DialStreams) within the
//     connect timeout; then start, or abort {error} naming the failures.
//  4. server → interval {...} at the end of every interval: per-stream
//     payload bytes the server read or wrote, host CPU by mode from
//     /proc/stat and the server process's CPU seconds.
//  5. server → result {...} when its side ends, then the server closes.
//
// The server runs one test at a time, bounds what a client can make it
// allocate (Limits), and survives garbage, oversized frames and clients that
// vanish at any step: it logs, cleans up and serves the next client.
package control

import (
	"errors"
	"fmt"
	"time"

	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/traffic"
)

// Direction says which end sends.
type Direction string

// Directions.
const (
	// Send: the client sends, the server receives (the default).
	Send Direction = "send"
	// Reverse: the server sends, the client receives (iperf3 -R).
	Reverse Direction = "reverse"
	// Bidir: both send at once, on separate streams (Streams each way).
	Bidir Direction = "bidir"
)

// streams returns the number of forward (client sends) and reverse streams.
func (d Direction) streams(n int) (forward, reverse int) {
	switch d {
	case Reverse:
		return 0, n
	case Bidir:
		return n, n
	}
	return n, 0
}

// Params are what a client asks for. Zero Interval and ConnectTimeout mean
// the defaults; BlockSize 0 means traffic.DefaultBlockSize; RunID "" is
// filled in by Dial.
type Params struct {
	Streams        int           `json:"streams"`
	Duration       time.Duration `json:"duration_ns"`
	BlockSize      int64         `json:"block_size"`
	Direction      Direction     `json:"direction"`
	Interval       time.Duration `json:"interval_ns"`
	ConnectTimeout time.Duration `json:"connect_timeout_ns"`
	RunID          string        `json:"run_id"`
}

// Defaults for zero Params fields.
const (
	DefaultInterval       = time.Second
	DefaultConnectTimeout = traffic.DefaultConnectTimeout
	// MinInterval is the shortest reporting interval.
	MinInterval = 100 * time.Millisecond
)

// WithDefaults fills zero fields with their defaults.
func (p Params) WithDefaults() Params {
	if p.Direction == "" {
		p.Direction = Send
	}
	if p.BlockSize == 0 {
		p.BlockSize = traffic.DefaultBlockSize
	}
	if p.Interval == 0 {
		p.Interval = DefaultInterval
	}
	if p.ConnectTimeout == 0 {
		p.ConnectTimeout = DefaultConnectTimeout
	}
	return p
}

// Validate checks what is wrong in itself, whatever the server's limits:
// one line per problem.
func (p Params) Validate() error {
	var errs []error
	if p.Streams < 1 {
		errs = append(errs, fmt.Errorf("invalid stream count %d: must be at least 1", p.Streams))
	}
	if p.Duration <= 0 {
		errs = append(errs, fmt.Errorf("invalid duration %v: must be positive", p.Duration))
	}
	if p.BlockSize < 1 {
		errs = append(errs, fmt.Errorf("invalid block size %d bytes: must be positive", p.BlockSize))
	}
	switch p.Direction {
	case Send, Reverse, Bidir:
	default:
		errs = append(errs, fmt.Errorf("invalid direction %q: want send, reverse or bidir", p.Direction))
	}
	if p.Interval < MinInterval {
		errs = append(errs, fmt.Errorf("invalid interval %v: must be at least %v", p.Interval, MinInterval))
	}
	if p.ConnectTimeout <= 0 {
		errs = append(errs, fmt.Errorf("invalid connect timeout %v: must be positive", p.ConnectTimeout))
	}
	if _, err := traffic.ParseRunID(p.RunID); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Limits bound what a remote client can make the server do. Zero fields
// take the defaults (DefaultLimits).
type Limits struct {
	// MaxStreams bounds Params.Streams (per direction), at most
	// traffic.MaxStreams.
	MaxStreams int `json:"max_streams"`
	// MaxDuration bounds Params.Duration.
	MaxDuration time.Duration `json:"max_duration_ns"`
	// MaxBlockSize bounds Params.BlockSize, at most traffic.MaxBlockSize.
	MaxBlockSize int64 `json:"max_block_size"`
	// MaxBuffers bounds streams × block size (all directions): the buffers
	// the server allocates for one test.
	MaxBuffers int64 `json:"max_buffers"`
	// MaxConnectTimeout bounds Params.ConnectTimeout: how long the server
	// waits for the data streams.
	MaxConnectTimeout time.Duration `json:"max_connect_timeout_ns"`
}

// DefaultLimits are the server's limits when none are given.
func DefaultLimits() Limits {
	return Limits{
		MaxStreams: 256, MaxDuration: time.Hour, MaxBlockSize: 16 << 20,
		MaxBuffers: 1 << 30, MaxConnectTimeout: 30 * time.Second,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxStreams == 0 {
		l.MaxStreams = d.MaxStreams
	}
	if l.MaxDuration == 0 {
		l.MaxDuration = d.MaxDuration
	}
	if l.MaxBlockSize == 0 {
		l.MaxBlockSize = d.MaxBlockSize
	}
	if l.MaxBuffers == 0 {
		l.MaxBuffers = d.MaxBuffers
	}
	if l.MaxConnectTimeout == 0 {
		l.MaxConnectTimeout = d.MaxConnectTimeout
	}
	return l
}

func (l Limits) validate() error {
	var errs []error
	if l.MaxStreams < 1 || l.MaxStreams > traffic.MaxStreams {
		errs = append(errs, fmt.Errorf("invalid max streams %d: must be 1..%d", l.MaxStreams, traffic.MaxStreams))
	}
	if l.MaxBlockSize < 1 || l.MaxBlockSize > traffic.MaxBlockSize {
		errs = append(errs, fmt.Errorf("invalid max block size %d: must be 1..%d", l.MaxBlockSize, traffic.MaxBlockSize))
	}
	if l.MaxDuration <= 0 || l.MaxConnectTimeout <= 0 || l.MaxBuffers <= 0 {
		errs = append(errs, errors.New("max duration, max connect timeout and max buffers must be positive"))
	}
	return errors.Join(errs...)
}

// check returns an error naming the first limit p exceeds.
func (l Limits) check(p Params) error {
	fwd, rev := p.Direction.streams(p.Streams)
	switch {
	case p.Streams > l.MaxStreams:
		return fmt.Errorf("streams %d exceeds the server's limit of %d streams (max streams)", p.Streams, l.MaxStreams)
	case p.Duration > l.MaxDuration:
		return fmt.Errorf("duration %v exceeds the server's limit of %v (max duration)", p.Duration, l.MaxDuration)
	case p.BlockSize > l.MaxBlockSize:
		return fmt.Errorf("block size %d bytes exceeds the server's limit of %v (max block size)", p.BlockSize, units.Size(l.MaxBlockSize))
	case int64(fwd+rev)*p.BlockSize > l.MaxBuffers:
		return fmt.Errorf("%d streams × %v blocks exceed the server's limit of %v of buffers (max buffers)",
			fwd+rev, units.Size(p.BlockSize), units.Size(l.MaxBuffers))
	case p.ConnectTimeout > l.MaxConnectTimeout:
		return fmt.Errorf("connect timeout %v exceeds the server's limit of %v (max connect timeout)", p.ConnectTimeout, l.MaxConnectTimeout)
	case p.Interval > p.Duration:
		return fmt.Errorf("interval %v is longer than the duration %v", p.Interval, p.Duration)
	}
	return nil
}

// SessionInfo is what the server accepted: the parameters and where the
// data streams go.
type SessionInfo struct {
	Params
	// Ports are the server's data ports for this test, in stream order (see
	// the package documentation for which stream uses which).
	Ports []int `json:"ports"`
	// Limits are the server's limits, for the client's information.
	Limits Limits `json:"limits"`
}

// streamPorts returns the data port of every forward and reverse stream.
func (s SessionInfo) streamPorts() (forward, reverse []int) {
	fwd, rev := s.Direction.streams(s.Streams)
	for i := range fwd {
		forward = append(forward, s.Ports[i%len(s.Ports)])
	}
	for i := range rev {
		reverse = append(reverse, s.Ports[(fwd+i)%len(s.Ports)])
	}
	return forward, reverse
}

// trafficConfig is the generator's configuration for this session.
func (s SessionInfo) trafficConfig() traffic.Config {
	return traffic.Config{Streams: s.Streams, Duration: s.Duration, BlockSize: int(s.BlockSize), ConnectTimeout: s.ConnectTimeout}
}
