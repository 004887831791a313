package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"
)

// BDP is the bandwidth-delay product of the run and what a target rate
// needs.
type BDP struct {
	// RateBps is Primary's steady state (bit/s) and RateLabel its counter.
	RateBps   float64
	RateLabel string
	// MinRTTUs is the lowest RTT of the sending flows (all flows when none
	// sends), µs: rtt_min_us or the kernel's min_rtt_us.
	MinRTTUs uint32
	// Bytes is RateBps / 8 × MinRTT: what the path holds at this rate
	// without queueing (min RTT is the floor, not srtt).
	Bytes float64
	// InFlightBytes is what the sending flows actually kept in flight:
	// their steady-state windows (windowOf: snd_cwnd × mss, or the socket
	// buffer when smaller) summed over InFlightFlows flows; 0 when no
	// sending flow has a window. Beyond Bytes it waited in queues (socket
	// buffers, qdisc, backlog), which is why srtt exceeds min RTT.
	InFlightBytes float64
	InFlightFlows int
	// TargetBps is the rate aimed at (TargetSource: "--target" or the
	// rated link speed); TargetBytes its BDP at MinRTT.
	TargetBps    float64
	TargetSource string
	TargetBytes  float64
	// SocketWindow is the SO_SNDBUF / SO_RCVBUF the run set on its data
	// sockets (manifest config socket_options.window_bytes: bench
	// --window), bytes; 0 when not set. A stream keeps about this much in
	// flight at most, whatever its snd_cwnd (BBR's is twice what it
	// sends), so it caps each flow's window (windowOf).
	SocketWindow float64
	// SocketWindowGranted: the kernel gave less than --window asked (net.core.
	// rmem_max / wmem_max), and SocketWindow is what it gave: the smallest
	// usable SO_SNDBUF / SO_RCVBUF the run read back from its data sockets.
	SocketWindowGranted bool
	// PerStreamFlow is the median sending flow by window-limited rate
	// (windowOf; of an even count the lower of the two middle flows), as
	// "local -> remote"; "" when no sending flow has one. PerStreamBps,
	// PerStreamWindow and SrttUs are that one flow's own steady-state
	// figures, so they multiply out: PerStreamWindow × 8 / SrttUs =
	// PerStreamBps. PerStreamWindow is its time-averaged snd_cwnd × mss,
	// or SocketWindow when smaller (bytes); SrttUs its steady-state srtt
	// (FlowSummary.SteadySrttUs, µs); PerStreamBps its window-limited rate
	// (bit/s).
	PerStreamFlow   string
	PerStreamBps    float64
	PerStreamWindow float64
	SrttUs          float64
	// Streams is ceil(TargetBps / PerStreamBps): streams needed at this RTT
	// and window; 0 when unknown (Missing says why).
	Streams int
	Missing string
}

// bdp fills Report.BDP.
func (b *builder) bdp() {
	r := b.r
	d := &r.BDP
	send := sendingFlows(r.Flows)
	floor := uint32(0)
	for _, f := range send {
		if f.RTT != nil && f.RTT.FloorUs() > 0 && (floor == 0 || f.RTT.FloorUs() < floor) {
			floor = f.RTT.FloorUs()
		}
	}
	if floor == 0 && r.RTT != nil {
		floor = r.RTT.FloorUs()
	}
	d.MinRTTUs = floor
	if w := r.steady(); w != nil {
		d.RateBps, d.RateLabel = w.SteadyBps, r.Primary.Label
	}
	rtt := time.Duration(floor) * time.Microsecond
	d.Bytes = d.RateBps / 8 * rtt.Seconds()
	d.TargetBps, d.TargetSource = b.opts.TargetBps, "--target"
	// A rated speed below the measured rate (wire-bound skipped) is no
	// target: the streams needed to reach it would be meaningless.
	if d.TargetBps == 0 && r.RatedBps > 0 && !newFacts(r, b.th).ratedTooLow() {
		d.TargetBps, d.TargetSource = r.RatedBps, "rated link speed ("+r.RatedSource+")"
	}
	d.TargetBytes = d.TargetBps / 8 * rtt.Seconds()
	d.SocketWindow = float64(ConfigInt(socketOptions(r.Manifest.Config), "window_bytes"))
	if g := grantedWindow(r.Manifest.Config); d.SocketWindow > 0 && g > 0 && g < d.SocketWindow {
		r.note(fmt.Sprintf("--window asked %s per socket, the kernel gave %s (net.core.rmem_max/wmem_max; "+
			"summary.socket_options.ends): the window figures use what it gave", fmtSize(int64(d.SocketWindow)), fmtSize(int64(g))))
		d.SocketWindow, d.SocketWindowGranted = g, true
	}
	for _, f := range send {
		if w, _ := d.windowOf(f); w > 0 {
			d.InFlightBytes += w
			d.InFlightFlows++
		}
	}
	if m, ok := d.medianFlow(send); ok {
		d.PerStreamFlow = m.Src + " -> " + m.Dst
		d.PerStreamWindow, d.PerStreamBps = d.windowOf(m)
		d.SrttUs = m.SteadySrttUs
	}
	switch {
	case d.TargetBps == 0 && r.RatedBps > 0:
		d.Missing = "no target: the rated speed (" + r.RatedSource + ") is below the measured rate; give --target"
	case d.TargetBps == 0:
		d.Missing = "no target: give --target or --link-speed (or a rated speed in the manifest)"
	case d.PerStreamBps == 0:
		d.Missing = "no sending flow with snd_cwnd, mss and srtt in the steady state"
	default:
		d.Streams = int(math.Ceil(d.TargetBps / d.PerStreamBps))
	}
}

