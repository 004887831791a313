// Package jsonstream writes `--json-stream` output: one JSON object per
// line as the run goes, like iperf3's --json-stream. Each completed
// interval is {"event":"interval","time":END,"interval_ns":N,"data":ROWS}
// with ROWS the interval's rows under the trace's table and column names
// (trace.IntervalJSON: same names and units as the Parquet files); the run
// ends with {"event":"end","data":REPORT}, the command's --json object.
package jsonstream

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/netprof/netprof/trace"
)

// Stream writes events to w, one line each. Safe for concurrent use.
type Stream struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// New returns a Stream writing to w.
func New(w io.Writer) *Stream { return &Stream{w: w} }

// Interval writes the interval that ended at end. An error is kept (Err)
// and later events are dropped: a closed pipe must not stop the run.
func (s *Stream) Interval(end time.Time, iv *trace.Interval) {
	rows, err := trace.IntervalJSON(*iv)
	if err != nil {
		s.fail(fmt.Errorf("json-stream interval: %w", err))
		return
	}
	ns := int64(0)
	for _, r := range iv.Ifaces {
		ns = max(ns, r.IntervalNs)
	}
	for _, r := range iv.CPUs {
		ns = max(ns, r.IntervalNs)
	}
	for _, r := range iv.Traffic {
		ns = max(ns, r.IntervalNs)
	}
	head, _ := json.Marshal(struct {
		Event      string `json:"event"`
		Time       string `json:"time"`
		IntervalNs int64  `json:"interval_ns"`
	}{"interval", end.UTC().Format(time.RFC3339Nano), ns})
	line := append(head[:len(head)-1], `,"data":`...)
	line = append(append(line, rows...), "}\n"...)
	s.write(line)
}

// End writes the final event with v (the command's --json report) as its
// data and returns the first error any event met.
func (s *Stream) End(v any) error {
	b, err := json.Marshal(struct {
		Event string `json:"event"`
		Data  any    `json:"data"`
	}{"end", v})
	if err != nil {
		s.fail(fmt.Errorf("json-stream end: %w", err))
	} else {
		s.write(append(b, '\n'))
	}
	return s.Err()
}

// Err returns the first error, or nil.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Stream) write(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if _, err := s.w.Write(line); err != nil {
		s.err = fmt.Errorf("json-stream: %w", err)
	}
}

func (s *Stream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}
