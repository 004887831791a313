package watch

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/netprof/netprof/trace"
)

// userHZ is the unit of /proc/stat times (USER_HZ, 100 on every Linux ABI).
const userHZ = 100

// procStat is the softirq fallback when the BPF softirq probe is not
// loaded: per-CPU softirq time from /proc/stat (all softirq kinds, not
// NET_RX alone, in 10 ms ticks). It writes no trace rows (the cpus table's
// columns mean NET_RX time from the probe); the view reads Busiest.
type procStat struct {
	path string
	prev map[int]uint64
	// last interval: busiest CPU and its softirq share (0-1), ok false
	// before the second read.
	cpu   int
	ratio float64
	ok    bool
}

func newProcStat() *procStat { return &procStat{path: "/proc/stat"} }

func (p *procStat) Name() string { return "proc-stat-softirq" }

func (p *procStat) Baseline() error {
	cur, err := p.read()
	p.prev = cur
	return err
}

func (p *procStat) Sample(_ *trace.Interval, intervalNs int64) error {
	cur, err := p.read()
	if err != nil {
		return err
	}
	p.ok = false
	for cpu, ticks := range cur {
		prev, seen := p.prev[cpu]
		if !seen || ticks < prev || intervalNs <= 0 {
			continue
		}
		r := float64(ticks-prev) / userHZ / (float64(intervalNs) / 1e9)
		if !p.ok || r > p.ratio {
			p.cpu, p.ratio, p.ok = cpu, min(r, 1), true
		}
	}
	p.prev = cur
	return nil
}

// read returns the softirq ticks (8th value) of each "cpuN" line.
func (p *procStat) read() (map[int]uint64, error) {
	f, err := os.Open(p.path)
	if err != nil {
		return nil, fmt.Errorf("read softirq time: %w", err)
	}
	defer f.Close()
	out := map[int]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(strings.TrimPrefix(fields[0], "cpu"))
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(fields[7], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: cpu%d softirq field %q: %w", p.path, cpu, fields[7], err)
		}
		out[cpu] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", p.path, err)
	}
	return out, nil
}
