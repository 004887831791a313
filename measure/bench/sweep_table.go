package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/internal/units"
)

// SweepTable is a sweep's one table: per combination its configuration,
// the three throughput figures of the primary counter (decimal Gbit/s),
// the sender's retransmits and the busiest CPU, plus the rate-limiter
// signature between consecutive runs (analysis.Compare).
type SweepTable struct {
	Runs  []SweepLine `json:"runs"`
	Flags []SweepFlag `json:"flags"`
}

// SweepLine is one run of the table; a figure that could not be computed
// is null.
type SweepLine struct {
	Dir            string   `json:"run_dir"`
	Streams        int      `json:"streams"`
	BlockSizeBytes int      `json:"block_size_bytes"`
	WindowBytes    int      `json:"window_bytes"`
	Status         string   `json:"status"`
	Error          string   `json:"error,omitempty"`
	Counter        string   `json:"counter"`
	PeakGbps       *float64 `json:"peak_gbit_per_s"`
	SteadyGbps     *float64 `json:"steady_state_gbit_per_s"`
	WholeRunGbps   *float64 `json:"whole_run_gbit_per_s"`
	SenderRetx     *uint64  `json:"sender_retransmits_segments"`
	BusiestCPU     *int     `json:"busiest_cpu"`
	BusiestCPUPct  *float64 `json:"busiest_cpu_pct"`
	// BusiestSource says which share BusiestCPUPct is (one of the Sweep*
	// sources): NET_RX softirq over the steady state (the softirq probe),
	// else softirq of every vector over the steady state (/proc/stat, as
	// the report's hot core without that probe), else the median
	// per-interval softirq share of every vector from the run's summary
	// (/proc/stat) when the report has no cpus rows.
	BusiestSource string `json:"busiest_cpu_source"`

	reported bool // the run's trace was analysed
}

// SweepFlag is a pair of consecutive runs showing the rate-limiter
// signature (steady state flat while retransmits multiply).
type SweepFlag struct {
	From    string `json:"from_run_dir"`
	To      string `json:"to_run_dir"`
	Summary string `json:"summary"`
}

// NewSweepTable builds the table from a sweep's rows.
func NewSweepTable(rows []SweepRow) *SweepTable {
	t := &SweepTable{Runs: []SweepLine{}, Flags: []SweepFlag{}}
	var cmp []analysis.CompareRow
	for _, r := range rows {
		l := SweepLine{Dir: r.Dir, Streams: r.Config.Streams, BlockSizeBytes: r.Config.BlockSize, WindowBytes: r.Config.SockOpts.Window, Status: r.Status}
		if r.Err != nil {
			l.Error = r.Err.Error()
		}
		if r.Report != nil {
			l.reported = true
			cr := analysis.CompareRowOf(r.Report)
			cmp = append(cmp, cr)
			l.figures(r.Report, cr, r.Summary)
		}
		t.Runs = append(t.Runs, l)
	}
	for _, f := range analysis.Compare(cmp, analysis.Thresholds{}, analysis.Decimal).Flags {
		t.Flags = append(t.Flags, SweepFlag{From: cmp[f.From].Dir, To: cmp[f.To].Dir, Summary: f.Summary})
	}
	return t
}

// figures fills the throughput, retransmit and CPU columns.
func (l *SweepLine) figures(r *analysis.Report, cr analysis.CompareRow, s *Summary) {
	if r.Primary != nil && r.Primary.W != nil && r.Primary.W.HasActive() {
		w := r.Primary.W
		l.Counter = r.PrimaryDir + " " + r.Primary.Counter
		l.PeakGbps, l.SteadyGbps, l.WholeRunGbps = gb(w.PeakBps), gb(w.SteadyBps), gb(w.WholeRunBps)
	}
	l.SenderRetx = cr.SenderRetx
	if cr.BusiestCPU >= 0 {
		c, p := cr.BusiestCPU, 100*cr.BusiestShare
		l.BusiestCPU, l.BusiestCPUPct, l.BusiestSource = &c, &p, SweepNetRx
		if cr.HotSource == analysis.HotAllSoftirq {
			l.BusiestSource = SweepAllSoftirq
		}
		return
	}
	if s != nil && len(s.CPU) > 0 && s.CPU[0].BusiestSoftIRQCPU >= 0 {
		c, p := s.CPU[0].BusiestSoftIRQCPU, s.CPU[0].BusiestSoftIRQPct
		l.BusiestCPU, l.BusiestCPUPct, l.BusiestSource = &c, &p, SweepAllSoftirqMedian
	}
}

