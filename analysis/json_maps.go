package analysis

// JSONFlowTable is the BPF flow table (np_nd_flows) over the run, from
// probes.parquet's "map:netdev" rows. A figure the trace does not give is
// null, never 0.
type JSONFlowTable struct {
	// Entries is the table's capacity (manifest maps, else config).
	Entries *uint32 `json:"entries"`
	// MaxEntriesUsed is the most entries held at a read.
	MaxEntriesUsed *uint64 `json:"max_entries_used"`
	// LostBytes and LostPackets are L2 bytes and segments (rx+tx) of
	// flows the full table refused: in no flows row.
	LostBytes   *uint64 `json:"lost_bytes"`
	LostPackets *uint64 `json:"lost_packets"`
	// LostPct is LostBytes as a share of the BPF-counted bytes (rx+tx)
	// of the run's interfaces; null when they are unknown.
	LostPct *float64 `json:"lost_pct_of_bpf_iface_bytes"`
	// DeletedIdle is idle entries netprof deleted to keep room.
	DeletedIdle *uint64 `json:"deleted_idle"`
	// SuggestedEntries is a --flow-entries for a rerun; null when nothing
	// was lost.
	SuggestedEntries *uint32 `json:"suggested_entries"`
}

// JSONSocketTable is the tcp probe's socket table (np_tcp_socks) over the
// run, from probes.parquet's "map:tcp" rows.
type JSONSocketTable struct {
	Entries        *uint32 `json:"entries"`
	MaxEntriesUsed *uint64 `json:"max_entries_used"`
	// RefusedEvents counts events (RTT samples, retransmits) of sockets
	// the full table could not take.
	RefusedEvents uint64  `json:"refused_events"`
	DeletedIdle   *uint64 `json:"deleted_idle"`
}

func jsonFlowTable(t *MapTable) *JSONFlowTable {
	if t == nil {
		return nil
	}
	out := &JSONFlowTable{Entries: optU32(t.Entries), MaxEntriesUsed: t.MaxEntriesUsed,
		LostBytes: t.LostBytes, LostPackets: t.LostPackets, DeletedIdle: t.DeletedIdle,
		SuggestedEntries: optU32(t.SuggestedEntries)}
	if s, ok := t.LostShare(); ok {
		out.LostPct = optF(100*s, false)
	}
	return out
}

func jsonSocketTable(t *MapTable) *JSONSocketTable {
	if t == nil {
		return nil
	}
	return &JSONSocketTable{Entries: optU32(t.Entries), MaxEntriesUsed: t.MaxEntriesUsed,
		RefusedEvents: t.UpdateFailures, DeletedIdle: t.DeletedIdle}
}

// JSONProbeCost is ProbeCost with units in keys.
type JSONProbeCost struct {
	Window       string   `json:"window"`
	RunTimeNs    uint64   `json:"run_time_ns"`
	Runs         uint64   `json:"runs"`
	NsPerRun     float64  `json:"ns_per_run"`
	WindowNs     uint64   `json:"window_ns"`
	CPUs         int      `json:"cpus"`
	HostPct      float64  `json:"host_cpu_pct"`
	BusiestCPU   int      `json:"busiest_cpu"`
	BusiestNetRx *float64 `json:"busiest_cpu_net_rx_pct"`
}

func jsonProbeCost(r *Report) (*JSONProbeCost, string) {
	c := r.ProbeCost
	if c == nil {
		return nil, r.reason(figProbeCost, "probes off")
	}
	out := &JSONProbeCost{Window: c.Window, RunTimeNs: c.RunNs, Runs: c.Events, NsPerRun: c.NsPerEvent(),
		WindowNs: c.WindowNs, CPUs: c.CPUs, HostPct: 100 * c.HostShare, BusiestCPU: c.BusiestCPU}
	if c.BusiestNetRxShare != nil {
		out.BusiestNetRx = optF(100**c.BusiestNetRxShare, false)
	}
	return out, ""
}
