package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Tools compared.
const (
	toolNetprof = "netprof"
	toolIperf3  = "iperf3"
)

// Goals of issue #4: netprof / iperf3 at every stream count.
const (
	goalGoodputRatio = 1.05 // at least
	goalCPURatio     = 1.0  // at most
)

// result is one transfer by one tool.
type result struct {
	Tool    string `json:"tool"`
	Streams int    `json:"streams"`
	Rep     int    `json:"rep"`
	// Bytes and Seconds are the receiver's payload bytes and its time.
	Bytes   uint64  `json:"receiver_bytes"`
	Seconds float64 `json:"receiver_seconds"`
	// CPUSeconds is user + system time of both ends (see the package doc).
	CPUSeconds float64 `json:"cpu_s"`
	// SelfCPUSeconds is iperf3's own figure, (host_total + remote_total)
	// cpu_utilization_percent / 100 × its duration; 0 for netprof.
	SelfCPUSeconds float64 `json:"self_reported_cpu_s,omitempty"`
	// HostBusyPct is the whole machine's non-idle share over the run
	// (/proc/stat): other load on the host shows here.
	HostBusyPct float64 `json:"host_busy_pct"`
	// Retransmits are the sender's retransmitted segments (TCP_INFO).
	Retransmits uint64 `json:"sender_retransmits"`
}

// Gbps returns receiver goodput in decimal Gbit/s.
func (r result) Gbps() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Bytes) * 8 / r.Seconds / 1e9
}

// CPUPerGB returns CPU seconds per decimal GB received.
func (r result) CPUPerGB() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return r.CPUSeconds / (float64(r.Bytes) / 1e9)
}

// summary is one stream count's figures: medians of each tool's runs and
// medians of the per-pair ratios (a pair is the two runs of a repetition).
type summary struct {
	Streams         int     `json:"streams"`
	Pairs           int     `json:"pairs"`
	NetprofGbps     float64 `json:"netprof_gbit_per_s"`
	Iperf3Gbps      float64 `json:"iperf3_gbit_per_s"`
	GoodputRatio    float64 `json:"goodput_ratio"`
	NetprofCPUPerGB float64 `json:"netprof_cpu_s_per_gb"`
	Iperf3CPUPerGB  float64 `json:"iperf3_cpu_s_per_gb"`
	CPURatio        float64 `json:"cpu_per_gb_ratio"`
	GoalMet         bool    `json:"goal_met"`
}

// summarize pairs runs by stream count and repetition. A stream count
// without a complete pair is left out.
func summarize(runs []result, streams []int) []summary {
	var out []summary
	for _, n := range streams {
		var np, ip, gr, cr, npc, ipc []float64
		for _, a := range runs {
			if a.Streams != n || a.Tool != toolNetprof {
				continue
			}
			i := slices.IndexFunc(runs, func(b result) bool {
				return b.Streams == n && b.Rep == a.Rep && b.Tool == toolIperf3
			})
			if i < 0 || runs[i].Gbps() == 0 || runs[i].CPUPerGB() == 0 {
				continue
			}
			b := runs[i]
			np, ip = append(np, a.Gbps()), append(ip, b.Gbps())
			npc, ipc = append(npc, a.CPUPerGB()), append(ipc, b.CPUPerGB())
			gr = append(gr, a.Gbps()/b.Gbps())
			cr = append(cr, a.CPUPerGB()/b.CPUPerGB())
		}
		if len(gr) == 0 {
			continue
		}
		s := summary{
			Streams: n, Pairs: len(gr),
			NetprofGbps: median(np), Iperf3Gbps: median(ip), GoodputRatio: median(gr),
			NetprofCPUPerGB: median(npc), Iperf3CPUPerGB: median(ipc), CPURatio: median(cr),
		}
		s.GoalMet = s.GoodputRatio >= goalGoodputRatio && s.CPURatio <= goalCPURatio
		out = append(out, s)
	}
	return out
}

// median returns the middle value (the mean of the two middle values for
// an even count); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// verdict says whether every stream count met both goals, or which missed.
func verdict(sum []summary) string {
	var missed []string
	for _, s := range sum {
		if !s.GoalMet {
			missed = append(missed, fmt.Sprint(s.Streams))
		}
	}
	if len(missed) == 0 {
		return fmt.Sprintf("goals met at every stream count (%d)", len(sum))
	}
	return "goals MISSED at stream counts " + strings.Join(missed, ", ")
}

func printSummary(w io.Writer, sum []summary) {
	fmt.Fprintf(w, "summary (medians; ratios = median of per-pair netprof/iperf3; goal: goodput ratio >= %.2f, CPU/GB ratio <= %.2f)\n", goalGoodputRatio, goalCPURatio)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "streams\tpairs\tnetprof Gbit/s\tiperf3 Gbit/s\tgoodput ratio\tnetprof CPU s/GB\tiperf3 CPU s/GB\tCPU/GB ratio\tgoal\t")
	for _, s := range sum {
		goal := "met"
		if !s.GoalMet {
			goal = "MISSED"
		}
		fmt.Fprintf(tw, "%d\t%d\t%.2f\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t\n", s.Streams, s.Pairs,
			s.NetprofGbps, s.Iperf3Gbps, s.GoodputRatio, s.NetprofCPUPerGB, s.Iperf3CPUPerGB, s.CPURatio, goal)
	}
	_ = tw.Flush()
}

func printRuns(w io.Writer, runs []result) {
	fmt.Fprintln(w, "runs (Gbit/s = receiver payload, decimal; CPU = user+system of both ends; host busy = whole machine, /proc/stat)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "streams\trep\ttool\tGbit/s\tbytes\tseconds\tCPU s\tCPU s/GB\tself-reported CPU s\thost busy %\tretransmits\t")
	for _, r := range runs {
		self := "-"
		if r.SelfCPUSeconds > 0 {
			self = fmt.Sprintf("%.2f", r.SelfCPUSeconds)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.2f\t%d\t%.3f\t%.2f\t%.3f\t%s\t%.0f\t%d\t\n", r.Streams, r.Rep, r.Tool,
			r.Gbps(), r.Bytes, r.Seconds, r.CPUSeconds, r.CPUPerGB(), self, r.HostBusyPct, r.Retransmits)
	}
	_ = tw.Flush()
}
