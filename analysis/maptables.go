package analysis

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/netprof/netprof/trace"
)

// Hooks and map names of the probes rows that describe BPF tables
// (probes.parquet rows whose hook starts with "map:").
const (
	hookFlowTable   = "map:netdev"
	hookSocketTable = "map:tcp"
	mapFlowTable    = "np_nd_flows"
	mapSocketTable  = "np_tcp_socks"
)

// maxFlowEntries is the largest flow table `--flow-entries` takes
// (bench.MaxFlowEntries; analysis imports no command): a suggested size
// never goes above it.
const maxFlowEntries = 1 << 22

// MapTable is what a BPF table's probes rows (probes.parquet, hook
// "map:netdev" for the flow table, "map:tcp" for the TCP socket table)
// say over the run's window.
type MapTable struct {
	// Name is the map (np_nd_flows, np_tcp_socks); Rows counts its rows.
	Name string
	Rows int
	// Entries is the table's capacity: max_entries of the manifest's maps,
	// else (flow table) the manifest config's flow_entries; 0 when the
	// trace does not say.
	Entries uint32
	// MaxEntriesUsed is the largest map_entries of a row (entries held at
	// a read, after the idle ones were deleted); nil when no row has it.
	MaxEntriesUsed *uint64
	// DeletedIdle sums map_deleted: idle entries netprof deleted to keep
	// room (their counts were recorded first); nil when no row has it.
	DeletedIdle *uint64
	// LostBytes and LostPackets sum map_lost_bytes and map_lost_packets:
	// L2 bytes and segments, both directions, that the programs counted
	// for flows the full table refused (in no flows row). nil when no row
	// has them (the socket table does not count them).
	LostBytes, LostPackets *uint64
	// UpdateFailures sums map_update_failures: for the socket table,
	// events (RTT samples, retransmits) of sockets the full table refused;
	// for the flow table, skbs the flow or interface table refused.
	UpdateFailures uint64
	// CountedBytes is the BPF-counted L2 bytes (bpf_rx_bytes +
	// bpf_tx_bytes) of every interface in the ifaces table over the same
	// window: the flow table's share is of these. nil without those columns.
	CountedBytes *uint64
	// SuggestedEntries is a flow table size likely to hold every flow of
	// a run like this one (see suggestEntries); 0 when nothing was lost.
	SuggestedEntries uint32
}

// LostShare returns LostBytes as a fraction of CountedBytes, and false
// when either is unknown or CountedBytes is 0. It can exceed 1: the table
// is host-wide and also holds flows of interfaces the run did not record.
func (t *MapTable) LostShare() (float64, bool) {
	if t == nil || t.LostBytes == nil || t.CountedBytes == nil || *t.CountedBytes == 0 {
		return 0, false
	}
	return float64(*t.LostBytes) / float64(*t.CountedBytes), true
}

// mapAcc accumulates the probes table's map rows and the BPF interface
// bytes the flow table's loss is compared with.
type mapAcc struct {
	flows, socks MapTable
	ifaceBytes   uint64
	ifaceRows    int
}

// iface adds an ifaces row's BPF byte counts (both directions).
func (a *mapAcc) iface(x *trace.IfaceRow) {
	if x.BpfRxBytes == nil && x.BpfTxBytes == nil {
		return
	}
	a.ifaceRows++
	for _, v := range []*uint64{x.BpfRxBytes, x.BpfTxBytes} {
		if v != nil {
			a.ifaceBytes += *v
		}
	}
}

// add returns the batch function for the probes table.
func (a *mapAcc) add(_ *builder) func([]trace.ProbeRow) error {
	return func(rows []trace.ProbeRow) error {
		for i := range rows {
			switch rows[i].Hook {
			case hookFlowTable:
				a.flows.add(&rows[i])
			case hookSocketTable:
				a.socks.add(&rows[i])
			}
		}
		return nil
	}
}

// add adds one map row of t.
func (t *MapTable) add(x *trace.ProbeRow) {
	t.Rows++
	t.UpdateFailures += x.MapUpdateFailures
	if x.MapEntries != nil && (t.MaxEntriesUsed == nil || *x.MapEntries > *t.MaxEntriesUsed) {
		t.MaxEntriesUsed = ptrU64(*x.MapEntries)
	}
	t.DeletedIdle = addOpt(t.DeletedIdle, x.MapDeleted)
	t.LostBytes = addOpt(t.LostBytes, x.MapLostBytes)
	t.LostPackets = addOpt(t.LostPackets, x.MapLostPackets)
}

// addOpt returns sum + v: sum when v is nil, v's value when sum is.
func addOpt(sum, v *uint64) *uint64 {
	if v == nil {
		return sum
	}
	if sum == nil {
		return ptrU64(*v)
	}
	return ptrU64(*sum + *v)
}

