package htmlreport

import (
	"fmt"
	"math"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/netprof/netprof/analysis"
)

// chart is one rendered plot, or the reason there is none.
type chart struct {
	Title   string
	Missing string
	snippet render.ChartSnippet
}

// init returns the size and ID options every chart uses.
func initOpts(id string) charts.GlobalOpts {
	return charts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "1100px", Height: "420px"})
}

// axisLabels labels the points ending at ends by seconds since start, to
// 0.1 s, with more digits where two would read the same (a final interval
// cut short ends a few ms after the last full one).
func axisLabels(start time.Time, ends []time.Time) []string {
	x := make([]string, len(ends))
	for digits := 1; digits <= 3; digits++ {
		seen, dup := map[string]bool{}, false
		for i, t := range ends {
			x[i] = fmt.Sprintf("%.*f", digits, t.Sub(start).Seconds())
			dup = dup || seen[x[i]]
			seen[x[i]] = true
		}
		if !dup {
			break
		}
	}
	return x
}

// plotted drops a final interval shorter than half the run's nominal
// interval: its rate, over a few ms as the run stops, reads as a collapse
// that did not happen (the figures count it by the analysis's own rules).
func plotted(r *analysis.Report, pts []analysis.Point) []analysis.Point {
	if n := len(pts); n > 1 && r.Manifest.IntervalNs > 0 && pts[n-1].IntervalNs < r.Manifest.IntervalNs/2 {
		return pts[:n-1]
	}
	return pts
}

// gridOpts leaves room above the plot for the title, its subtitle and the
// y-axis name, and below for the x-axis name and the legend, so none
// overlaps another.
func gridOpts() charts.GlobalOpts {
	return charts.WithGridOpts(opts.Grid{Top: "90", Bottom: "70", Left: "70", Right: "170", ContainLabel: opts.Bool(true)})
}

// throughputChart plots the primary direction's counters per interval with
// peak, steady state and whole run of the primary counter marked.
func throughputChart(r *analysis.Report) chart {
	c := chart{Title: "Throughput over time"}
	if r.Primary == nil || len(r.Primary.Points) == 0 {
		c.Missing = "no throughput measured"
		return c
	}
	d := &r.Rx
	if r.PrimaryDir == "tx" {
		d = &r.Tx
	}
	u := r.Units
	pts := plotted(r, r.Primary.Points)
	ends := make([]time.Time, len(pts))
	for i, p := range pts {
		ends[i] = p.End
	}
	x := axisLabels(r.RunStart, ends)
	line := charts.NewLine()
	line.SetGlobalOptions(initOpts("np_throughput"), gridOpts(),
		charts.WithTitleOpts(opts.Title{Title: "Throughput " + d.Name + " (" + u.RateUnit() + ", per interval)",
			Subtitle: "marked: peak, steady state and whole run of " + r.Primary.Label}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "bottom"}),
		charts.WithXAxisOpts(opts.XAxis{Name: "s since run start"}),
		charts.WithYAxisOpts(opts.YAxis{Name: u.RateUnit()}))
	line.SetXAxis(x)
	for _, rt := range d.Rates {
		if rt.W == nil {
			continue
		}
		byEnd := map[int64]float64{}
		for _, p := range rt.Points {
			byEnd[p.End.UnixNano()] = u.Rate(p.RateBps())
		}
		data := make([]opts.LineData, len(pts))
		for i, p := range pts {
			v, ok := byEnd[p.End.UnixNano()]
			if !ok {
				data[i] = opts.LineData{Value: nil}
				continue
			}
			data[i] = opts.LineData{Value: round3(v)}
		}
		var so []charts.SeriesOpts
		if rt.Counter == r.Primary.Counter {
			w := rt.W
			marks := markLines([]opts.MarkLineNameYAxisItem{{Name: "peak", YAxis: round3(u.Rate(w.PeakBps))},
				{Name: "steady state", YAxis: round3(u.Rate(w.SteadyBps))}, {Name: "whole run", YAxis: round3(u.Rate(w.WholeRunBps))}})
			so = append(so, charts.WithMarkLineNameYAxisItemOpts(marks...),
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Label: &opts.Label{Show: opts.Bool(true), Formatter: "{b}: {c}"}}))
		}
		line.AddSeries(rt.Label, data, so...)
	}
	c.snippet = line.RenderSnippet()
	return c
}

