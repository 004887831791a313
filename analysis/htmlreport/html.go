// Package htmlreport writes a netprof analysis.Report as one self-contained
// HTML page: the figures and verdicts as tables, and plots (throughput over
// time with peak / steady state / whole run marked, a per-CPU NET_RX
// softirq heat map, the flows' per-interval p50/p99 RTT weighted by
// samples, retransmits over time) drawn by
// Apache ECharts through go-echarts. The ECharts library is embedded in the
// binary and inlined into the page: it loads nothing from the network.
package htmlreport

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/netprof/netprof/analysis"
)

// page is the template's data.
type page struct {
	Title     string
	Generated string
	Version   string
	Meta      [][2]string
	Verdicts  []analysis.Verdict
	Tables    []table
	Charts    []chart
	Notes     []string
	Library   template.JS
}

// table is a figure table: a caption, a header row and rows.
type table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// Element returns the chart's container div.
func (c chart) Element() template.HTML { return template.HTML(c.snippet.Element) } //nolint:gosec // go-echarts output

// Script returns the chart's <script> element.
func (c chart) Script() template.HTML { return template.HTML(c.snippet.Script) } //nolint:gosec // go-echarts output

// Write writes r as a self-contained HTML page to w; generated is printed
// as the page's creation time. It returns the first write error.
func Write(w io.Writer, r *analysis.Report, generated time.Time) error {
	p := page{
		Title: "netprof report: " + orDash(r.Dir), Generated: generated.UTC().Format(time.RFC3339),
		Version: EchartsVersion, Meta: meta(r), Verdicts: r.Verdicts, Tables: tables(r),
		Charts: []chart{throughputChart(r), heatChart(r), queueChart(r), rttChart(r), retxChart(r)},
		Notes:  r.Notes, Library: template.JS(echartsJS), //nolint:gosec // embedded library
	}
	if err := pageTemplate.Execute(w, p); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	return nil
}

// meta returns the run's identity rows.
func meta(r *analysis.Report) [][2]string {
	m := r.Manifest
	rated := "unknown (give --link-speed)"
	if r.RatedBps > 0 {
		rated = fmt.Sprintf("%s %s (%s)", r.Units.FormatRate(r.RatedBps), r.Units.RateUnit(), r.RatedSource)
	}
	return [][2]string{
		{"run directory", orDash(r.Dir)},
		{"host", r.HostDesc()},
		{"run", fmt.Sprintf("%s to %s, status %s", fmtTime(r.RunStart), fmtTime(r.RunEnd), orDash(m.Status))},
		{"recorded by", fmt.Sprintf("netprof %s, trace schema v%d", orDash(m.ToolVersion), m.SchemaVersion)},
		{"rated link speed", rated},
		{"units", r.Units.RateUnitLong()},
	}
}

// tables returns the throughput and CPU tables.
func tables(r *analysis.Report) []table {
	u := r.Units
	var out []table
	for _, d := range []*analysis.Direction{&r.Rx, &r.Tx} {
		t := table{Caption: fmt.Sprintf("Throughput %s, interface %s (%s)", d.Name, orDash(d.Iface), u.RateUnitLong()),
			Head: []string{"counter", "source", "peak", "steady state", "whole run", "p50", "p95", "active window"}}
		for _, rt := range d.Rates {
			t.Rows = append(t.Rows, rateCells(u, rt))
		}
		out = append(out, t)
	}
	if len(r.CPUs) > 0 {
		t := table{Caption: "Per-CPU softirq over the " + r.CPUWindow,
			Head: []string{"cpu", "NET_RX %", "all softirq % (/proc/stat)", "busy % (/proc/stat)", "NET_TX %",
				"max interval NET_RX %", "rx packets", "ns/packet", "NAPI exhausted %", "busiest in"}}
		if na := r.CPUColumnsNA(); len(na) > 0 {
			t.Caption += " (" + strings.Join(na, "; ") + ")"
		}
		if h := r.HostCPU; h != nil {
			t.Caption += fmt.Sprintf("; host, all %d CPUs (/proc/stat): busy %.1f%%, softirq of every vector %.1f%%",
				h.CPUs, 100*h.Busy, 100*h.Softirq)
		}
		for _, c := range r.CPUs {
			t.Rows = append(t.Rows, append([]string{fmt.Sprint(c.CPU)}, r.CPUCells(c)...))
		}
		out = append(out, t)
	}
	return out
}

// rateCells formats one throughput row.
func rateCells(u analysis.Units, rt analysis.Rate) []string {
	w := rt.W
	if w == nil {
		return []string{rt.Label, rt.Source, "n/a (" + rt.Missing + ")", "", "", "", "", ""}
	}
	if !w.HasActive() {
		return []string{rt.Label, rt.Source, u.FormatRate(w.PeakBps), "n/a (no bytes)", u.FormatRate(w.WholeRunBps), "", "", ""}
	}
	active := fmt.Sprintf("%s to %s (%.3f s)", fmtTime(w.ActiveStart), fmtTime(w.ActiveEnd), w.ActiveLength().Seconds())
	return []string{rt.Label, rt.Source, u.FormatRate(w.PeakBps), u.FormatRate(w.SteadyBps), u.FormatRate(w.WholeRunBps),
		u.FormatRate(w.P50Bps), u.FormatRate(w.P95Bps), active}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; font-size: 0.9em; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
.yes { background: #fde2e2; font-weight: bold; } .skipped { color: #888; }
ul.ev { margin: 0; padding-left: 1.2em; }
</style>
<script type="text/javascript">
{{.Library}}
</script>
</head>
<body>
<h1>{{.Title}}</h1>
<p>generated {{.Generated}}; plots by Apache ECharts {{.Version}} (inlined, Apache-2.0)</p>
<table>{{range .Meta}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
<h2>Verdicts</h2>
<table id="verdicts"><tr><th>rule</th><th>status</th><th>finding</th><th>evidence</th><th>thresholds</th></tr>
{{range .Verdicts}}<tr class="{{.Status}}"><td>{{.Rule}}</td><td>{{.Status}}</td><td>{{.Summary}}</td>
<td><ul class="ev">{{range .Evidence}}<li>{{.}}</li>{{end}}</ul></td><td><ul class="ev">{{range .Thresholds}}<li>{{.}}</li>{{end}}</ul></td></tr>
{{end}}</table>
<h2>Figures</h2>
{{range .Tables}}<table><caption>{{.Caption}}</caption><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
{{end}}
<h2>Plots</h2>
{{range .Charts}}<h3>{{.Title}}</h3>
{{if .Missing}}<p class="missing">n/a ({{.Missing}})</p>{{else}}{{.Element}}
{{.Script}}{{end}}
{{end}}
{{if .Notes}}<h2>Notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body>
</html>
`))
