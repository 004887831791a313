package analysis

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteText writes the comparison as an aligned table followed by the
// flagged pairs.
func (c *Comparison) WriteText(w io.Writer) error {
	p := &printer{w: w}
	u := c.Units
	p.line("netprof compare (%d runs; steady state in %s, retransmits counted on the sender)", len(c.Rows), u.RateUnitLong())
	withRTT := false
	for _, r := range c.Rows {
		withRTT = withRTT || r.RTT > 0
	}
	head := []string{"run", "streams", "block size", "window"}
	if withRTT {
		head = append(head, "rtt")
	}
	sources := c.hotSources()
	rows := [][]string{append(head, "steady state", "counter", "sender retx", "retx per GB",
		busiestHeader(sources), "verdicts")}
	for _, r := range c.Rows {
		steady, retx, perGB, cpu := na("no steady state"), na("not recorded"), "-", na("no cpus rows")
		if r.SteadyBps > 0 {
			steady = u.FormatRate(r.SteadyBps)
		}
		if r.SenderRetx != nil {
			retx = fmt.Sprint(*r.SenderRetx)
		}
		if !math.IsNaN(r.RetxPerGB) {
			perGB = fmt.Sprintf("%.1f", r.RetxPerGB)
		}
		if r.BusiestCPU >= 0 {
			cpu = fmt.Sprintf("%.1f (CPU %d)", 100*r.BusiestShare, r.BusiestCPU)
			if len(sources) > 1 {
				cpu = fmt.Sprintf("%.1f (CPU %d, %s)", 100*r.BusiestShare, r.BusiestCPU, HotSourceShort(r.HotSource))
			}
		}
		row := []string{r.Dir, intOrDash(r.Streams), bytesOrDash(r.BlockSize), r.windowText()}
		if withRTT {
			rtt := "-"
			if r.RTT > 0 {
				rtt = r.RTT.String()
			}
			row = append(row, rtt)
		}
		rows = append(rows, append(row, steady, orDash(r.SteadyLabel), retx, perGB, cpu,
			orDash(strings.Join(r.Verdicts, ", "))))
	}
	p.table(rows)
	if len(sources) > 0 {
		p.line("%s", busiestLegend(sources))
	}
	p.line("")
	if len(c.Flags) == 0 {
		p.line("no rate-limiter signature (steady state within %s while retransmits grow >= x%.1f, or stay >= %s of "+
			"segments with more streams, between consecutive runs; no core at >= %s softirq, as the busiest CPU column counts it)",
			pct(c.Thresholds.CompareFlat), c.Thresholds.CompareRetxFactor, pct(c.Thresholds.RetxHigh), pct(c.Thresholds.SoftirqShare))
		return p.err
	}
	for _, f := range c.Flags {
		p.line("%s -> %s: %s", c.Rows[f.From].Dir, c.Rows[f.To].Dir, f.Summary)
	}
	return p.err
}

// hotSources returns the distinct hot-core sources of the rows with a
// busiest CPU, in row order.
func (c *Comparison) hotSources() []string {
	var out []string
	for _, r := range c.Rows {
		if r.BusiestCPU >= 0 && r.HotSource != "" && !slices.Contains(out, r.HotSource) {
			out = append(out, r.HotSource)
		}
	}
	return out
}

// HotSourceShort names a hot-core source (Report.HotSource) in a column
// header or a table cell: "NET_RX" (the softirq probe's NET_RX time) or
// "all-vector softirq" (/proc/stat's softirq of every vector).
func HotSourceShort(src string) string {
	switch src {
	case HotNetRx:
		return "NET_RX"
	case HotAllSoftirq:
		return "all-vector softirq"
	}
	return "softirq"
}

// busiestHeader is the busiest CPU column's header: named by the source
// when every run has the same, else generic (each cell then names its
// own).
func busiestHeader(sources []string) string {
	if len(sources) == 1 {
		return "busiest CPU " + HotSourceShort(sources[0]) + " %"
	}
	return "busiest CPU softirq %"
}