// heatChart plots the per-CPU NET_RX softirq share over time.
func heatChart(r *analysis.Report) chart {
	c := chart{Title: "Per-CPU softirq share"}
	h := r.Heat
	if h != nil && h.Source != analysis.HotAllSoftirq && r.SoftirqOff != "" {
		h = nil // NET_RX columns null (or 0 in older traces): an all-zero map would look measured
	}
	if h == nil || len(h.CPUs) == 0 {
		c.Missing = "no cpus rows with softirq time (probes off, no /proc/stat columns)"
		if r.SoftirqOff != "" {
			c.Missing = "NET_RX softirq time not recorded (" + r.SoftirqOff + ") and no /proc/stat columns"
		}
		return c
	}
	title, sub := "NET_RX softirq, % of each CPU's time", "cpus.net_rx_softirq_ns / interval_ns (irq:softirq_entry/exit)"
	if h.Source == analysis.HotAllSoftirq {
		title, sub = "softirq of every vector, % of each CPU's time",
			"cpus.proc_softirq_ns / proc_total_ns (/proc/stat, tick-sampled); NET_RX alone not measured: "+r.SoftirqOff
	}
	x := axisLabels(r.RunStart, h.BinEnds)
	y := make([]string, len(h.CPUs))
	var data []opts.HeatMapData
	for ci, cpu := range h.CPUs {
		y[ci] = fmt.Sprintf("CPU %d", cpu)
		for bi, v := range h.Share[ci] {
			if !math.IsNaN(v) {
				data = append(data, opts.HeatMapData{Value: [3]any{bi, ci, round3(100 * v)}})
			}
		}
	}
	c.snippet = heatMap("np_cpu_heat", title, sub, x, y, data, 100, "%", "softirq %")
	return c
}

// queueChart plots each counted interface queue's packet rate over time
// (nics table), when the driver counts packets per queue.
func queueChart(r *analysis.Report) chart {
	c := chart{Title: "Per-queue packet rate"}
	h := r.QueueHeat
	if h == nil || len(h.Queues) == 0 {
		c.Missing = "no per-queue packet counters (nics table: ethtool -S of the counted interfaces, bench and watch; " +
			"drivers that count packets per queue: virtio_net, hv_netvsc, mlx5, mana, ena)"
		return c
	}
	x := axisLabels(r.RunStart, h.BinEnds)
	y := make([]string, len(h.Queues))
	var data []opts.HeatMapData
	var top float64
	for qi, q := range h.Queues {
		y[qi] = q.String()
		for bi, v := range h.PacketsPerSec[qi] {
			if !math.IsNaN(v) {
				data = append(data, opts.HeatMapData{Value: [3]any{bi, qi, math.Round(v)}})
				top = max(top, v)
			}
		}
	}
	c.snippet = heatMap("np_queue_heat", "packets per second per queue",
		"nics.value of the per-queue packet counters (ethtool -S, e.g. "+h.Queues[0].Stat+") / interval",
		x, y, data, float32(math.Max(1, math.Round(top))), "", "packets/s")
	return c
}

// markLines merges marks within 2% of each other into one line named
// "a ≈ b" (two labels at one height print over each other).
func markLines(marks []opts.MarkLineNameYAxisItem) []opts.MarkLineNameYAxisItem {
	var out []opts.MarkLineNameYAxisItem
	for _, m := range marks {
		v := m.YAxis.(float64)
		merged := false
		for i := range out {
			o := out[i].YAxis.(float64)
			if math.Abs(v-o) < 0.02*math.Max(math.Abs(v), math.Abs(o)) {
				out[i].Name += " ≈ " + m.Name
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, m)
		}
	}
	return out
}

