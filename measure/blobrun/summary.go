package blobrun

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/blob"
)

// Summary is a blob run's figures, read back from its trace (counts,
// throughput) and from the transfer's counters (whole-run latency
// quantiles, which per-interval rows cannot be merged into).
type Summary struct {
	Command string
	Dir     string
	Status  string
	// Start is the recording's start (manifest start).
	Start time.Time
	// App is the payload throughput over all targets (bit/s windows).
	App analysis.Windows
	// Total sums every row of the trace.
	Total Counts
	// LatencyP50Us, LatencyP99Us: whole run, µs to response headers;
	// nil without responses.
	LatencyP50Us, LatencyP99Us *uint64
	Intervals                  []IntervalCounts
	Targets                    []TargetCounts
	// Setup holds the unmeasured push of a pull bench (nil otherwise).
	Setup *Counts
	// ExpectedAnswers counts a push's probe attempts answered as expected
	// (existence check of a new blob or container: 404 BlobNotFound or
	// ContainerNotFound; a racing container create: 409
	// ContainerAlreadyExists): answers, not errors, so not in Total.
	ExpectedAnswers uint64
	// CreatedContainers are the containers (URLs without SAS) the push
	// created because they did not exist.
	CreatedContainers []string
}

// Counts are request counts and payload bytes.
type Counts struct {
	Bytes, Requests, HTTP2xx, HTTP503, HTTP500, HTTPOther, Retries uint64
	// Codes503 is the 503 x-ms-error-code tally ("ServerBusy=3").
	Codes503 string
}

// Rate503 is HTTP503 / Requests (0 without requests).
func (c Counts) Rate503() float64 {
	if c.Requests == 0 {
		return 0
	}
	return float64(c.HTTP503) / float64(c.Requests)
}

// IntervalCounts is one interval over all targets.
type IntervalCounts struct {
	End        time.Time
	IntervalNs int64
	Counts
}

// TargetCounts is one target over the run.
type TargetCounts struct {
	Stream int
	URL    string
	Counts
}

func (c *Counts) addRow(r trace.TrafficRow, codes map[string]uint64) {
	c.Bytes += r.AppBytes
	for _, p := range []struct {
		dst *uint64
		src *uint64
	}{{&c.Requests, r.Requests}, {&c.HTTP2xx, r.HTTP2xx}, {&c.HTTP503, r.HTTP503},
		{&c.HTTP500, r.HTTP500}, {&c.HTTPOther, r.HTTPOtherErrors}, {&c.Retries, r.Retries}} {
		if p.src != nil {
			*p.dst += *p.src
		}
	}
	if r.HTTP503ErrorCodes != nil {
		parseCodes(*r.HTTP503ErrorCodes, codes)
	}
}

// parseCodes adds "A=1;B=2" into m.
func parseCodes(s string, m map[string]uint64) {
	for _, part := range strings.Split(s, ";") {
		i := strings.LastIndexByte(part, '=')
		if i <= 0 {
			continue
		}
		if n, err := strconv.ParseUint(part[i+1:], 10, 64); err == nil {
			m[part[:i]] += n
		}
	}
}

// summarize reads the closed run's traffic rows and x's final counters.
func summarize(dir string, x *blob.Transfer) (*Summary, error) {
	run, err := trace.Open(dir)
	if err != nil {
		return nil, err
	}
	rows, err := run.Traffic()
	if err != nil {
		return nil, err
	}
	m := run.Manifest
	s := &Summary{Command: fmt.Sprint(m.Config["command"]), Dir: dir, Status: m.Status, Start: m.Start}
	byEnd := map[int64]*IntervalCounts{}
	byEndCodes := map[int64]map[string]uint64{}
	targets := x.Targets()
	s.Targets = make([]TargetCounts, len(targets))
	tcodes := make([]map[string]uint64, len(targets))
	allCodes := map[string]uint64{}
	for i, t := range targets {
		s.Targets[i] = TargetCounts{Stream: i, URL: t.Display}
		tcodes[i] = map[string]uint64{}
	}
	for _, r := range rows {
		k := r.Time.UnixNano()
		ic := byEnd[k]
		if ic == nil {
			ic = &IntervalCounts{End: r.Time, IntervalNs: r.IntervalNs}
			byEnd[k], byEndCodes[k] = ic, map[string]uint64{}
		}
		ic.addRow(r, byEndCodes[k])
		s.Total.addRow(r, allCodes)
		if i := int(r.Stream); i >= 0 && i < len(s.Targets) {
			s.Targets[i].addRow(r, tcodes[i])
		}
	}
	var pts []analysis.Point
	for k, ic := range byEnd {
		ic.Codes503 = blob.FormatCodes(byEndCodes[k])
		s.Intervals = append(s.Intervals, *ic)
		pts = append(pts, analysis.Point{End: ic.End, IntervalNs: ic.IntervalNs, Bytes: ic.Bytes})
	}
	sort.Slice(s.Intervals, func(i, j int) bool { return s.Intervals[i].End.Before(s.Intervals[j].End) })
	s.App = analysis.ComputeWindows(pts, m.Start, m.End)
	s.Total.Codes503 = blob.FormatCodes(allCodes)
	for i := range s.Targets {
		s.Targets[i].Codes503 = blob.FormatCodes(tcodes[i])
	}
	var all blob.Stats
	for _, ts := range x.Stats() {
		all = all.Add(ts.Stats)
	}
	s.ExpectedAnswers, s.CreatedContainers = all.Expected, x.CreatedContainers()
	if p50, ok := all.Latency.Quantile(0.5); ok {
		p99, _ := all.Latency.Quantile(0.99)
		s.LatencyP50Us, s.LatencyP99Us = &p50, &p99
	}
	return s, nil
}

