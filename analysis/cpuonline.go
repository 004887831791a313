package analysis

import (
	"fmt"

	"github.com/netprof/netprof/internal/cpulist"
	"github.com/netprof/netprof/trace"
)

// cpuOnline decides which CPUs of the cpus table were online during the
// run. Per-CPU BPF maps hold a value for every possible CPU, and netprof
// before the manifest's cpus_online recorded a row for each: a VM with 2
// online of 240 possible CPUs has 240 rows per interval, 238 of them zero.
// Those CPUs are not shown, not averaged over and never the hot core.
//
// A CPU counts as online when the manifest lists it (cpus_online: online
// when the run started), or any of its rows shows it ran (a counter
// moved, or /proc/stat listed it: the proc_* columns are only filled for
// CPUs with a cpuN line, i.e. online). A trace without cpus_online also
// takes CPUs below its cpu_count (runtime.NumCPU then: usually CPUs
// 0..n-1 of the machine).
type cpuOnline struct {
	listed, possible cpulist.List
	// legacy is cpu_count for traces without cpus_online (0: none).
	legacy int
	// seen holds every CPU with a row; ran those that showed they were
	// online.
	seen, ran map[int32]bool
}

// init reads the manifest's CPU lists (a malformed list counts as absent).
func (o *cpuOnline) init(m trace.Manifest) {
	o.seen, o.ran = map[int32]bool{}, map[int32]bool{}
	var err error
	if o.listed, err = cpulist.Parse(m.CPUsOnline); err != nil || len(o.listed) == 0 {
		o.listed, o.legacy = nil, m.CPUCount
	}
	if o.possible, err = cpulist.Parse(m.CPUsPossible); err != nil {
		o.possible = nil
	}
}

// row notes x's CPU and returns whether x itself shows the CPU online.
func (o *cpuOnline) row(x *trace.CPURow) bool {
	o.seen[x.CPU] = true
	if o.listed.Contains(int(x.CPU)) || (o.legacy > 0 && int(x.CPU) < o.legacy) || active(x) {
		o.ran[x.CPU] = true
		return true
	}
	return false
}

// active reports whether any counter of x moved or /proc/stat listed its
// CPU.
func active(x *trace.CPURow) bool {
	return val(x.NetRxSoftirqNs)|val(x.NetRxSoftirqCount)|val(x.NetTxSoftirqNs)|val(x.NetTxSoftirqCount)|
		val(x.RxPackets)|val(x.RxBytes)|val(x.NapiPolls)|val(x.NapiPackets)|val(x.NapiBudgetExhausted) != 0 ||
		x.ProcTotalNs != nil
}

// val is *p, 0 for a null column.
func val(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// shown reports whether cpu was online during the run (see cpuOnline).
func (o *cpuOnline) shown(cpu int32) bool { return o.ran[cpu] || o.listed.Contains(int(cpu)) }

// neverOnline returns how many CPUs were possible (per the manifest) or
// had rows, and were never online during the run.
func (o *cpuOnline) neverOnline() int {
	n := 0
	for cpu := range o.seen {
		if !o.shown(cpu) && !o.possible.Contains(int(cpu)) {
			n++
		}
	}
	for _, cpu := range o.possible {
		if !o.shown(int32(cpu)) {
			n++
		}
	}
	return n
}

// HostDesc describes the recording host for a report's header: name,
// kernel and CPUs, e.g. "vm1 (kernel 6.1.0, 2 CPUs online of 240
// possible)" (the manifest's cpu_count and cpus_possible).
func (r *Report) HostDesc() string {
	m := r.Manifest
	cpus := plural(m.CPUCount, "CPU")
	if p, err := cpulist.Parse(m.CPUsPossible); err == nil && len(p) > m.CPUCount {
		cpus = fmt.Sprintf("%d CPUs online of %d possible", m.CPUCount, len(p))
	}
	return fmt.Sprintf("%s (kernel %s, %s)", orDash(m.Host), orDash(m.Kernel), cpus)
}

// note returns the report's one line about the CPUs left out, or "".
func (o *cpuOnline) note() string {
	n := o.neverOnline()
	if n == 0 {
		return ""
	}
	s := fmt.Sprintf("%d possible CPUs were never online during the run: not shown", n)
	switch {
	case len(o.listed) > 0 && len(o.possible) > 0:
		s += fmt.Sprintf(" (possible %s, online at the start %s; per-CPU BPF maps hold a value for each possible CPU)",
			o.possible, o.listed)
	default:
		s += " (rows of all zeros for CPUs the trace's manifest does not list online: per-CPU BPF maps hold a value for each possible CPU)"
	}
	return s
}
