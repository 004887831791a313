package control

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/traffic"
)

// Version is the control protocol version this package speaks. The frame
// header (magic, version, length) keeps its layout in every version, so
// each end can always read the other's version and say which it is.
const Version = 1

// MaxMessage is the largest message body either end accepts (1 MiB); a
// longer length prefix is refused before anything is allocated.
const MaxMessage = 1 << 20

// DefaultIOTimeout bounds every single read or write of a control message
// when no other bound applies.
const DefaultIOTimeout = 10 * time.Second

const (
	magic     = 0x4e504354 // "NPCT"
	headerLen = 12
)

// Message types.
const (
	msgSetup    = "setup"    // client → server: Params
	msgSetupOK  = "setup_ok" // server → client: SessionInfo
	msgError    = "error"    // either way: Code + Error, then close
	msgStart    = "start"    // client → server: every data stream is connected
	msgAbort    = "abort"    // client → server: giving up (Error says why)
	msgInterval = "interval" // server → client: Interval
	msgResult   = "result"   // server → client: Result, then close
)

// Error codes of an error message.
const (
	CodeBusy     = "busy"     // another client's test is running
	CodeVersion  = "version"  // protocol version mismatch
	CodeLimit    = "limit"    // a parameter exceeds a server limit
	CodeInvalid  = "invalid"  // a parameter is invalid in itself
	CodeProtocol = "protocol" // malformed or unexpected message
	CodeFailed   = "failed"   // the server could not run the test
)

// Sentinel errors matched (errors.Is) by a *RemoteError with that code.
var (
	ErrBusy     = errors.New("server busy with another test")
	ErrVersion  = errors.New("control protocol version mismatch")
	ErrLimit    = errors.New("server limit exceeded")
	ErrProtocol = errors.New("control protocol error")
)

// RemoteError is an error message received from the other end.
type RemoteError struct {
	Code string // one of the Code constants
	Msg  string
}

func (e *RemoteError) Error() string { return fmt.Sprintf("server: %s (%s)", e.Msg, e.Code) }

// Is matches ErrBusy, ErrVersion, ErrLimit and ErrProtocol by code.
func (e *RemoteError) Is(target error) bool {
	switch target {
	case ErrBusy:
		return e.Code == CodeBusy
	case ErrVersion:
		return e.Code == CodeVersion
	case ErrLimit:
		return e.Code == CodeLimit
	case ErrProtocol:
		return e.Code == CodeProtocol
	}
	return false
}

// message is the JSON body of every frame; Type says which fields are set.
type message struct {
	Type     string       `json:"type"`
	Code     string       `json:"code,omitempty"`
	Error    string       `json:"error,omitempty"`
	Software string       `json:"software,omitempty"`
	Params   *Params      `json:"params,omitempty"`
	Session  *SessionInfo `json:"session,omitempty"`
	Interval *Interval    `json:"interval,omitempty"`
	Result   *Result      `json:"result,omitempty"`
}

// Interval is the server's report for one interval of a test.
type Interval struct {
	// Index counts intervals from 0.
	Index int `json:"index"`
	// EndNs is the end of the interval in ns since the server got the
	// start message; IntervalNs its measured length.
	EndNs      int64 `json:"end_ns"`
	IntervalNs int64 `json:"interval_ns"`
	// ReceivedBytes[i] is the payload the server read on stream i during
	// the interval (forward and bidir tests); SentBytes[i] what it wrote
	// (reverse and bidir tests).
	ReceivedBytes []uint64 `json:"received_bytes,omitempty"`
	SentBytes     []uint64 `json:"sent_bytes,omitempty"`
	// SentTCP[i] is what TCP_INFO says of the server's sending stream i
	// over the interval (what limited it: the kernel's chrono accounting),
	// null for a stream whose socket gave none; absent from servers before
	// it.
	SentTCP []*StreamTCP `json:"sent_tcp,omitempty"`
	// ReceivedSteering[i] is where the server's kernel processed receiving
	// stream i's packets (same index as ReceivedBytes): its socket's
	// SO_INCOMING_CPU and SO_INCOMING_NAPI_ID at the interval's end, the
	// last known value once the socket is closed; null for a stream with
	// none yet; absent when no stream has any, and from servers before it.
	ReceivedSteering []*StreamSteering `json:"received_steering,omitempty"`
	// CPU is the server host's CPU use and the server process's own.
	CPU CPUUsage `json:"cpu"`
}

