package trace

import "time"

// Manifest is manifest.json: one per run. Times are UTC.
type Manifest struct {
	SchemaVersion int       `json:"schema_version"`
	ToolVersion   string    `json:"tool_version"`
	Argv          []string  `json:"argv"`
	Start         time.Time `json:"start"`
	// End is zero while the run is being recorded.
	End    time.Time `json:"end"`
	Host   string    `json:"host"`
	Kernel string    `json:"kernel"`
	// CPUCount is the number of the machine's online CPUs when the run
	// started (/sys/devices/system/cpu/online), whatever the process's
	// affinity. Traces written before CPUsOnline existed hold
	// runtime.NumCPU here: the CPUs the process could run on.
	CPUCount int `json:"cpu_count"`
	// CPUsOnline is the machine's online CPUs when the run started, in
	// the kernel's list format ("0-3,8-11"), from
	// /sys/devices/system/cpu/online; "" when it could not be read and in
	// traces from before this field. CPUs that come online later still get
	// cpus rows (the samplers follow the online list every interval).
	CPUsOnline string `json:"cpus_online,omitempty"`
	// CPUsPossible is the machine's possible CPUs (those that could ever
	// be online: per-CPU BPF maps hold a value for each), same format,
	// from /sys/devices/system/cpu/possible; "" as for CPUsOnline.
	CPUsPossible string `json:"cpus_possible,omitempty"`
	// IntervalNs is the nominal sampling interval; each row carries the
	// measured one in interval_ns.
	IntervalNs int64       `json:"interval_ns"`
	Interfaces []Interface `json:"interfaces"`
	Probes     []Probe     `json:"probes"`
	// Config is the command's configuration (flags), as given.
	Config map[string]any `json:"config"`
	// Status is "ok", or what ended the run early (e.g. "interrupted").
	Status string `json:"status"`
}

// Interface describes one interface the run sampled.
type Interface struct {
	Name   string `json:"name"`
	Index  int32  `json:"index"`
	Netns  uint64 `json:"netns"`
	Driver string `json:"driver"`
	Master string `json:"master,omitempty"`
	MTU    int    `json:"mtu"`
	// RatedSpeedMbps is the link speed in decimal Mbit/s; nil when the
	// driver reports none (virtual links, "Speed: Unknown!").
	RatedSpeedMbps *int64 `json:"rated_speed_mbps"`
	// Role is what the run used it for, e.g. "sender", "receiver".
	Role string `json:"role,omitempty"`
}

// Probe records whether one BPF program ran.
type Probe struct {
	Name     string `json:"name"`
	Hook     string `json:"hook"`
	Attached bool   `json:"attached"`
	// Reason says why it is not attached (missing tracepoint, verifier
	// error, --no-bpf); empty when attached.
	Reason string `json:"reason,omitempty"`
}

// ReasonNotSelected is Probe.Reason of a program the run's `--probes`
// selection left out (not a failure).
const ReasonNotSelected = "not selected (--probes)"
