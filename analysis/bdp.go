package analysis

import (
	"fmt"
	"math"
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
	// Bytes is RateBps / 8 × MinRTT: the bytes in flight the run needed.
	Bytes float64
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
	// PerStreamBps is the median window-limited rate of the sending flows
	// (window × 8 / srtt); PerStreamWindow the median window (snd_cwnd ×
	// mss, or SocketWindow when smaller), bytes; SrttUs the median srtt
	// (µs).
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
	if d.TargetBps == 0 && r.RatedBps > 0 {
		d.TargetBps, d.TargetSource = r.RatedBps, "rated link speed ("+r.RatedSource+")"
	}
	d.TargetBytes = d.TargetBps / 8 * rtt.Seconds()
	d.SocketWindow = float64(ConfigInt(socketOptions(r.Manifest.Config), "window_bytes"))
	d.PerStreamBps = medianOf(send, func(f FlowSummary) float64 { _, bps := d.windowOf(f); return bps })
	d.PerStreamWindow = medianOf(send, func(f FlowSummary) float64 { w, _ := d.windowOf(f); return w })
	d.SrttUs = medianOf(send, func(f FlowSummary) float64 { return float64(f.SrttUs) })
	switch {
	case d.TargetBps == 0:
		d.Missing = "no target: give --target or --link-speed (or a rated speed in the manifest)"
	case d.PerStreamBps == 0:
		d.Missing = "no sending flow with snd_cwnd, mss and srtt in the steady state"
	default:
		d.Streams = int(math.Ceil(d.TargetBps / d.PerStreamBps))
	}
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
func socketOptions(cfg map[string]any) map[string]any {
	so, _ := cfg["socket_options"].(map[string]any)
	return so
}

// gaps fills each direction's application-vs-wire gap.
func (b *builder) gaps() {
	mss := int(medianOf(sendingFlows(b.r.Flows), func(f FlowSummary) float64 { return float64(f.MSS) }))
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
		g := &HeaderGap{AppBytes: app.W.TotalBytes, WireBytes: wire.W.TotalBytes, MTU: d.IfaceMTU, MSS: mss}
		g.Pct = (float64(g.WireBytes) - float64(g.AppBytes)) / float64(g.WireBytes) * 100
		if g.MTU > 0 && g.MSS > 0 {
			g.ExpectedPct = (1 - float64(g.MSS)/float64(g.MTU+EthernetHeaderBytes+EthernetOverheadBytes)) * 100
		}
		d.Gap = g
	}
}
