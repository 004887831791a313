package analysis

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netprof/netprof/trace"
)

// timeLayout prints UTC times to the millisecond.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatGbps formats a rate in bit/s as decimal Gbit/s (10^9 bit/s) with two
// decimals, without the unit: 183.6e9 → "183.60".
func FormatGbps(bps float64) string { return fmt.Sprintf("%.2f", bps/1e9) }

// WriteText writes the report as aligned text (text/tabwriter). Every figure
// names its window, counter and unit; missing figures print
// "n/a (reason)", never 0. It returns the first write error.
func (r *Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	r.writeHeader(p)
	r.writeThroughput(p)
	r.writeActive(p)
	r.writeCPUs(p)
	r.writeRTT(p)
	r.writeRetransmits(p)
	r.writeNotes(p)
	return p.err
}

// printer writes lines and tables, keeping the first error.
type printer struct {
	w   io.Writer
	err error
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

// na formats a missing figure.
func na(reason string) string { return "n/a (" + reason + ")" }

// reason returns why figure key is missing, or def.
func (r *Report) reason(key, def string) string {
	if s := r.reasons[key]; s != "" {
		return s
	}
	return def
}

// writeHeader writes the run's identity.
func (r *Report) writeHeader(p *printer) {
	m := r.Manifest
	p.line("netprof report")
	p.table([][]string{
		{"run directory", orDash(r.Dir)},
		{"host", fmt.Sprintf("%s (kernel %s, %d CPUs)", orDash(m.Host), orDash(m.Kernel), m.CPUCount)},
		{"run", r.runSpan()},
		{"recorded by", fmt.Sprintf("netprof %s, trace schema v%d", orDash(m.ToolVersion), m.SchemaVersion)},
	})
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

// writeThroughput writes the peak / steady state / whole run table.
func (r *Report) writeThroughput(p *printer) {
	role := r.AppRole
	if role == "" {
		role = trace.RoleReceiver
	}
	name := r.IfaceName
	if name == "" {
		name = "receiving interface"
	}
	p.line("")
	p.table([][]string{
		{"throughput (Gbit/s = 10^9 bit/s)", "peak", "steady state", "whole run"},
		windowsRow("application ("+role+" payload)", r.App, r.reason(figApp, "no traffic rows")),
		windowsRow("interface rx (netlink, "+name+", incl. L2 headers)", r.Iface, r.reason(figIface, "no ifaces rows")),
		windowsRow("interface rx (bpf, "+name+")", r.BpfIface, r.reason(figBpf, "bpf_rx_bytes null: probes off")),
	})
	p.line("  counters: application = traffic.app_bytes; netlink = ifaces.rx_bytes (stats64);")
	p.line("  bpf = ifaces.bpf_rx_bytes (netif_receive_skb)")
	p.line("  peak = best single interval; steady state = median interval of the active window")
	p.line("  without its first and last interval; whole run = total bytes x 8 / (run end - run start)")
}

// windowsRow formats one throughput row.
func windowsRow(label string, w *Windows, why string) []string {
	if w == nil {
		return []string{label, na(why)}
	}
	if w.Intervals == 0 {
		return []string{label, na("no intervals with interval_ns > 0")}
	}
	steady := na("no active window: no bytes counted")
	if w.HasActive() {
		steady = FormatGbps(w.SteadyBps)
		if w.SteadyApprox {
			steady += " (approx.)"
		}
	}
	return []string{label, FormatGbps(w.PeakBps), steady, FormatGbps(w.WholeRunBps)}
}

// writeActive writes the application's active window.
func (r *Report) writeActive(p *printer) {
	p.line("")
	role := r.AppRole
	if role == "" {
		role = trace.RoleReceiver
	}
	p.line("active window (application %s payload, intervals >= %.0f%% of peak rate)", role, ActiveThreshold*100)
	switch {
	case r.App == nil:
		p.line("  %s", na(r.reason(figApp, "no traffic rows")))
	case !r.App.HasActive():
		p.line("  %s", na("no interval moved any bytes"))
	default:
		w := r.App
		p.table([][]string{
			{"  start", fmtTime(w.ActiveStart)},
			{"  end", fmtTime(w.ActiveEnd)},
			{"  length", fmt.Sprintf("%.3f s (%d intervals)", w.ActiveLength().Seconds(), w.ActiveIntervals)},
			{"  peak at", "interval ending " + fmtTime(w.PeakAt)},
		})
	}
}

// writeCPUs writes the per-CPU NET_RX softirq shares.
func (r *Report) writeCPUs(p *printer) {
	p.line("")
	p.line("NET_RX softirq share of CPU time (cpus.net_rx_softirq_ns / interval_ns, %%), window: %s",
		orDash(r.CPUWindow))
	if len(r.CPUs) == 0 {
		p.line("  %s", na(r.reason(figCPU, "no cpus rows: probes off")))
		return
	}
	rows := [][]string{{"  cpu", r.CPUWindow + " %", "max interval %"}}
	for _, c := range r.CPUs {
		rows = append(rows, []string{fmt.Sprintf("  %d", c.CPU),
			fmt.Sprintf("%.1f", c.Share*100), fmt.Sprintf("%.1f", c.MaxShare*100)})
	}
	p.table(rows)
	for _, c := range r.CPUs {
		if c.CPU == r.BusiestCPU {
			p.line("  busiest CPU: %d (%.1f%% of the %s in NET_RX softirq)", c.CPU, c.Share*100, r.CPUWindow)
		}
	}
}

// writeRTT writes the RTT summary.
func (r *Report) writeRTT(p *printer) {
	p.line("")
	p.line("TCP RTT (flows.rtt_*: raw RTT samples at tcp_probe, whole run, µs; p50/p99 approximated from per-interval p50/p99 weighted by samples)")
	if r.RTT == nil {
		p.line("  %s", na(r.reason(figRTT, "no RTT samples")))
		return
	}
	t := r.RTT
	p.table([][]string{
		{"  p50", fmt.Sprintf("%d µs", t.P50Us)},
		{"  p99", fmt.Sprintf("%d µs", t.P99Us)},
		{"  min", fmt.Sprintf("%d µs", t.MinUs)},
		{"  samples", fmt.Sprintf("%d (in %d flow-intervals)", t.Samples, t.Rows)},
	})
}

// writeRetransmits writes sender, BPF and receiver retransmits.
func (r *Report) writeRetransmits(p *printer) {
	p.line("")
	p.line("retransmits (whole run, TCP segments)")
	p.table([][]string{
		{"  sender (traffic.tcp_retransmits, TCP_INFO)", optCount(r.SenderRetransmits, r.reason(figSndRetx, "not recorded"))},
		{"  all flows (flows.retransmits, BPF tcp_retransmit_skb)", optCount(r.FlowRetransmits, r.reason(figFlowRetx, "probes off"))},
		{"  receiver", na("counted on the sender")},
	})
}

// optCount formats an optional counter.
func optCount(v *uint64, why string) string {
	if v == nil {
		return na(why)
	}
	return fmt.Sprintf("%d", *v)
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
