package analysis

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// CompareRow is one run of a comparison (e.g. one point of a sweep).
type CompareRow struct {
	// Dir is the run directory; Streams and BlockSize (bytes) come from
	// the manifest's config (0 when absent).
	Dir                string
	Streams, BlockSize int64
	// Window is the socket buffer a bench run set (--window, manifest
	// config socket_options.window_bytes; 0 when not set) and Autotuned
	// says a bench run left it to the kernel's autotuning; RTT is the
	// delay line's round trip a bench run asked (--rtt, config rtt_ns; 0
	// none). A sweep's window and RTT runs are told apart by these.
	Window    int64
	Autotuned bool
	RTT       time.Duration
	// SteadyBps is Primary's steady state (bit/s, 0 unknown) and
	// SteadyLabel its counter.
	SteadyBps   float64
	SteadyLabel string
	// SenderRetx is the retransmit total of Retx.Source (nil unknown);
	// RetxPerGB per 10^9 bytes sent and RetxFraction per segment sent
	// (NaN unknown).
	SenderRetx   *uint64
	RetxPerGB    float64
	RetxFraction float64
	// BusiestCPU is the busiest CPU (-1 unknown) and BusiestShare its
	// share over the report's CPU window of what HotSource counts: NET_RX
	// softirq time (HotNetRx, the softirq probe) or softirq of every
	// vector (HotAllSoftirq, /proc/stat, when the probe did not run).
	BusiestCPU   int
	BusiestShare float64
	HotSource    string
	// Verdicts are the rules that fired.
	Verdicts []string
}

// CompareFlag marks a pair of runs (indexes into Rows) showing the
// rate-limiter signature: throughput flat while retransmits multiply.
type CompareFlag struct {
	From, To int
	Summary  string
}

// Comparison lines up runs.
type Comparison struct {
	Units      Units
	Rows       []CompareRow
	Flags      []CompareFlag
	Thresholds Thresholds
}

// CompareRowOf extracts r's comparison row, so a caller can drop the
// Report before analysing the next run.
func CompareRowOf(r *Report) CompareRow {
	row := CompareRow{Dir: r.Dir, Streams: ConfigInt(r.Manifest.Config, "streams"),
		BlockSize: ConfigInt(r.Manifest.Config, "block_size"), RetxPerGB: math.NaN(), RetxFraction: math.NaN(),
		BusiestCPU: -1, Verdicts: r.FiredVerdicts()}
	cfg := r.Manifest.Config
	row.Window = ConfigInt(socketOptions(cfg), "window_bytes")
	row.Autotuned = row.Window <= 0 && configString(cfg, "command") == "bench"
	row.RTT = time.Duration(ConfigInt(cfg, "rtt_ns"))
	if w := r.steady(); w != nil {
		row.SteadyBps, row.SteadyLabel = w.SteadyBps, r.PrimaryDir+" "+r.Primary.Counter
	}
	if r.Retx.Source != "" {
		n := r.Retx.Segments
		row.SenderRetx = &n
		if r.Retx.SentBytes > 0 {
			row.RetxPerGB = r.Retx.PerGB
		}
		if r.Retx.SegmentsSent > 0 {
			row.RetxFraction = r.Retx.Fraction
		}
	}
	for _, c := range r.CPUs {
		if c.CPU == r.BusiestCPU {
			row.BusiestCPU, row.BusiestShare, row.HotSource = c.CPU, r.HotShare(c), r.HotSource
		}
	}
	return row
}

