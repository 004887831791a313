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
