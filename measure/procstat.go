package measure

import (
	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/internal/softnet"
	"github.com/netprof/netprof/trace"
)

// ProcSampler reads /proc/stat (and getrusage), /proc/net/softnet_stat and
// /proc/softirqs' NET_RX row once per interval, in the recorder's tick
// after the BPF samplers: it fills the proc_*, softnet_* and
// proc_net_rx_softirqs columns of the interval's cpus rows, adding a row
// for each CPU that has none (no per-CPU probe ran: the probes' columns
// stay null), and keeps the interval's host and process CPU use (Usage).
// Only the recorder's goroutine uses it. bench, watch and blob record with
// it; the zero value is ready.
type ProcSampler struct {
	// ReadCPU takes a /proc/stat and getrusage reading (nil: cpustat.Read;
	// a test brackets each reading with its own).
	ReadCPU func() (cpustat.Sample, error)

	prev cpustat.Sample
	ok   bool // prev is a reading
	// softnet is the previous /proc/net/softnet_stat reading and netRx
	// the previous NET_RX row of /proc/softirqs (nil: none).
	softnet softnet.Sample
	netRx   softnet.NetRxRuns
	// last is the usage over the latest interval; lastOK false when it
	// was not measured (no reading at its start or end).
	last   cpustat.Usage
	lastOK bool
}

func (s *ProcSampler) read() (cpustat.Sample, error) {
	if s.ReadCPU != nil {
		return s.ReadCPU()
	}
	return cpustat.Read()
}

// Name implements Sampler.
func (s *ProcSampler) Name() string { return "/proc/stat" }

// Baseline takes the first reading. A failure is not the run's: CPU
// figures are optional (null, with their reason, when missing), and the
// next Sample starts over.
func (s *ProcSampler) Baseline() error {
	var err error
	s.prev, err = s.read()
	s.ok, s.lastOK = err == nil, false
	s.softnet, _ = readSoftnet() // unreadable: the softnet columns stay null
	s.netRx, _ = readNetRx()
	return nil
}

// Sample implements Sampler: it fills the proc_* and softnet_*
// columns of iv's cpus rows with each CPU's figures since the previous
// reading, adding a row for each CPU /proc/stat lists in both readings
// that has none (no per-CPU probe ran: the probes' columns stay null).
func (s *ProcSampler) Sample(iv *trace.Interval, _ int64) error {
	s.lastOK = false
	sn, snErr := readSoftnet()
	rx, rxErr := readNetRx()
	cur, err := s.read()
	if err == nil && s.ok {
		for cpu := range cur.CPUs {
			if _, ok := cpustat.CPUDelta(s.prev, cur, cpu); ok {
				CPURow(iv, cpu)
			}
		}
	}
	if snErr == nil && s.softnet != nil {
		for i := range iv.CPUs {
			fillSoftnet(&iv.CPUs[i], s.softnet, sn)
		}
	}
	s.softnet = sn
	if rxErr == nil && s.netRx != nil {
		for i := range iv.CPUs {
			row := &iv.CPUs[i]
			a, okA := s.netRx[int(row.CPU)]
			b, okB := rx[int(row.CPU)]
			if okA && okB && b >= a {
				d := b - a
				row.ProcNetRxSoftirqs = &d
			}
		}
	}
	s.netRx = rx
	if err != nil {
		s.ok = false
		return err
	}
	prev, ok := s.prev, s.ok
	s.prev, s.ok = cur, true
	if !ok {
		return nil
	}
	s.last, s.lastOK = cpustat.Delta(prev, cur), true
	for i := range iv.CPUs {
		fillProcStat(&iv.CPUs[i], prev, cur)
	}
	return nil
}

// fillProcStat sets row's proc_* columns from its CPU's /proc/stat times
// between a and b; they stay null when that CPU is missing from either.
func fillProcStat(row *trace.CPURow, a, b cpustat.Sample) {
	d, ok := cpustat.CPUDelta(a, b, int(row.CPU))
	if !ok {
		return
	}
	soft, busy, total := uint64(d.SoftIRQ), uint64(d.Busy()), uint64(d.Total())
	row.ProcSoftirqNs, row.ProcBusyNs, row.ProcTotalNs = &soft, &busy, &total
}

// readSoftnet reads /proc/net/softnet_stat and readNetRx the NET_RX row
// of /proc/softirqs (variables for tests).
var (
	readSoftnet = softnet.Read
	readNetRx   = softnet.ReadNetRx
)

// fillSoftnet sets row's softnet_* columns from its CPU's counters between
// a and b; they stay null when that CPU is missing from either.
func fillSoftnet(row *trace.CPURow, a, b softnet.Sample) {
	ca, okA := a[int(row.CPU)]
	cb, okB := b[int(row.CPU)]
	if !okA || !okB {
		return
	}
	d := cb.Sub(ca)
	v := []uint64{uint64(d.Processed), uint64(d.Dropped), uint64(d.TimeSqueezed), uint64(d.ReceivedRPS), uint64(d.FlowLimit)}
	row.SoftnetProcessed, row.SoftnetDropped, row.SoftnetTimeSqueeze = &v[0], &v[1], &v[2]
	row.SoftnetReceivedRPS, row.SoftnetFlowLimitDrops = &v[3], &v[4]
}

// Usage returns the host and process CPU use over the latest interval,
// false when it was not measured.
func (s *ProcSampler) Usage() (cpustat.Usage, bool) { return s.last, s.lastOK }
