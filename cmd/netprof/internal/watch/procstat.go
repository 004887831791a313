package watch

import (
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/trace"
)

// procStat is the softirq fallback when the BPF softirq probe is not
// loaded: per-CPU softirq time from /proc/stat (internal/cpustat: all softirq
// kinds, not NET_RX alone, in USER_HZ ticks). It writes no trace rows (the
// cpus table's columns mean NET_RX time from the probe); the view reads
// Busiest.
type procStat struct {
	prev cpustat.Sample
	// last interval: busiest CPU and its softirq share (0-1), ok false
	// before the second read.
	cpu   int
	ratio float64
	ok    bool
}

func newProcStat() *procStat { return &procStat{} }

func (p *procStat) Name() string { return "proc-stat-softirq" }

func (p *procStat) Baseline() error {
	cur, err := cpustat.Read()
	p.prev = cur
	return err
}

func (p *procStat) Sample(_ *trace.Interval, intervalNs int64) error {
	cur, err := cpustat.Read()
	if err != nil {
		return err
	}
	p.ok = false
	for cpu := range cur.CPUs {
		d, seen := cpustat.CPUDelta(p.prev, cur, cpu)
		if !seen || intervalNs <= 0 {
			continue
		}
		r := float64(d.SoftIRQ) / float64(time.Duration(intervalNs))
		if !p.ok || r > p.ratio {
			p.cpu, p.ratio, p.ok = cpu, min(r, 1), true
		}
	}
	p.prev = cur
	return nil
}
