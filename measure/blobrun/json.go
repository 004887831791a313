package blobrun

import "time"

// JSONSummary is Summary for --json: units in the keys, decimal Gbit/s.
type JSONSummary struct {
	Command    string         `json:"command"`
	Dir        string         `json:"run_dir"`
	Status     string         `json:"status"`
	Throughput JSONThroughput `json:"application_throughput"`
	Total      JSONCounts     `json:"total"`
	Setup      *JSONCounts    `json:"bench_setup,omitempty"`
	// ExpectedProbeAnswers counts a push's existence checks answered 404
	// (new blob or container) and container creates answered 409
	// (created meanwhile): expected answers, not in Total.
	ExpectedProbeAnswers uint64 `json:"expected_probe_answers"`
	// CreatedContainers lists the containers the push created (URLs
	// without SAS); empty when it created none.
	CreatedContainers []string `json:"created_containers"`
	// Latency to response headers over the whole run, µs; null without
	// responses.
	LatencyP50Us *uint64        `json:"request_latency_p50_us"`
	LatencyP99Us *uint64        `json:"request_latency_p99_us"`
	Intervals    []JSONInterval `json:"intervals"`
	Targets      []JSONTarget   `json:"targets"`
}

// JSONThroughput is the payload rate in the three windows.
type JSONThroughput struct {
	PeakGbps   float64 `json:"peak_gbit_per_s"`
	SteadyGbps float64 `json:"steady_state_gbit_per_s"`
	WholeGbps  float64 `json:"whole_run_gbit_per_s"`
	Bytes      uint64  `json:"bytes"`
}

// JSONCounts are HTTP attempt counts.
type JSONCounts struct {
	Bytes     uint64  `json:"bytes"`
	Requests  uint64  `json:"requests"`
	HTTP2xx   uint64  `json:"http_2xx"`
	HTTP503   uint64  `json:"http_503"`
	HTTP500   uint64  `json:"http_500"`
	HTTPOther uint64  `json:"http_other_errors"`
	Retries   uint64  `json:"retries"`
	Rate503   float64 `json:"http_503_rate"`
	Codes503  string  `json:"http_503_error_codes,omitempty"`
}

// JSONInterval is one interval over all targets.
type JSONInterval struct {
	End        time.Time `json:"time"`
	IntervalNs int64     `json:"interval_ns"`
	Gbps       float64   `json:"gbit_per_s"`
	JSONCounts
}

// JSONTarget is one target over the run.
type JSONTarget struct {
	Stream int    `json:"stream"`
	URL    string `json:"url"`
	JSONCounts
}

func jsonCounts(c Counts) JSONCounts {
	return JSONCounts{Bytes: c.Bytes, Requests: c.Requests, HTTP2xx: c.HTTP2xx, HTTP503: c.HTTP503,
		HTTP500: c.HTTP500, HTTPOther: c.HTTPOther, Retries: c.Retries, Rate503: c.Rate503(), Codes503: c.Codes503}
}

// JSON returns the summary for --json.
func (s *Summary) JSON() JSONSummary {
	j := JSONSummary{Command: s.Command, Dir: s.Dir, Status: s.Status, Total: jsonCounts(s.Total),
		Throughput: JSONThroughput{PeakGbps: s.App.PeakBps / 1e9, SteadyGbps: s.App.SteadyBps / 1e9,
			WholeGbps: s.App.WholeRunBps / 1e9, Bytes: s.Total.Bytes},
		LatencyP50Us: s.LatencyP50Us, LatencyP99Us: s.LatencyP99Us,
		Intervals: []JSONInterval{}, Targets: []JSONTarget{},
		ExpectedProbeAnswers: s.ExpectedAnswers, CreatedContainers: append([]string{}, s.CreatedContainers...)}
	if s.Setup != nil {
		c := jsonCounts(*s.Setup)
		j.Setup = &c
	}
	for _, iv := range s.Intervals {
		var g float64
		if iv.IntervalNs > 0 {
			g = float64(iv.Bytes) * 8 / float64(iv.IntervalNs)
		}
		j.Intervals = append(j.Intervals, JSONInterval{End: iv.End, IntervalNs: iv.IntervalNs, Gbps: g, JSONCounts: jsonCounts(iv.Counts)})
	}
	for _, t := range s.Targets {
		j.Targets = append(j.Targets, JSONTarget{Stream: t.Stream, URL: t.URL, JSONCounts: jsonCounts(t.Counts)})
	}
	return j
}
