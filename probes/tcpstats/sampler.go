package tcpstats

import (
	"github.com/netprof/netprof/trace"
)

// Sampler adds each socket's interval RTT, srtt, cwnd and retransmits to
// the flows rows: to the row of the same namespace and local/remote
// addresses (made by the netdev sampler), or to a new row with ifindex 0
// when there is none (netdev probe off or the flow not on an in-scope
// interface).
type Sampler struct {
	r     *Reader
	scope func(netns uint64) bool
	prev  map[Key]Sock
	// prevStats are the reader's counters at the previous read.
	prevStats Stats
}

// NewSampler returns a sampler reading r; scope filters sockets by network
// namespace (nil keeps all).
func NewSampler(r *Reader, scope func(netns uint64) bool) *Sampler {
	return &Sampler{r: r, scope: scope}
}

// Name implements measure.Sampler.
func (s *Sampler) Name() string { return "tcp" }

// Baseline implements measure.Sampler.
func (s *Sampler) Baseline() error {
	cur, err := s.r.Read()
	s.prev = cur
	s.prevStats = s.r.Stats()
	return err
}

// Sample implements measure.Sampler.
func (s *Sampler) Sample(iv *trace.Interval, _ int64) error {
	cur, err := s.r.Read()
	if err != nil {
		return err
	}
	d := Diff(s.prev, cur)
	s.prev = cur
	rows := flowIndex(iv)
	failures := s.r.FailuresKnown()
	for k, st := range d {
		if s.scope != nil && !s.scope(k.Netns) {
			continue
		}
		row := rows.rowFor(iv, k)
		fill(row, st, failures)
	}
	s.appendMapRow(iv, cur)
	return nil
}

// appendMapRow adds the "map:tcp" probes row: sockets the full table
// refused (their RTT samples and retransmits are in no flow row) and idle
// sockets user space deleted to make room.
func (s *Sampler) appendMapRow(iv *trace.Interval, cur map[Key]Sock) {
	st := s.r.Stats()
	iv.Probes = append(iv.Probes, trace.ProbeRow{
		Program: "np_tcp_socks", Hook: "map:tcp",
		MapUpdateFailures: st.Refused - s.prevStats.Refused,
		MapEntries:        ptr(uint64(len(cur))),
		MapDeleted:        ptr(st.Deleted - s.prevStats.Deleted),
	})
	s.prevStats = st
}

func ptr[T any](v T) *T { return &v }

// flowKey is the part of a flows row a socket is matched on.
type flowKey struct {
	netns         uint64
	local, remote string
	lport, rport  uint16
}

// rowIndex finds the TCP flows row of a socket in O(1): a linear search
// per socket is quadratic with thousands of flows.
type rowIndex map[flowKey]int

func flowIndex(iv *trace.Interval) rowIndex {
	idx := make(rowIndex, len(iv.Flows))
	for i := range iv.Flows {
		f := &iv.Flows[i]
		if f.Proto != 6 {
			continue
		}
		k := flowKey{netns: f.Netns, local: f.SrcAddr, remote: f.DstAddr, lport: f.SrcPort, rport: f.DstPort}
		if _, ok := idx[k]; !ok {
			idx[k] = i
		}
	}
	return idx
}

// rowFor returns the row of k in iv.Flows, appending one (ifindex 0: on
// no interface the run counts) when there is none.
func (idx rowIndex) rowFor(iv *trace.Interval, k Key) *trace.FlowRow {
	if row := idx.find(iv, k); row != nil {
		return row
	}
	iv.Flows = append(iv.Flows, trace.FlowRow{
		Netns: k.Netns, Family: k.Family, Proto: 6,
		SrcAddr: k.Local.Addr().String(), SrcPort: k.Local.Port(),
		DstAddr: k.Remote.Addr().String(), DstPort: k.Remote.Port(),
	})
	return &iv.Flows[len(iv.Flows)-1]
}

// find returns the row of k in iv.Flows, or nil. Rows appended after the
// index was built are not found (sockets are distinct keys).
func (idx rowIndex) find(iv *trace.Interval, k Key) *trace.FlowRow {
	i, ok := idx[flowKey{netns: k.Netns, local: k.Local.Addr().String(), remote: k.Remote.Addr().String(),
		lport: k.Local.Port(), rport: k.Remote.Port()}]
	if !ok {
		return nil
	}
	return &iv.Flows[i]
}

func fill(row *trace.FlowRow, st Interval, failures bool) {
	row.Retransmits = st.RetransSegs
	if failures {
		row.RetransmitFailures = ptr(st.RetransFail)
	}
	row.RTTSamples = st.Samples
	if st.Samples > 0 {
		row.RTTMinUs, row.RTTP50Us, row.RTTP99Us, row.RTTMaxUs = &st.MinUs, &st.P50Us, &st.P99Us, &st.MaxUs
	}
	if st.SrttUs != 0 || st.SndCwnd != 0 {
		row.SrttUs, row.SndCwnd, row.MinRttUs, row.MSS = &st.SrttUs, &st.SndCwnd, &st.MinRttUs, &st.Mss
	}
}