// heatMap renders a heat map of data (x bin, y row, value) over the x and
// y labels, coloured from 0 to top.
func heatMap(id, title, sub string, x, y []string, data []opts.HeatMapData, top float32, unit, series string) render.ChartSnippet {
	hm := charts.NewHeatMap()
	hm.SetGlobalOptions(initOpts(id), charts.WithGridOpts(opts.Grid{Top: "90", Bottom: "70", Left: "30", Right: "170", ContainLabel: opts.Bool(true)}),
		charts.WithTitleOpts(opts.Title{Title: title, Subtitle: sub}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "s since run start", Data: x}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: y}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithVisualMapOpts(opts.VisualMap{Min: 0, Max: top,
			Orient: "vertical", Right: "0", Top: "middle", Text: []string{fmt.Sprintf("%g%s", top, unit), "0" + unit}}))
	hm.SetXAxis(x)
	hm.AddSeries(series, data)
	return hm.RenderSnippet()
}

// rttChart plots the distribution of the flows' per-interval p50 and p99
// RTT weighted by samples, from the min to the max RTT. It is not a
// histogram of RTT samples: the trace keeps each flow-interval's
// min/p50/p99/max only.
func rttChart(r *analysis.Report) chart {
	c := chart{Title: "TCP RTT: per-interval p50 and p99 of the flows, weighted by samples (not a histogram of samples)"}
	if len(r.RTTHist) == 0 || r.RTT == nil {
		c.Missing = "no RTT samples"
		return c
	}
	x := make([]string, len(r.RTTHist))
	p50 := make([]opts.BarData, len(r.RTTHist))
	p99 := make([]opts.BarData, len(r.RTTHist))
	for i, b := range r.RTTHist {
		x[i] = fmt.Sprintf("%d-%d", b.LoUs, b.HiUs)
		p50[i] = opts.BarData{Value: b.Samples}
		p99[i] = opts.BarData{Value: b.P99Samples}
	}
	t := r.RTT
	bar := charts.NewBar()
	bar.SetGlobalOptions(initOpts("np_rtt_hist"), gridOpts(),
		charts.WithTitleOpts(opts.Title{Title: "TCP RTT (µs): each flow-interval's p50 and p99, weighted by its rtt_samples",
			Subtitle: fmt.Sprintf("all flows, whole run: min %d µs, max %d µs; p50 of the p50s %d µs, p99 of the p99s %d µs; "+
				"the trace keeps per-interval min/p50/p99/max, not the samples", t.MinUs, t.MaxUs, t.P50Us, t.P99Us)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "bottom"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithXAxisOpts(opts.XAxis{Name: "µs"}),
		charts.WithYAxisOpts(opts.YAxis{Name: "samples"}))
	bar.SetXAxis(x).AddSeries("per-interval p50", p50).AddSeries("per-interval p99", p99)
	c.snippet = bar.RenderSnippet()
	return c
}

// retxChart plots the sender's retransmits per interval.
func retxChart(r *analysis.Report) chart {
	c := chart{Title: "Retransmits over time"}
	if len(r.RetxTimeline) == 0 {
		c.Missing = "no sender retransmits recorded"
		return c
	}
	ends := make([]time.Time, len(r.RetxTimeline))
	data := make([]opts.BarData, len(r.RetxTimeline))
	for i, p := range r.RetxTimeline {
		ends[i] = p.End
		data[i] = opts.BarData{Value: p.Count}
	}
	x := axisLabels(r.RunStart, ends)
	bar := charts.NewBar()
	bar.SetGlobalOptions(initOpts("np_retx"), gridOpts(),
		charts.WithTitleOpts(opts.Title{Title: "Sender retransmits per interval (segments; " + r.Retx.Source + ")"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Name: "s since run start"}),
		charts.WithYAxisOpts(opts.YAxis{Name: "segments"}))
	bar.SetXAxis(x).AddSeries("retransmits", data)
	c.snippet = bar.RenderSnippet()
	return c
}

// round3 rounds to 3 decimals (smaller pages, same plots).
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
