package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/trace"
)

// CPUFigures is one end's CPU use over the measured intervals (warm-up
// and cool-down left out). Host figures come from /proc/stat (every CPU of
// the machine, whatever ran there), process figures from getrusage of the
// netprof process on that end. Per-GB figures divide by the payload that
// end moved (sent plus received, 10^9 bytes a GB; on the local test bed,
// where one host is both ends, each byte once: MovedBasis says which);
// they are null when it moved nothing.
type CPUFigures struct {
	// End says which machine: "local", "peer", or "local test bed (both
	// ends)"; Role what it did ("sender", "receiver", "both").
	End  string `json:"end"`
	Role string `json:"role"`
	// Source says where the figures come from.
	Source string `json:"source"`
	// Intervals and Seconds are the measured intervals used and their
	// total length; CPUs the machine's CPU count.
	Intervals int     `json:"intervals"`
	Seconds   float64 `json:"seconds"`
	CPUs      int     `json:"cpus"`
	// Host time per mode, percent of all CPUs' time; BusyPct is everything
	// but idle, iowait and steal.
	UserPct    float64 `json:"host_user_pct"`
	SystemPct  float64 `json:"host_system_pct"`
	SoftIRQPct float64 `json:"host_softirq_pct"`
	BusyPct    float64 `json:"host_busy_pct"`
	// BusiestSoftIRQPct is the median over the intervals of the busiest
	// CPU's softirq share (percent of that CPU), and BusiestSoftIRQCPU the
	// CPU that was busiest most often (-1 unknown).
	BusiestSoftIRQPct float64 `json:"busiest_cpu_softirq_median_pct"`
	BusiestSoftIRQCPU int     `json:"busiest_softirq_cpu"`
	// HostCPUSeconds is busy CPU time of the whole machine; ProcessCPU-
	// Seconds the netprof process's user + system time, and ProcessCPUPct
	// that as a share of one CPU.
	HostCPUSeconds    float64 `json:"host_busy_cpu_s"`
	ProcessCPUSeconds float64 `json:"process_cpu_s"`
	ProcessCPUPct     float64 `json:"process_cpu_pct_of_one_cpu"`
	// MovedBytes is the payload the per-GB figures divide by: what this
	// end sent plus received, or on the local test bed (one host is both
	// ends) each byte once; MovedBasis says which.
	MovedBytes             uint64   `json:"moved_app_bytes"`
	MovedBasis             string   `json:"moved_app_bytes_basis"`
	HostCPUSecondsPerGB    *float64 `json:"host_cpu_s_per_gb"`
	ProcessCPUSecondsPerGB *float64 `json:"process_cpu_s_per_gb"`
	// Note explains figures that look inconsistent: the process's CPU
	// above the host's busy CPU (/proc/stat is tick-sampled and misses
	// short bursts, e.g. the --rtt delay line's wake-ups).
	Note string `json:"note,omitempty"`
}

// Bases of CPUFigures.MovedBytes.
const (
	MovedSentReceived = "sent plus received by this end"
	MovedOnce         = "transferred, each byte once (this host is both ends: it sent and received every byte)"
)

// phasedUsage is one interval's CPU use with its phase.
type phasedUsage struct {
	end   time.Time
	phase string
	cpu   cpustat.Usage
}

// cpuFigures aggregates the measured intervals of us. ok is false when
// none has CPU figures.
func cpuFigures(us []phasedUsage, moved uint64) (CPUFigures, bool) {
	f := CPUFigures{BusiestSoftIRQCPU: -1, MovedBytes: moved, MovedBasis: MovedSentReceived}
	var ns float64
	var busiest []float64
	count := map[int]int{}
	for _, pu := range us {
		u := pu.cpu
		if pu.phase != trace.PhaseMeasure || u.IntervalNs <= 0 || u.CPUs == 0 {
			continue
		}
		w := float64(u.IntervalNs)
		ns += w
		f.Intervals++
		f.CPUs = max(f.CPUs, u.CPUs)
		f.UserPct += w * (u.UserPct + u.NicePct)
		f.SystemPct += w * u.SystemPct
		f.SoftIRQPct += w * u.SoftIRQPct
		f.BusyPct += w * (100 - u.IdlePct - u.IOWaitPct - u.StealPct)
		f.ProcessCPUSeconds += u.ProcessUserS + u.ProcessSystemS
		if u.BusiestSoftIRQCPU >= 0 {
			busiest = append(busiest, u.BusiestSoftIRQPct)
			count[u.BusiestSoftIRQCPU]++
		}
	}
	if f.Intervals == 0 {
		return f, false
	}
	f.UserPct, f.SystemPct, f.SoftIRQPct, f.BusyPct = f.UserPct/ns, f.SystemPct/ns, f.SoftIRQPct/ns, f.BusyPct/ns
	f.Seconds = ns / 1e9
	f.HostCPUSeconds = f.BusyPct / 100 * float64(f.CPUs) * f.Seconds
	f.ProcessCPUPct = 100 * f.ProcessCPUSeconds / f.Seconds
	f.BusiestSoftIRQPct, f.BusiestSoftIRQCPU = medianOf(busiest), mostOften(count)
	if f.ProcessCPUSeconds > f.HostCPUSeconds {
		f.Note = fmt.Sprintf("netprof's own CPU (%.2f s, getrusage, exact) exceeds the host's busy CPU (%.2f s, /proc/stat): "+
			"/proc/stat is tick-sampled (10 ms) and misses short bursts (e.g. the --rtt delay line's wake-ups), "+
			"so the host figures read low here", f.ProcessCPUSeconds, f.HostCPUSeconds)
	}
	if moved > 0 {
		gb := float64(moved) / 1e9
		h, p := f.HostCPUSeconds/gb, f.ProcessCPUSeconds/gb
		f.HostCPUSecondsPerGB, f.ProcessCPUSecondsPerGB = &h, &p
	}
	return f, true
}

// localUsage returns the timeline's intervals with CPU figures, and the
// payload moved in the measured ones (sent + received, or only received
// when both ends are this process: each byte is moved once).
func localUsage(tl *timeline, bothEnds bool) ([]phasedUsage, uint64) {
	var us []phasedUsage
	var moved uint64
	for _, li := range tl.ivs {
		if li.cpuOK {
			us = append(us, phasedUsage{li.end, li.phase, li.cpu})
		}
		if li.phase == trace.PhaseMeasure {
			moved += li.received
			if !bothEnds {
				moved += li.sent
			}
		}
	}
	return us, moved
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// mostOften returns the key with the largest count (the smallest on ties),
// -1 for none.
func mostOften(count map[int]int) int {
	best, n := -1, 0
	for k, c := range count {
		if c > n || (c == n && k < best) {
			best, n = k, c
		}
	}
	return best
}