// StreamTCP is a sending stream's TCP_INFO over one interval: deltas of
// the cumulative counters (segments, µs), the rest at the interval's end.
type StreamTCP struct {
	Retransmits     uint64 `json:"retransmits"`
	RttUs           uint32 `json:"rtt_us"`
	Cwnd            uint32 `json:"cwnd"`
	BusyUs          uint64 `json:"busy_us"`
	RwndLimitedUs   uint64 `json:"rwnd_limited_us"`
	SndbufLimitedUs uint64 `json:"sndbuf_limited_us"`
	DeliveryRateBps uint64 `json:"delivery_rate_bps"`
	SndWndBytes     uint32 `json:"snd_wnd_bytes"`
}

// Delta returns the wire form's traffic.TCPDelta.
func (s StreamTCP) Delta() traffic.TCPDelta {
	return traffic.TCPDelta{Retransmits: s.Retransmits, RttUs: s.RttUs, Cwnd: s.Cwnd, BusyUs: s.BusyUs,
		RwndLimitedUs: s.RwndLimitedUs, SndbufLimitedUs: s.SndbufLimitedUs, DeliveryRateBps: s.DeliveryRateBps, SndWnd: s.SndWndBytes}
}

func wireTCP(d traffic.TCPDelta) *StreamTCP {
	return &StreamTCP{Retransmits: d.Retransmits, RttUs: d.RttUs, Cwnd: d.Cwnd, BusyUs: d.BusyUs,
		RwndLimitedUs: d.RwndLimitedUs, SndbufLimitedUs: d.SndbufLimitedUs, DeliveryRateBps: d.DeliveryRateBps, SndWndBytes: d.SndWnd}
}

// StreamSteering is a receiving stream's traffic.Steering on the wire:
// the CPU that last processed a packet for its socket (SO_INCOMING_CPU)
// and the NAPI context that delivered it (SO_INCOMING_NAPI_ID, 0 for none).
type StreamSteering struct {
	CPU    int32  `json:"cpu"`
	NapiID uint32 `json:"napi_id"`
}

// Steering returns the wire form's traffic.Steering.
func (s StreamSteering) Steering() traffic.Steering {
	return traffic.Steering{CPU: s.CPU, NapiID: s.NapiID}
}

// wireSteering returns s's wire form; nil for nil.
func wireSteering(s *traffic.Steering) *StreamSteering {
	if s == nil {
		return nil
	}
	return &StreamSteering{CPU: s.CPU, NapiID: s.NapiID}
}

// Result is the server's summary of a whole test.
type Result struct {
	// OK is true when the server's side finished cleanly; Error says why
	// not.
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// DurationNs is from the start message to the end of the server's side.
	DurationNs int64 `json:"duration_ns"`
	// ReceivedBytes and SentBytes are per-stream totals, as in Interval.
	ReceivedBytes []uint64 `json:"received_bytes,omitempty"`
	SentBytes     []uint64 `json:"sent_bytes,omitempty"`
	// CPU covers the whole test.
	CPU CPUUsage `json:"cpu"`
}

// frameError marks a frame that could not be read as ours (garbage, too
// long, another version); the connection is not worth keeping.
type frameError struct {
	version uint16 // the peer's version, when the header was readable
	err     error
}

func (e *frameError) Error() string { return e.err.Error() }
func (e *frameError) Unwrap() error { return e.err }

// writeMsg writes m as one frame, bounded by timeout.
func writeMsg(c net.Conn, m message, timeout time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if len(body) > MaxMessage {
		return fmt.Errorf("encode %s: %d bytes exceeds the %d-byte message limit", m.Type, len(body), MaxMessage)
	}
	return writeFrame(c, Version, body, timeout)
}