// busiestLegend says what the busiest CPU column counts, and that runs
// measured differently are not comparable in it.
func busiestLegend(sources []string) string {
	var what []string
	for _, s := range sources {
		what = append(what, HotSourceShort(s)+" = "+s)
	}
	l := "busiest CPU %: share of its time over each run's steady state (else whole run): " + strings.Join(what, "; ")
	if len(sources) > 1 {
		l += "; the runs measured it differently (each cell names its source): an all-vector share is an upper bound of NET_RX, not comparable with it"
	}
	return l
}

// JSONComparison is the machine-readable comparison.
type JSONComparison struct {
	Runs  []JSONCompareRow  `json:"runs"`
	Flags []JSONCompareFlag `json:"flags"`
}

// JSONCompareRow is CompareRow with units in keys.
type JSONCompareRow struct {
	Dir            string `json:"run_dir"`
	Streams        int64  `json:"streams"`
	BlockSizeBytes int64  `json:"block_size_bytes"`
	// WindowBytes is the socket buffer the run set (--window), null when
	// not set; WindowAutotuned is true for a bench run that left it to
	// the kernel. RTTMs is the delay line's round trip the run asked
	// (bench --rtt), null when none.
	WindowBytes     *int64   `json:"window_bytes"`
	WindowAutotuned bool     `json:"window_autotuned"`
	RTTMs           *float64 `json:"rtt_ms"`
	SteadyGbps      *float64 `json:"steady_state_gbit_per_s"`
	SteadyCounter   string   `json:"steady_state_counter"`
	SenderRetx      *uint64  `json:"sender_retransmits_segments"`
	RetxPerGB       *float64 `json:"retransmits_per_gb_sent"`
	RetxPct         *float64 `json:"retransmits_pct_of_segments_sent"`
	// BusiestCPU is the hot core; its share is NetRxPct when the softirq
	// probe ran (NET_RX time), else AllSoftirqPct (/proc/stat, every
	// vector), the other null; BusiestCounts names the source.
	BusiestCPU           *int     `json:"busiest_cpu"`
	BusiestNetRxPct      *float64 `json:"busiest_cpu_net_rx_softirq_pct"`
	BusiestAllSoftirqPct *float64 `json:"busiest_cpu_all_softirq_pct"`
	BusiestCounts        string   `json:"busiest_cpu_counts,omitempty"`
	Verdicts             []string `json:"fired_verdicts"`
}

// JSONCompareFlag is a flagged pair (indexes into runs).
type JSONCompareFlag struct {
	From    int    `json:"from"`
	To      int    `json:"to"`
	Summary string `json:"summary"`
}

// JSON returns the comparison in its machine-readable form (decimal units).
func (c *Comparison) JSON() JSONComparison {
	out := JSONComparison{Runs: []JSONCompareRow{}, Flags: []JSONCompareFlag{}}
	for _, r := range c.Rows {
		j := JSONCompareRow{Dir: r.Dir, Streams: r.Streams, BlockSizeBytes: r.BlockSize,
			SteadyGbps: optF(r.SteadyBps/1e9, true), SteadyCounter: r.SteadyLabel, SenderRetx: r.SenderRetx,
			RetxPerGB: optF(r.RetxPerGB, false), RetxPct: optF(100*r.RetxFraction, false), Verdicts: append([]string{}, r.Verdicts...)}
		if r.Window > 0 {
			w := r.Window
			j.WindowBytes = &w
		}
		j.WindowAutotuned = r.Autotuned
		if r.RTT > 0 {
			ms := float64(r.RTT) / 1e6
			j.RTTMs = &ms
		}
		if r.BusiestCPU >= 0 {
			cpu := r.BusiestCPU
			j.BusiestCPU, j.BusiestCounts = &cpu, r.HotSource
			if r.HotSource == HotAllSoftirq {
				j.BusiestAllSoftirqPct = optF(100*r.BusiestShare, false)
			} else {
				j.BusiestNetRxPct = optF(100*r.BusiestShare, false)
			}
		}
		out.Runs = append(out.Runs, j)
	}
	for _, f := range c.Flags {
		out.Flags = append(out.Flags, JSONCompareFlag(f))
	}
	return out
}
