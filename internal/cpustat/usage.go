package cpustat

import "time"

// Usage is the CPU use over the period between two Samples, in the form the
// traffic server reports it. Host percentages are shares of the whole
// machine (100% = every online CPU busy for the whole period), taken from
// /proc/stat tick counts; the process figures are seconds of CPU time.
type Usage struct {
	// IntervalNs is the wall-clock length of the period.
	IntervalNs int64 `json:"interval_ns"`
	// CPUs is the number of CPUs /proc/stat listed at the end (its cpuN
	// lines: the online CPUs then).
	CPUs int `json:"cpus"`
	// Host time per mode as a percentage of all CPU time in the period
	// (the modes add up to 100, less rounding).
	UserPct    float64 `json:"user_pct"`
	NicePct    float64 `json:"nice_pct"`
	SystemPct  float64 `json:"system_pct"`
	IdlePct    float64 `json:"idle_pct"`
	IOWaitPct  float64 `json:"iowait_pct"`
	IRQPct     float64 `json:"irq_pct"`
	SoftIRQPct float64 `json:"softirq_pct"`
	StealPct   float64 `json:"steal_pct"`
	// BusiestSoftIRQPct is the highest softirq share of a single CPU
	// (100 = that CPU did nothing but softirq), and BusiestSoftIRQCPU its
	// index: one core's NET_RX softirq can cap a host that looks idle on
	// average.
	BusiestSoftIRQPct float64 `json:"busiest_softirq_pct"`
	BusiestSoftIRQCPU int     `json:"busiest_softirq_cpu"`
	// ProcessUserS and ProcessSystemS are this process's CPU seconds in the
	// period (getrusage).
	ProcessUserS   float64 `json:"process_user_s"`
	ProcessSystemS float64 `json:"process_system_s"`
}

// Delta returns the usage from a to b (b taken after a). Percentages are 0
// when /proc/stat did not advance (periods shorter than a tick).
func Delta(a, b Sample) Usage {
	d := b.Host.Sub(a.Host)
	u := Usage{
		IntervalNs:        b.Time.Sub(a.Time).Nanoseconds(),
		CPUs:              b.Listed(),
		ProcessUserS:      (b.ProcessUser - a.ProcessUser).Seconds(),
		ProcessSystemS:    (b.ProcessSystem - a.ProcessSystem).Seconds(),
		BusiestSoftIRQCPU: -1,
	}
	if tot := d.Total(); tot > 0 {
		pct := func(x time.Duration) float64 { return 100 * float64(x) / float64(tot) }
		u.UserPct, u.NicePct, u.SystemPct, u.IdlePct = pct(d.User), pct(d.Nice), pct(d.System), pct(d.Idle)
		u.IOWaitPct, u.IRQPct, u.SoftIRQPct, u.StealPct = pct(d.IOWait), pct(d.IRQ), pct(d.SoftIRQ), pct(d.Steal)
	}
	for i := range min(len(a.CPUs), len(b.CPUs)) {
		c := b.CPUs[i].Sub(a.CPUs[i])
		if tot := c.Total(); tot > 0 {
			if p := 100 * float64(c.SoftIRQ) / float64(tot); p > u.BusiestSoftIRQPct || u.BusiestSoftIRQCPU < 0 {
				u.BusiestSoftIRQPct, u.BusiestSoftIRQCPU = p, i
			}
		}
	}
	return u
}