// Compare lines up rows in the order given and flags each consecutive
// pair whose steady state changed by at most CompareFlat, with no core
// saturated by softirq in the second (NET_RX, or every vector where that
// is all the run measured: an upper bound that can only hold a flag back), while retransmits per GB
// (else in total) grew at least CompareRetxFactor times, or, when the
// second run has more streams, stayed high (>= RetxHigh of segments sent in
// both runs) and did not fall.
func Compare(rows []CompareRow, th Thresholds, u Units) *Comparison {
	th = th.withDefaults()
	c := &Comparison{Units: u, Rows: rows, Thresholds: th}
	for i := 1; i < len(rows); i++ {
		if f, ok := limiterSignature(rows[i-1], rows[i], th, u); ok {
			c.Flags = append(c.Flags, CompareFlag{From: i - 1, To: i, Summary: f})
		}
	}
	return c
}

// limiterSignature checks one pair of runs. A shaper or policer caps the
// total whatever the stream count, and every stream keeps losing at the cap:
// measured on the test bed (1 Gbit/s HTB, 128 KiB queue), 2 -> 8 streams
// kept 0.95 Gbit/s with 22% -> 29% of segments retransmitted, retransmits
// per GB x1.4 only, so "stayed high" counts as well as "multiplied".
func limiterSignature(a, b CompareRow, th Thresholds, u Units) (string, bool) {
	if a.SteadyBps <= 0 || b.SteadyBps <= 0 || a.SenderRetx == nil || b.SenderRetx == nil {
		return "", false
	}
	change := b.SteadyBps/a.SteadyBps - 1
	factor, what, ok := retxGrowth(a, b)
	if !ok || math.Abs(change) > th.CompareFlat || (b.BusiestCPU >= 0 && b.BusiestShare >= th.SoftirqShare) {
		return "", false
	}
	more := b.Streams > a.Streams && a.Streams > 0
	grew := fmt.Sprintf("%s grew x%.1f", what, factor)
	switch {
	case factor >= th.CompareRetxFactor:
	case more && factor >= 1 && a.RetxFraction >= th.RetxHigh && b.RetxFraction >= th.RetxHigh:
		grew = fmt.Sprintf("retransmits stayed high (%.1f%% -> %.1f%% of segments sent, >= %s; %s x%.1f)",
			100*a.RetxFraction, 100*b.RetxFraction, pct(th.RetxHigh), what, factor)
	default:
		return "", false
	}
	s := fmt.Sprintf("rate-limiter signature: steady state %s -> %s (%+.1f%%, flat within %s) while %s",
		fmtRate(u, a.SteadyBps), fmtRate(u, b.SteadyBps), 100*change, pct(th.CompareFlat), grew)
	if more {
		s += fmt.Sprintf("; streams %d -> %d did not move throughput: rate-limited path confirmed", a.Streams, b.Streams)
	}
	return s, true
}

// retxGrowth returns how many times b's retransmits per GB (else in total)
// are a's; ok is false when a has none to compare with.
func retxGrowth(a, b CompareRow) (factor float64, what string, ok bool) {
	switch {
	case !math.IsNaN(a.RetxPerGB) && !math.IsNaN(b.RetxPerGB) && a.RetxPerGB > 0:
		return b.RetxPerGB / a.RetxPerGB, "retransmits per GB", true
	case *a.SenderRetx > 0:
		return float64(*b.SenderRetx) / float64(*a.SenderRetx), "retransmits", true
	}
	return 0, "", false
}

// ConfigInt returns the integer value of key in a manifest config (JSON
// numbers decode as float64), or 0 when absent or not a number.
func ConfigInt(c map[string]any, key string) int64 {
	switch v := c[key].(type) {
	case float64:
		return int64(v)
	case int:
		return int64(v)
	case int64:
		return v
	case uint32:
		return int64(v)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

// intOrDash formats n, or "-" for 0.
func intOrDash(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// windowText formats a row's socket buffer: the size, "auto" (kernel
// autotuning) or "-" (not a bench run).
func (r CompareRow) windowText() string {
	if r.Autotuned {
		return "auto"
	}
	return bytesOrDash(r.Window)
}

// bytesOrDash formats a byte size in binary units (128 KiB), or "-"
// for 0.
func bytesOrDash(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmtSize(n)
}
