package analysis

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// timeLayout prints UTC times to the millisecond.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// TextFlows is the most flows the text report lists (all are in JSON).
const TextFlows = 10

// WriteText writes the report as aligned text (text/tabwriter). Every figure
// names its window, counter and unit; missing figures print
// "n/a (reason)", never 0. Rates are in r.Units (decimal Gbit/s by
// default); ANSI bold is used only when r.Color is set. It returns the
// first write error.
func (r *Report) WriteText(w io.Writer) error {
	p := &printer{w: w, color: r.Color}
	r.writeHeader(p)
	r.writeVerdictSummary(p)
	r.writeDirection(p, &r.Rx, "receiving")
	r.writeDirection(p, &r.Tx, "sending")
	r.writeCPUs(p)
	p.line("")
	p.line("probes' own cost, window: %s: %s", orDash(r.CPUWindow), r.ProbeCostLine())
	r.writeRTT(p)
	r.writePeers(p)
	r.writeFlows(p)
	r.writeBDP(p)
	r.writeRetransmits(p)
	p.line("")
	r.writeDrops(p)
	p.line("interface loss counters (counted interfaces, whole run): %s", r.NICLossLine())
	r.writeVerdicts(p)
	r.writeNotes(p)
	return p.err
}

// printer writes lines and tables, keeping the first error.
type printer struct {
	w     io.Writer
	err   error
	color bool
}

// line writes one formatted line.
func (p *printer) line(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
	}
}

// table writes rows as tab-separated cells aligned by text/tabwriter.
func (p *printer) table(rows [][]string) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	if p.err == nil {
		_, p.err = p.w.Write(buf.Bytes())
	}
}

