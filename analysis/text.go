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
	r.writeRTT(p)
	r.writePeers(p)
	r.writeFlows(p)
	r.writeBDP(p)
	r.writeRetransmits(p)
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
		{"host", fmt.Sprintf("%s (kernel %s, %d CPUs)", orDash(m.Host), orDash(m.Kernel), m.CPUCount)},
		{"run", r.runSpan()},
		{"recorded by", fmt.Sprintf("netprof %s, trace schema v%d", orDash(m.ToolVersion), m.SchemaVersion)},
		{"config", configLine(m.Config)},
		{"rated link speed", rated},
	})
}

// configLine formats the manifest's streams and block size.
func configLine(c map[string]any) string {
	s, b := ConfigInt(c, "streams"), ConfigInt(c, "block_size")
	if s == 0 && b == 0 {
		return "-"
	}
	return fmt.Sprintf("streams %s, block size %s", intOrDash(s), bytesOrDash(b))
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
	if g := d.Gap; g != nil {
		p.line("  application vs wire: %s", gapLine(g))
	}
}

// rateRow formats one throughput row with f.
func rateRow(f func(float64) string, rt Rate) []string {
	w := rt.W
	switch {
	case w == nil:
		return []string{rt.Label, na(rt.Missing)}
	case w.Intervals == 0:
		return []string{rt.Label, na("no intervals with interval_ns > 0")}
	case !w.HasActive():
		return []string{rt.Label, f(w.PeakBps), na("no bytes counted"), f(w.WholeRunBps)}
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
		p.line("  whole run = total bytes x 8 / (run end - run start); p50/p95 = of the active window's interval rates")
		return
	}
}

// gapLine explains the application-vs-wire gap.
func gapLine(g *HeaderGap) string {
	s := fmt.Sprintf("%.2f%% of wire bytes are not payload (whole run: %d B payload, %d B wire estimate)",
		g.Pct, g.AppBytes, g.WireBytes)
	if g.ExpectedPct == 0 {
		return s + "; cause: L2-L4 headers per segment (MTU or MSS unknown, expectation not computed)"
	}
	return s + fmt.Sprintf("; cause: headers at MTU %d / MSS %d: %d B IP+TCP + %d B Ethernet + %d B preamble/SFD/FCS/gap per full segment = %.2f%% expected",
		g.MTU, g.MSS, g.MTU-g.MSS, EthernetHeaderBytes, EthernetOverheadBytes, g.ExpectedPct)
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
