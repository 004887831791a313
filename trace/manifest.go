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
	// Maps describes every BPF map the run's probes created, probe by
	// probe, map by map in name order; [] when no probe loaded, absent in
	// traces from before this field.
	Maps []BPFMap `json:"maps"`
	// Config is the command's configuration (flags), as given.
	Config map[string]any `json:"config"`
	// Status is "ok", or what ended the run early (e.g. "interrupted");
	// "recording" while it is written, and forever in a run whose recorder
	// was killed.
	Status string `json:"status"`
	// Checkpoint is, while the run is recording, how much of it is in
	// closed part files: what survives if the recorder is killed. nil
	// before the first checkpoint and once the run is closed.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
}

// Checkpoint is the last time the Writer closed every table's open part.
type Checkpoint struct {
	// Time is when the parts were closed (UTC).
	Time time.Time `json:"time"`
	// Intervals is how many intervals the closed parts hold, in all.
	Intervals int64 `json:"intervals"`
	// Parts is how many checkpoints were made (part sequence numbers
	// 0..Parts-1 are closed; a table without rows in one has no file).
	Parts int `json:"parts"`
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
	// Queues maps its queues to interrupts and CPUs when the run started;
	// nil when not read (interfaces in other namespaces than netprof's,
	// older traces).
	Queues *QueueMap `json:"queues,omitempty"`
}

// QueueMap is an interface's queues, interrupts and NUMA node.
type QueueMap struct {
	// NumaNode is the NIC's NUMA node; nil when the kernel gives none
	// (-1, or no device).
	NumaNode *int `json:"numa_node"`
	// RxQueues and TxQueues are the queues with their RPS and XPS CPUs.
	RxQueues []Queue `json:"rx_queues"`
	TxQueues []Queue `json:"tx_queues"`
	// IRQs are the device's MSI/MSI-X interrupts; none for a virtual
	// interface (veth, lo).
	IRQs []IRQ `json:"irqs"`
}

// Queue is one receive or transmit queue.
type Queue struct {
	Index int `json:"index"`
	// CPUs is the queue's RPS (rx) or XPS (tx) CPU set in list format
	// ("0-3,8"); "" when not set.
	CPUs string `json:"cpus"`
}

// IRQ is one interrupt of the device.
type IRQ struct {
	IRQ int `json:"irq"`
	// Name is the interrupt's action name (/proc/interrupts), e.g.
	// "mlx5_comp3@pci:0000:00:05.0", "virtio2-input.0".
	Name string `json:"name"`
	// Direction ("rx", "tx", "rxtx") and Queue are parsed from Name;
	// empty and nil when it names no queue.
	Direction string `json:"direction,omitempty"`
	Queue     *int   `json:"queue"`
	// Affinity and Effective are the CPUs it may run on and those it is
	// delivered to (/proc/irq/N/smp_affinity_list,
	// effective_affinity_list), list format.
	Affinity  string `json:"affinity"`
	Effective string `json:"effective_affinity"`
	// Count is its interrupts on all CPUs so far, at the start.
	Count uint64 `json:"count_at_start"`
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

// BPFMap describes one BPF map of a probe as the kernel created it (its
// bpf_map_info; memlock from /proc/self/fdinfo), so a reader of the trace
// knows the tables' capacity and what they cost in kernel memory.
type BPFMap struct {
	// Probe is the probe family that created it (e.g. "netdev"); Name the
	// map's name in the probe's collection (e.g. "np_nd_flows", ".bss").
	Probe string `json:"probe"`
	Name  string `json:"name"`
	// Type is the map type as cilium/ebpf spells it: "Hash", "Array",
	// "PerCPUArray", "RingBuf", ...
	Type string `json:"type"`
	// KeySizeBytes and ValueSizeBytes are one key's and one value's size
	// (for a per-CPU map: one CPU's value).
	KeySizeBytes   uint32 `json:"key_size_bytes"`
	ValueSizeBytes uint32 `json:"value_size_bytes"`
	// MaxEntries is the map's capacity in entries (a ring buffer's: its
	// size in bytes).
	MaxEntries uint32 `json:"max_entries"`
	// PerCPU is true when each entry holds one value per possible CPU;
	// PossibleCPUs is the machine's possible-CPU count the map was sized
	// for (/sys/devices/system/cpu/possible), per-CPU or not.
	PerCPU       bool `json:"per_cpu"`
	PossibleCPUs int  `json:"possible_cpus"`
	// ValueBytes is what the values take at capacity: MaxEntries ×
	// ValueSizeBytes rounded up to 8 × (PossibleCPUs if PerCPU, else 1);
	// a ring buffer's size. Keys and the kernel's per-entry overhead are
	// not in it (they are in MemlockBytes).
	ValueBytes uint64 `json:"value_bytes"`
	// MemlockBytes is the kernel's own figure of the map's memory (fdinfo
	// memlock, Linux >= 4.10; what the kernel charges, its estimate of
	// the map's usage since 6.4); nil when the kernel gives none.
	MemlockBytes *uint64 `json:"memlock_bytes"`
}