// medianFlow returns the sending flow whose window-limited rate
// (windowOf) is the median of those that have one: the lower middle of an
// even count, so the figures printed are one real flow's.
func (d *BDP) medianFlow(send []FlowSummary) (FlowSummary, bool) {
	var fs []FlowSummary
	for _, f := range send {
		if _, bps := d.windowOf(f); bps > 0 && f.SteadySrttUs > 0 {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return FlowSummary{}, false
	}
	sort.SliceStable(fs, func(i, j int) bool {
		_, a := d.windowOf(fs[i])
		_, b := d.windowOf(fs[j])
		return a < b
	})
	return fs[(len(fs)-1)/2], true
}

// capped reports whether the --window socket buffer, not snd_cwnd × mss,
// is f's window.
func (d *BDP) capped(f FlowSummary) bool {
	return d.SocketWindow > 0 && f.WindowBytes > d.SocketWindow
}

// windowOf returns the window a sending flow can keep in flight (bytes)
// and the rate it allows (bit/s): snd_cwnd × mss over srtt, or
// SocketWindow over the same srtt when that is smaller.
func (d *BDP) windowOf(f FlowSummary) (bytes, bps float64) {
	bytes, bps = f.WindowBytes, f.WindowBps
	if w := d.SocketWindow; w > 0 && bytes > w {
		bytes, bps = w, bps*w/bytes
	}
	return bytes, bps
}

// windowRatio returns f's steady rate over its window-limited rate
// (windowOf), or 0 when either is unknown.
func (d *BDP) windowRatio(f FlowSummary) float64 {
	if _, bps := d.windowOf(f); bps > 0 && f.SteadyBps > 0 {
		return f.SteadyBps / bps
	}
	return 0
}

// socketOptions returns manifest config socket_options (nil when absent).
// grantedWindow is the smallest usable SO_SNDBUF / SO_RCVBUF bench read
// back from its data sockets (manifest config summary.socket_options.ends,
// so_*buf_usable_bytes), 0 when not recorded.
func grantedWindow(cfg map[string]any) float64 {
	sum, ok := cfg["summary"].(map[string]any)
	if !ok && cfg["summary"] != nil { // an in-memory manifest holds the summary's own type
		if b, err := json.Marshal(cfg["summary"]); err == nil {
			_ = json.Unmarshal(b, &sum)
		}
	}
	so, _ := sum["socket_options"].(map[string]any)
	ends, _ := so["ends"].([]any)
	var g float64
	for _, e := range ends {
		m, _ := e.(map[string]any)
		for _, k := range []string{"so_sndbuf_usable_bytes", "so_rcvbuf_usable_bytes"} {
			if v, ok := m[k].(float64); ok && v > 0 && (g == 0 || v < g) {
				g = v
			}
		}
	}
	return g
}

func socketOptions(cfg map[string]any) map[string]any {
	so, _ := cfg["socket_options"].(map[string]any)
	return so
}

// IP + TCP header bytes per segment: IPv4 20 / IPv6 40, TCP 20, and the
// 12-byte timestamps option Linux uses by default.
const (
	ipv4TCPHeaderBytes = 20 + 20
	ipv6TCPHeaderBytes = 40 + 20
	tcpTimestampsBytes = 12
)

// segmentHeader returns the IP + TCP header of a full segment and how it
// was found. When MTU − MSS is the family's header (with or without
// timestamps) the MSS follows from the MTU and that difference is the
// header; otherwise (an MSS clamped below the MTU, bench --mss, or
// loopback's odd MSS) the family's header with timestamps is assumed.
func segmentHeader(mtu, mss int, family uint8) (int, string) {
	base, name := ipv4TCPHeaderBytes, "IPv4 20 + TCP 20"
	if family == 6 {
		base, name = ipv6TCPHeaderBytes, "IPv6 40 + TCP 20"
	}
	if h := mtu - mss; h == base || h == base+tcpTimestampsBytes {
		return h, "MTU - MSS"
	}
	return base + tcpTimestampsBytes, name + " + 12 timestamps (MSS not derived from the MTU)"
}

// Cause explains the expected gap: the headers and framing of one full
// segment.
func (g *HeaderGap) Cause() string {
	if g.ExpectedPct == 0 {
		return "L2-L4 headers per segment (MTU or MSS unknown, expectation not computed)"
	}
	if g.NoL2 {
		return fmt.Sprintf("headers at MTU %d / MSS %d: %d B IP+TCP (%s) per full segment, no Ethernet header or framing (TUN device) = %.2f%% expected",
			g.MTU, g.MSS, g.HeaderBytes, g.HeaderSource, g.ExpectedPct)
	}
	if g.Loopback {
		return fmt.Sprintf("headers at MTU %d / MSS %d: %d B IP+TCP (%s) + %d B Ethernet header per full segment, no framing (loopback) = %.2f%% expected",
			g.MTU, g.MSS, g.HeaderBytes, g.HeaderSource, g.L2Bytes, g.ExpectedPct)
	}
	return fmt.Sprintf("headers at MTU %d / MSS %d: %d B IP+TCP (%s) + %d B Ethernet + %d B preamble/SFD/FCS/gap per full segment = %.2f%% expected",
		g.MTU, g.MSS, g.HeaderBytes, g.HeaderSource, g.L2Bytes, g.FramingBytes, g.ExpectedPct)
}

// gaps fills each direction's application-vs-wire gap.
func (b *builder) gaps() {
	send := sendingFlows(b.r.Flows)
	mss := int(medianOf(send, func(f FlowSummary) float64 { return float64(f.MSS) }))
	family := uint8(4)
	for _, f := range send {
		if f.MSS > 0 {
			family = f.Family
			break
		}
	}
	for _, d := range []*Direction{&b.r.Rx, &b.r.Tx} {
		app, wire := d.Rate(CounterApp), d.Rate(CounterWire)
		if app == nil || wire == nil || app.W == nil || wire.W == nil || wire.W.TotalBytes == 0 {
			continue
		}
		if app.W.TotalBytes > wire.W.TotalBytes { // more payload than the wire carried: different traffic
			b.r.note(fmt.Sprintf("%s application vs wire: n/a: %d B of payload exceed the %d B wire estimate of %s, so the two count different traffic (e.g. a bidir run's payload of both directions)",
				d.Name, app.W.TotalBytes, wire.W.TotalBytes, d.Iface))
			continue
		}
		g := &HeaderGap{AppBytes: app.W.TotalBytes, WireBytes: wire.W.TotalBytes, MTU: d.IfaceMTU, MSS: mss, NoL2: d.NoL2, Loopback: d.Loopback}
		g.Pct = (float64(g.WireBytes) - float64(g.AppBytes)) / float64(g.WireBytes) * 100
		if g.MTU > 0 && g.MSS > 0 {
			g.HeaderBytes, g.HeaderSource = segmentHeader(g.MTU, g.MSS, family)
			switch {
			case g.Loopback:
				g.L2Bytes = EthernetHeaderBytes
			case !g.NoL2:
				g.L2Bytes, g.FramingBytes = EthernetHeaderBytes, EthernetOverheadBytes
			}
			seg := g.MSS + g.HeaderBytes + g.L2Bytes + g.FramingBytes
			g.ExpectedPct = (1 - float64(g.MSS)/float64(seg)) * 100
		}
		d.Gap = g
	}
}

// streamsText formats a stream count: "1 stream", "4 streams".
func streamsText(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}