// Sources of the sweep table's busiest CPU % (SweepLine.BusiestSource).
const (
	SweepNetRx            = "NET_RX softirq, steady state (bpf irq:softirq_entry/exit)"
	SweepAllSoftirq       = "softirq of every vector, steady state (/proc/stat; NET_RX alone not measured)"
	SweepAllSoftirqMedian = "softirq of every vector, median of intervals (/proc/stat; NET_RX alone not measured)"
)

// sweepSourceShort names a busiest CPU source in the column header or a
// cell.
func sweepSourceShort(src string) string {
	switch src {
	case SweepNetRx:
		return "NET_RX"
	case SweepAllSoftirq:
		return "all-vector softirq"
	case SweepAllSoftirqMedian:
		return "all-vector softirq, interval median"
	}
	return "softirq"
}

func gb(bps float64) *float64 {
	v := bps / 1e9
	return &v
}

// WriteText writes the table (rates in decimal Gbit/s) and the flags.
func (t *SweepTable) WriteText(w io.Writer) error {
	fmt.Fprintln(w, "netprof sweep (decimal Gbit/s = 10^9 bit/s, of each run's primary counter; retransmits counted on the sender)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	sources := t.busiestSources()
	head := "busiest CPU softirq %"
	if len(sources) == 1 {
		head = "busiest CPU " + sweepSourceShort(sources[0]) + " %"
	}
	fmt.Fprintln(tw, "run\tstreams\tblock size\twindow\tpeak\tsteady state\twhole run\tcounter\tsender retx\t"+head+"\tstatus")
	for _, l := range t.Runs {
		win := "auto"
		if l.WindowBytes > 0 {
			win = units.Size(l.WindowBytes).String()
		}
		retx := "n/a"
		if l.SenderRetx != nil {
			retx = strconv.FormatUint(*l.SenderRetx, 10)
		}
		cpu := "n/a (no report)"
		if l.reported {
			cpu = "n/a (no cpus rows)"
		}
		if l.BusiestCPUPct != nil {
			cpu = fmt.Sprintf("%.1f (CPU %d)", *l.BusiestCPUPct, *l.BusiestCPU)
			if len(sources) > 1 {
				cpu = fmt.Sprintf("%.1f (CPU %d, %s)", *l.BusiestCPUPct, *l.BusiestCPU, sweepSourceShort(l.BusiestSource))
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", filepath.Base(l.Dir), l.Streams, units.Size(l.BlockSizeBytes),
			win, rate(l.PeakGbps), rate(l.SteadyGbps), rate(l.WholeRunGbps), orNA(l.Counter), retx, cpu, orNA(l.Status))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(sources) > 0 {
		var what []string
		for _, src := range sources {
			what = append(what, sweepSourceShort(src)+" = "+src)
		}
		l := "busiest CPU %: " + strings.Join(what, "; ")
		if len(sources) > 1 {
			l += "; the runs measured it differently (each cell names its source): an all-vector share is an upper bound of NET_RX, not comparable with it"
		}
		fmt.Fprintln(w, l)
	}
	for _, f := range t.Flags {
		fmt.Fprintf(w, "%s -> %s: %s\n", filepath.Base(f.From), filepath.Base(f.To), f.Summary)
	}
	_, err := fmt.Fprintf(w, "traces: %s\n", filepath.Dir(t.firstDir()))
	return err
}

func rate(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", *v)
}

// busiestSources returns the distinct busiest CPU sources, in run order.
func (t *SweepTable) busiestSources() []string {
	var out []string
	for _, l := range t.Runs {
		if l.BusiestSource != "" && !slices.Contains(out, l.BusiestSource) {
			out = append(out, l.BusiestSource)
		}
	}
	return out
}

func (t *SweepTable) firstDir() string {
	if len(t.Runs) == 0 {
		return "."
	}
	return t.Runs[0].Dir
}
