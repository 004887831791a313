package analysis

import (
	"fmt"
	"io"
	"math"
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
	rows := [][]string{append(head, "steady state", "counter", "sender retx", "retx per GB",
		"busiest CPU NET_RX %", "verdicts")}
	for _, r := range c.Rows {
		steady, retx, perGB, cpu := na("no steady state"), na("not recorded"), "-", "-"
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
	p.line("")
	if len(c.Flags) == 0 {
		p.line("no rate-limiter signature (steady state within %s while retransmits grow >= x%.1f, or stay >= %s of "+
			"segments with more streams, between consecutive runs; no core at >= %s NET_RX softirq)",
			pct(c.Thresholds.CompareFlat), c.Thresholds.CompareRetxFactor, pct(c.Thresholds.RetxHigh), pct(c.Thresholds.SoftirqShare))
		return p.err
	}
	for _, f := range c.Flags {
		p.line("%s -> %s: %s", c.Rows[f.From].Dir, c.Rows[f.To].Dir, f.Summary)
	}
	return p.err
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
	BusiestCPU      *int     `json:"busiest_cpu"`
	BusiestSharePct *float64 `json:"busiest_cpu_net_rx_softirq_pct"`
	Verdicts        []string `json:"fired_verdicts"`
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
			j.BusiestCPU, j.BusiestSharePct = &cpu, optF(100*r.BusiestShare, false)
		}
		out.Runs = append(out.Runs, j)
	}
	for _, f := range c.Flags {
		out.Flags = append(out.Flags, JSONCompareFlag(f))
	}
	return out
}
