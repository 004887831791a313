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
}

// NewSampler returns a sampler reading r; scope filters sockets by network
// namespace (nil keeps all).
func NewSampler(r *Reader, scope func(netns uint64) bool) *Sampler {
	return &Sampler{r: r, scope: scope}
}

// Name implements loader.Sampler.
func (s *Sampler) Name() string { return "tcp" }

// Baseline implements loader.Sampler.
func (s *Sampler) Baseline() error {
	cur, err := s.r.Read()
	s.prev = cur
	return err
}

// Sample implements loader.Sampler.
func (s *Sampler) Sample(iv *trace.Interval, _ int64) error {
	cur, err := s.r.Read()
	if err != nil {
		return err
	}
	d := Diff(s.prev, cur)
	s.prev = cur
	for k, st := range d {
		if s.scope != nil && !s.scope(k.Netns) {
			continue
		}
		row := findFlow(iv, k)
		if row == nil {
			iv.Flows = append(iv.Flows, trace.FlowRow{
				Netns: k.Netns, Family: k.Family, Proto: 6,
				SrcAddr: k.Local.Addr().String(), SrcPort: k.Local.Port(),
				DstAddr: k.Remote.Addr().String(), DstPort: k.Remote.Port(),
			})
			row = &iv.Flows[len(iv.Flows)-1]
		}
		fill(row, st)
	}
	return nil
}

func findFlow(iv *trace.Interval, k Key) *trace.FlowRow {
	la, ra := k.Local.Addr().String(), k.Remote.Addr().String()
	for i := range iv.Flows {
		f := &iv.Flows[i]
		if f.Netns == k.Netns && f.Proto == 6 && f.SrcPort == k.Local.Port() && f.DstPort == k.Remote.Port() &&
			f.SrcAddr == la && f.DstAddr == ra {
			return f
		}
	}
	return nil
}

func fill(row *trace.FlowRow, st Interval) {
	row.Retransmits = st.RetransSegs
	row.RetransmitFailures = st.RetransFail
	row.RTTSamples = st.Samples
	if st.Samples > 0 {
		row.RTTMinUs, row.RTTP50Us, row.RTTP99Us, row.RTTMaxUs = &st.MinUs, &st.P50Us, &st.P99Us, &st.MaxUs
	}
	if st.SrttUs != 0 || st.SndCwnd != 0 {
		row.SrttUs, row.SndCwnd, row.MinRttUs, row.MSS = &st.SrttUs, &st.SndCwnd, &st.MinRttUs, &st.Mss
	}
}