func writeFrame(c net.Conn, version uint16, body []byte, timeout time.Duration) error {
	buf := make([]byte, headerLen+len(body))
	binary.BigEndian.PutUint32(buf[0:], magic)
	binary.BigEndian.PutUint16(buf[4:], version)
	binary.BigEndian.PutUint32(buf[8:], uint32(len(body)))
	copy(buf[headerLen:], body)
	if err := c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if _, err := c.Write(buf); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// readMsg reads one frame within timeout and decodes it. A bad header, a
// body over MaxMessage or another protocol version is a *frameError; the
// body of another version is read (bounded) and decoded if it can be, so
// its error message is not lost.
func readMsg(c net.Conn, timeout time.Duration) (message, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return message{}, fmt.Errorf("read: %w", err)
	}
	var h [headerLen]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return message{}, fmt.Errorf("read: %w", err)
	}
	if binary.BigEndian.Uint32(h[0:]) != magic {
		return message{}, &frameError{err: fmt.Errorf("not a netprof control message (header %x): %w", h[:], ErrProtocol)}
	}
	version := binary.BigEndian.Uint16(h[4:])
	n := binary.BigEndian.Uint32(h[8:])
	if n > MaxMessage {
		return message{}, &frameError{version: version,
			err: fmt.Errorf("message of %d bytes exceeds the %d-byte limit: %w", n, MaxMessage, ErrProtocol)}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return message{}, fmt.Errorf("read %d-byte message: %w", n, err)
	}
	var m message
	jerr := json.Unmarshal(body, &m)
	if version != Version {
		return m, &frameError{version: version,
			err: fmt.Errorf("peer speaks control protocol version %d, this end version %d: %w", version, Version, ErrVersion)}
	}
	if jerr != nil {
		return message{}, &frameError{version: version, err: fmt.Errorf("decode message: %w: %w", jerr, ErrProtocol)}
	}
	if m.Type == "" {
		return message{}, &frameError{version: version, err: fmt.Errorf("message without a type: %w", ErrProtocol)}
	}
	return m, nil
}

// expect checks that m has type want: an error message becomes a
// *RemoteError, anything else a protocol error.
func expect(m message, want string) error {
	switch {
	case m.Type == want:
		return nil
	case m.Type == msgError:
		return &RemoteError{Code: m.Code, Msg: m.Error}
	}
	return fmt.Errorf("got a %q message, want %q: %w", m.Type, want, ErrProtocol)
}

// CPUUsage is the wire form of a host's CPU use over a period: the
// server's /proc/stat modes and its own process's CPU time. It is the
// protocol's own type (cpustat.Usage may change; this may only gain
// fields), converted with WireCPU and Usage.
type CPUUsage struct {
	IntervalNs        int64   `json:"interval_ns"`
	CPUs              int     `json:"cpus"`
	UserPct           float64 `json:"user_pct"`
	NicePct           float64 `json:"nice_pct"`
	SystemPct         float64 `json:"system_pct"`
	IdlePct           float64 `json:"idle_pct"`
	IOWaitPct         float64 `json:"iowait_pct"`
	IRQPct            float64 `json:"irq_pct"`
	SoftIRQPct        float64 `json:"softirq_pct"`
	StealPct          float64 `json:"steal_pct"`
	BusiestSoftIRQPct float64 `json:"busiest_softirq_pct"`
	BusiestSoftIRQCPU int     `json:"busiest_softirq_cpu"`
	ProcessUserS      float64 `json:"process_user_s"`
	ProcessSystemS    float64 `json:"process_system_s"`
}

// WireCPU converts a cpustat.Usage to the wire form.
func WireCPU(u cpustat.Usage) CPUUsage {
	return CPUUsage{IntervalNs: u.IntervalNs, CPUs: u.CPUs, UserPct: u.UserPct, NicePct: u.NicePct,
		SystemPct: u.SystemPct, IdlePct: u.IdlePct, IOWaitPct: u.IOWaitPct, IRQPct: u.IRQPct,
		SoftIRQPct: u.SoftIRQPct, StealPct: u.StealPct, BusiestSoftIRQPct: u.BusiestSoftIRQPct,
		BusiestSoftIRQCPU: u.BusiestSoftIRQCPU, ProcessUserS: u.ProcessUserS, ProcessSystemS: u.ProcessSystemS}
}

// Usage converts the wire form back.
func (c CPUUsage) Usage() cpustat.Usage {
	return cpustat.Usage{IntervalNs: c.IntervalNs, CPUs: c.CPUs, UserPct: c.UserPct, NicePct: c.NicePct,
		SystemPct: c.SystemPct, IdlePct: c.IdlePct, IOWaitPct: c.IOWaitPct, IRQPct: c.IRQPct,
		SoftIRQPct: c.SoftIRQPct, StealPct: c.StealPct, BusiestSoftIRQPct: c.BusiestSoftIRQPct,
		BusiestSoftIRQCPU: c.BusiestSoftIRQCPU, ProcessUserS: c.ProcessUserS, ProcessSystemS: c.ProcessSystemS}
}