// bold wraps s in ANSI bold when colour is on.
func (p *printer) bold(s string) string {
	if !p.color {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

// na formats a missing figure.
func na(reason string) string { return "n/a (" + reason + ")" }

// writeHeader writes the run's identity.
func (r *Report) writeHeader(p *printer) {
	m := r.Manifest
	rated := na("unknown: give --link-speed")
	if r.RatedBps > 0 {
		rated = fmtRate(r.Units, r.RatedBps) + " (" + r.RatedSource + ")"
	}
	p.line("netprof report")
	p.table([][]string{
		{"run directory", orDash(r.Dir)},
		{"host", r.HostDesc()},
		{"run", r.runSpan()},
		{"recorded by", fmt.Sprintf("netprof %s, trace schema v%d", orDash(m.ToolVersion), m.SchemaVersion)},
		{"config", configLine(m.Config)},
		{"rated link speed", rated},
	})
}

// configLine formats what the run was asked, from the manifest's config:
// streams, block size, direction, duration (with warm-up and cool-down),
// interval when not 1 s, the delay line's RTT, the socket options (window,
// congestion control, MSS, Nagle, bind device, pacing), the peer, the
// probe selection and what else a bench run recorded as set. Only what is
// in the config is shown; sizes in binary units, rates in r's units.
func configLine(c map[string]any) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if n := ConfigInt(c, "streams"); n > 0 {
		add("streams %d", n)
	}
	if b := ConfigInt(c, "block_size"); b > 0 {
		add("block size %s", fmtSize(b))
	}
	switch configString(c, "direction") {
	case "reverse":
		add("reverse (the far end sends)")
	case "bidir":
		add("bidir (both ends send)")
	}
	if d := ConfigInt(c, "duration_ns"); d > 0 {
		add("duration %v", time.Duration(d))
	}
	if d := ConfigInt(c, "warmup_ns"); d > 0 {
		add("warm-up %v", time.Duration(d))
	}
	if d := ConfigInt(c, "cooldown_ns"); d > 0 {
		add("cool-down %v", time.Duration(d))
	}
	if d := ConfigInt(c, "interval_ns"); d > 0 && d != int64(time.Second) {
		add("interval %v", time.Duration(d))
	}
	if d := ConfigInt(c, "rtt_ns"); d > 0 {
		add("rtt %v (delay line)", time.Duration(d))
	}
	parts = append(parts, sockOptParts(socketOptions(c))...)
	if p := configString(c, "peer"); p != "" {
		add("peer %s", p)
	}
	if b, ok := c["no_bpf"].(bool); ok && b {
		add("probes off (--no-bpf)")
	} else if ps := configStrings(c, "probes"); len(ps) > 0 {
		add("probes %s", strings.Join(ps, ","))
	}
	if b, ok := c["bpf_stats"].(bool); ok && !b {
		add("BPF stats off")
	}
	if b, ok := c["ipv6"].(bool); ok && b {
		add("IPv6")
	}
	if d := ConfigInt(c, ConfigExpectRTT); d > 0 {
		add("expect-rtt %v", time.Duration(d))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// sockOptParts formats a bench run's socket options (manifest config
// socket_options) with units.
func sockOptParts(so map[string]any) []string {
	var parts []string
	if w := ConfigInt(so, "window_bytes"); w > 0 {
		parts = append(parts, "window "+fmtSize(w))
	}
	if cc := configString(so, "congestion"); cc != "" {
		parts = append(parts, "congestion "+cc)
	}
	if m := ConfigInt(so, "mss_bytes"); m > 0 {
		parts = append(parts, fmt.Sprintf("mss %d B", m))
	}
	if nd, ok := so["nodelay"].(bool); ok {
		if nd {
			parts = append(parts, "TCP_NODELAY on")
		} else {
			parts = append(parts, "Nagle on (--nodelay=false)")
		}
	}
	if d := configString(so, "bind_dev"); d != "" {
		parts = append(parts, "bind-dev "+d)
	}
	if r := ConfigInt(so, "pacing_rate_bit_per_s"); r > 0 {
		parts = append(parts, "pacing "+fmtRate(Decimal, float64(r))+" per stream")
	}
	return parts
}

// SocketOptionsText formats a bench run's socket options (manifest config
// socket_options, or the summary's requested options) with units, as the
// report's config line does: "window 256 KiB, congestion cubic"; "-"
// when none.
func SocketOptionsText(so map[string]any) string {
	if p := sockOptParts(so); len(p) > 0 {
		return strings.Join(p, ", ")
	}
	return "-"
}

// configString returns a string value of a manifest config, "" when absent.
func configString(c map[string]any, key string) string {
	s, _ := c[key].(string)
	return s
}

// configStrings returns a list of strings of a manifest config (a
// []string in memory, []any once read back from JSON).
func configStrings(c map[string]any, key string) []string {
	switch v := c[key].(type) {
	case []string:
		return v
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// runSpan formats the run's start, end, length and status.
func (r *Report) runSpan() string {
	st := orDash(r.Manifest.Status)
	if r.RunStart.IsZero() || r.RunEnd.IsZero() {
		return fmt.Sprintf("%s (no start/end in the manifest or rows), status %s", na("unknown"), st)
	}
	return fmt.Sprintf("%s to %s (%.3f s), status %s", fmtTime(r.RunStart), fmtTime(r.RunEnd),
		r.RunEnd.Sub(r.RunStart).Seconds(), st)
}

// writeDirection writes one direction's throughput tables, active window
// and header gap.
func (r *Report) writeDirection(p *printer, d *Direction, role string) {
	iface := d.Iface
	if iface == "" {
		iface = na("no ifaces rows")
	}
	p.line("")
	head := fmt.Sprintf("throughput %s, %s interface %s (%s)", d.Name, role, iface, r.Units.RateUnitLong())
	rows := [][]string{{head, "peak", "steady state", "whole run", "p50", "p95"}}
	for _, rt := range d.Rates {
		rows = append(rows, rateRow(r.Units.FormatRate, rt))
	}
	p.table(rows)
	if r.Units == Binary {
		rows = [][]string{{fmt.Sprintf("throughput %s in GiB/s (2^30 byte/s)", d.Name), "peak", "steady state", "whole run", "p50", "p95"}}
		for _, rt := range d.Rates {
			rows = append(rows, rateRow(func(bps float64) string { return fmt.Sprintf("%.2f", bps/8/(1<<30)) }, rt))
		}
		p.table(rows)
	}
	r.writeActive(p, d)
	if b := r.bidirText(); b != "" {
		p.line("  %s", b)
	}
	if g := d.Gap; g != nil {
		p.line("  application vs wire: %s", gapLine(g))
	}
}

// rateRow formats one throughput row with f.
func rateRow(f func(float64) string, rt Rate) []string {
	w := rt.W
	switch {
	// Every row has all six cells (the reason in the last): a shorter row
	// would end the tabwriter's column blocks and misalign the rows below.
	case w == nil:
		return []string{rt.Label, "n/a", "n/a", "n/a", "n/a", na(rt.Missing)}
	case w.Intervals == 0:
		return []string{rt.Label, "n/a", "n/a", "n/a", "n/a", na("no intervals with interval_ns > 0")}
	case !w.HasActive():
		return []string{rt.Label, f(w.PeakBps), "n/a", f(w.WholeRunBps), "n/a", na("no bytes counted")}
	}
	steady := f(w.SteadyBps)
	if w.SteadyApprox {
		steady += " (approx.)"
	}
	return []string{rt.Label, f(w.PeakBps), steady, f(w.WholeRunBps), f(w.P50Bps), f(w.P95Bps)}
}

// writeActive writes the direction's active window (of its first
// measured counter) and the windows' definitions.
func (r *Report) writeActive(p *printer, d *Direction) {
	for _, rt := range d.Rates {
		w := rt.W
		if w == nil || !w.HasActive() {
			continue
		}
		p.line("  active window (%s, intervals >= %.0f%% of peak): %s to %s, length %.3f s (%s); peak in the interval ending %s",
			rt.Label, ActiveThreshold*100, fmtTime(w.ActiveStart), fmtTime(w.ActiveEnd), w.ActiveLength().Seconds(),
			intervals(w.ActiveIntervals), fmtTime(w.PeakAt))
		cv := "n/a with one interval"
		if w.SteadyIntervals > 1 {
			cv = pct(w.SteadyCV)
		}
		def := "median interval of the active window without its first and last"
		if w.SteadyApprox {
			def = "approximate: median interval of the whole active window (too short to drop its first and last)"
		}
		p.line("  steady state = %s (%s to %s, %s, CV %s);", def,
			fmtTime(w.SteadyStart), fmtTime(w.SteadyEnd), intervals(w.SteadyIntervals), cv)
		p.line("  whole run = total bytes x 8 / (run end - run start); p50/p95 = of the active window's interval rates;")
		p.line("  a final partial interval counts in peak, active window and p50/p95 if >= 1/10 of the usual interval, in steady state if >= 1/2")
		return
	}
}

// gapLine explains the application-vs-wire gap.
func gapLine(g *HeaderGap) string {
	return fmt.Sprintf("%.2f%% of wire bytes are not payload (whole run: %d B payload, %d B wire estimate)",
		g.Pct, g.AppBytes, g.WireBytes) + "; cause: " + g.Cause()
}

// writeNotes writes the caveats, if any.
func (r *Report) writeNotes(p *printer) {
	if len(r.Notes) == 0 {
		return
	}
	p.line("")
	p.line("notes")
	for _, n := range r.Notes {
		p.line("  - %s", n)
	}
}

// fmtTime formats t in UTC to the millisecond; "-" for the zero time.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// intervals says "1 interval" or "N intervals".
func intervals(n int) string {
	if n == 1 {
		return "1 interval"
	}
	return fmt.Sprintf("%d intervals", n)
}

// oneMany returns one for n == 1, else many.
func oneMany(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