// addSetup records the setup transfer's totals.
func (s *Summary) addSetup(stats []blob.TargetStats) {
	var all blob.Stats
	for _, ts := range stats {
		all = all.Add(ts.Stats)
	}
	s.Setup = &Counts{Bytes: all.Bytes, Requests: all.Requests, HTTP2xx: all.HTTP2xx, HTTP503: all.HTTP503,
		HTTP500: all.HTTP500, HTTPOther: all.HTTPOther, Retries: all.Retries, Codes503: blob.FormatCodes(all.Codes503)}
}

// maxTextIntervals is the most intervals WriteText lists one by one.
const maxTextIntervals = 60

func gbps(bps float64) string { return fmt.Sprintf("%.3f", bps/1e9) }

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

func optUs(v *uint64) string {
	if v == nil {
		return "n/a (no responses)"
	}
	return fmt.Sprint(*v)
}

// WriteText prints the summary as aligned text tables.
func (s *Summary) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "netprof %s: status %s, run directory %s\n\n", s.Command, s.Status, s.Dir)
	fmt.Fprintf(tw, "throughput (application payload, Gbit/s = 10^9 bit/s)\tpeak\tsteady state\twhole run\n")
	fmt.Fprintf(tw, "all targets, %d bytes\t%s\t%s\t%s\n\n", s.Total.Bytes, gbps(s.App.PeakBps), gbps(s.App.SteadyBps), gbps(s.App.WholeRunBps))
	fmt.Fprintf(tw, "HTTP attempts (every retry counted)\trequests\t2xx\t503\t500\tother\tretries\t503 rate\n")
	c := s.Total
	fmt.Fprintf(tw, "whole run\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", c.Requests, c.HTTP2xx, c.HTTP503, c.HTTP500, c.HTTPOther, c.Retries, pct(c.Rate503()))
	if s.Setup != nil {
		c := *s.Setup
		fmt.Fprintf(tw, "bench setup (not recorded)\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", c.Requests, c.HTTP2xx, c.HTTP503, c.HTTP500, c.HTTPOther, c.Retries, pct(c.Rate503()))
	}
	if s.ExpectedAnswers > 0 {
		fmt.Fprintf(tw, "existence checks answered 404 (new blob or container) or 409 (container just created): %d, expected, not errors, not counted above\n", s.ExpectedAnswers)
	}
	for _, u := range s.CreatedContainers {
		fmt.Fprintf(tw, "created container %s (it did not exist)\n", u)
	}
	fmt.Fprintf(tw, "\nrequest latency to response headers, whole run (µs)\tp50 %s\tp99 %s\n", optUs(s.LatencyP50Us), optUs(s.LatencyP99Us))
	if c.Codes503 != "" {
		fmt.Fprintf(tw, "503 error codes (x-ms-error-code)\t%s\n", c.Codes503)
	}
	fmt.Fprintf(tw, "\nper interval\tend (s)\tGbit/s\trequests\t503\t503 rate\tretries\n")
	// A long run lists only its intervals with 503s (all are in the trace
	// and in --json).
	quiet := len(s.Intervals) > maxTextIntervals
	omitted := 0
	for _, iv := range s.Intervals {
		if quiet && iv.HTTP503 == 0 {
			omitted++
			continue
		}
		at := iv.End.Sub(s.Start)
		p := analysis.Point{End: iv.End, IntervalNs: iv.IntervalNs, Bytes: iv.Bytes}
		fmt.Fprintf(tw, "\t%.2f\t%s\t%d\t%d\t%s\t%d\n", at.Seconds(), gbps(p.RateBps()), iv.Requests, iv.HTTP503, pct(iv.Rate503()), iv.Retries)
	}
	if omitted > 0 {
		fmt.Fprintf(tw, "\t(%d intervals without 503 not shown: see the trace's %s/ or --json)\n", omitted, trace.TableDir(trace.TrafficFile))
	}
	fmt.Fprintf(tw, "\nper target\tbytes\trequests\t503\tretries\turl\n")
	for _, t := range s.Targets {
		fmt.Fprintf(tw, "stream %d\t%d\t%d\t%d\t%d\t%s\n", t.Stream, t.Bytes, t.Requests, t.HTTP503, t.Retries, t.URL)
	}
	return tw.Flush()
}