func ptrU64(v uint64) *uint64 { return &v }

// finish sets Report.FlowTable and SocketTable (nil without rows) and
// notes a flow table that refused flows and a socket table that refused
// sockets.
func (a *mapAcc) finish(b *builder) {
	r := b.r
	if a.flows.Rows > 0 {
		t := a.flows
		t.Name, t.Entries = mapFlowTable, mapEntries(r.Manifest, "netdev", mapFlowTable)
		if t.Entries == 0 {
			t.Entries = uint32(max(ConfigInt(r.Manifest.Config, "flow_entries"), 0))
		}
		if a.ifaceRows > 0 {
			t.CountedBytes = ptrU64(a.ifaceBytes)
		}
		if t.LostBytes != nil && *t.LostBytes > 0 {
			t.SuggestedEntries = suggestEntries(&t)
			r.note(flowTableNote(&t))
		}
		r.FlowTable = &t
	}
	if a.socks.Rows > 0 {
		t := a.socks
		t.Name, t.Entries = mapSocketTable, mapEntries(r.Manifest, "tcp", mapSocketTable)
		if t.UpdateFailures > 0 {
			r.note(socketTableNote(&t))
		}
		r.SocketTable = &t
	}
}

// mapEntries returns max_entries of the manifest's map name of probe, or
// 0 when the manifest does not list it (traces before the maps list).
func mapEntries(m trace.Manifest, probe, name string) uint32 {
	for _, bm := range m.Maps {
		if bm.Probe == probe && bm.Name == name {
			return bm.MaxEntries
		}
	}
	return 0
}

// suggestEntries returns a flow table size for a rerun: the next power of
// two at or above twice the table (or the most entries used when its size
// is unknown), and at or above the entries used scaled by the bytes that
// did fit (used / (1 - lost share), the share capped at 95%: flows are
// assumed alike in size); at most maxFlowEntries.
func suggestEntries(t *MapTable) uint32 {
	base := uint64(t.Entries)
	if t.MaxEntriesUsed != nil {
		base = max(base, *t.MaxEntriesUsed)
	}
	need := 2 * max(base, 1)
	if s, ok := t.LostShare(); ok && t.MaxEntriesUsed != nil {
		need = max(need, uint64(math.Ceil(float64(*t.MaxEntriesUsed)/(1-min(s, 0.95)))))
	}
	if need >= maxFlowEntries {
		return maxFlowEntries
	}
	return uint32(1) << bits.Len64(need-1)
}

// flowTableNote says how much traffic the full flow table left out of the
// flows and what size to rerun with.
func flowTableNote(t *MapTable) string {
	share := ""
	if s, ok := t.LostShare(); ok && s <= 1 {
		share = fmt.Sprintf(" (%.0f%% of the BPF-counted bytes, rx+tx, of the run's interfaces)", 100*s)
	} else if ok {
		share = fmt.Sprintf(" (more than the %s B the run's interfaces counted: the table also refused flows of other interfaces)",
			groupDigits(*t.CountedBytes))
	}
	size := "its entries (size not in the manifest)"
	if t.Entries > 0 {
		size = "its " + groupDigits(uint64(t.Entries)) + " entries"
	}
	used := ""
	if t.MaxEntriesUsed != nil {
		used = fmt.Sprintf(" (most entries in use at a read: %s)", groupDigits(*t.MaxEntriesUsed))
	}
	pkts := ""
	if t.LostPackets != nil {
		pkts = " in " + groupDigits(*t.LostPackets) + " packets"
	}
	return fmt.Sprintf("flow table full: %s B%s%s were in flows that did not fit %s%s; "+
		"per-flow figures (flows, peers, per-flow RTT) miss them; rerun with --flow-entries ≥ %s",
		groupDigits(*t.LostBytes), pkts, share, size, used, strconv.FormatUint(uint64(t.SuggestedEntries), 10))
}

// socketTableNote says that the TCP socket table refused sockets.
func socketTableNote(t *MapTable) string {
	size := ""
	if t.Entries > 0 {
		size = " of " + groupDigits(uint64(t.Entries)) + " entries"
	}
	used := ""
	if t.MaxEntriesUsed != nil {
		used = fmt.Sprintf(" (most in use at a read: %s)", groupDigits(*t.MaxEntriesUsed))
	}
	return fmt.Sprintf("TCP socket table%s full: %s events (RTT samples, retransmits) of sockets it could not take%s "+
		"are in no flows row: RTT and BPF retransmit figures miss them", size, groupDigits(t.UpdateFailures), used)
}

// groupDigits formats n with commas between groups of three digits
// (454960 -> "454,960").
func groupDigits(n uint64) string {
	s := strconv.FormatUint(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
