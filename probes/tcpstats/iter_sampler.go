package tcpstats

import (
	"github.com/netprof/netprof/trace"
)

// IterSampler adds each socket's interval from the socket iterator to the
// flows rows: to the row of the same namespace and local/remote addresses
// (made by the netdev sampler), or to a new row with ifindex 0. It fills
// retransmits (growth of total_retrans), srtt, snd_cwnd, min_rtt and mss,
// and the tcp_* columns; a socket that neither sent nor received anything
// in the interval gets no row. A socket that closed since the previous
// read gets its last row from its final record (the close hook), and a
// "map:tcpsock" probes row counts the closed sockets drained and those
// the kernel's table had no room for.
type IterSampler struct {
	r   *IterReader
	nss func() []Netns
	// prev is each socket as the previous read saw it.
	prev  map[Key]SockInfo
	jiffy Jiffy
	// prevLost is the close table's refusals at the previous read.
	prevLost uint64
	// missed counts, per socket kept in prev but not seen open, the
	// reads it has been missing (see carry).
	missed map[Key]int
	// leaveRetx: the tcp probe's sampler fills retransmits (see
	// LeaveRetransmits).
	leaveRetx bool
}

// NewIterSampler returns a sampler reading the sockets of the namespaces
// nss returns (called at each read).
func NewIterSampler(r *IterReader, nss func() []Netns) *IterSampler {
	return &IterSampler{r: r, nss: nss}
}

// LeaveRetransmits makes the sampler leave the retransmits column to the
// tcp probe's sampler (Sampler), when both run: the iterator can miss a
// socket in one read on kernels before 6.15 (sockets removed from a hash
// bucket during the walk make it skip others) and then counts two
// intervals' retransmits in the next, one of which the tcp probe's row
// already has (a stream's retransmits 27% high seen on 6.1).
func (s *IterSampler) LeaveRetransmits() { s.leaveRetx = true }

// Name implements measure.Sampler.
func (s *IterSampler) Name() string { return "tcpiter" }

// Baseline implements measure.Sampler.
func (s *IterSampler) Baseline() error {
	socks, _, err := s.r.Read(s.nss())
	if err != nil {
		return err
	}
	s.prev = s.index(socks)
	s.prevLost, err = s.r.ClosedLost()
	return err
}

func (s *IterSampler) index(socks []SockInfo) map[Key]SockInfo {
	m := make(map[Key]SockInfo, len(socks))
	for _, si := range socks {
		s.jiffy.Observe(si.NowNs, si.NowJiffies)
		m[si.Key] = si
	}
	return m
}

// Sample implements measure.Sampler.
func (s *IterSampler) Sample(iv *trace.Interval, _ int64) error {
	socks, closed, err := s.r.Read(s.nss())
	if err != nil {
		return err
	}
	rows := flowIndex(iv)
	// Sockets that closed since the previous read end with their final
	// record; one opened again with the same addresses (in cur) then
	// counts from zero.
	for i := range closed {
		c := &closed[i]
		s.jiffy.Observe(c.NowNs, c.NowJiffies)
		s.add(iv, rows, s.prev[c.Key], c)
		delete(s.prev, c.Key)
	}
	cur := s.index(socks)
	gone := make(map[Key]bool, len(closed))
	for i := range closed {
		gone[closed[i].Key] = true
	}
	for k, c := range cur {
		if gone[k] {
			// Seen open and closed in one read: the close record is
			// final. (A new socket with the same addresses is counted
			// from zero at the next read.)
			delete(cur, k)
			continue
		}
		s.add(iv, rows, s.prev[k], &c)
	}
	s.carry(cur, gone)
	s.prev = cur
	lost, err := s.r.ClosedLost()
	if err != nil {
		return err
	}
	if s.r.ClosedKnown() {
		iv.Probes = append(iv.Probes, trace.ProbeRow{
			Program: "np_tcp_closed", Hook: "map:tcpsock",
			MapUpdateFailures: lost - s.prevLost,
			MapEntries:        ptr(uint64(len(closed))),
		})
	}
	s.prevLost = lost
	return nil
}

// carry keeps in cur, for up to keepMissing reads, the sockets of the
// previous read that are neither open now nor among the closed records:
// one that closed after this read's drain of the close table, but before
// the iterator reached it, has its final record in the next read, which
// then counts it from these totals (not from zero). Without the close
// hook nothing is kept.
func (s *IterSampler) carry(cur map[Key]SockInfo, gone map[Key]bool) {
	if !s.r.ClosedKnown() {
		return
	}
	missed := make(map[Key]int)
	for k, p := range s.prev {
		if _, ok := cur[k]; ok || gone[k] {
			continue
		}
		if n := s.missed[k] + 1; n <= keepMissing {
			cur[k], missed[k] = p, n
		}
	}
	s.missed = missed
}

// keepMissing is how many reads a socket missing from the iterator's
// output is remembered (see carry).
const keepMissing = 5

// add adds socket c's change since p (the zero SockInfo: it is new) to
// its flows row, making one if needed, unless it moved nothing.
func (s *IterSampler) add(iv *trace.Interval, rows rowIndex, p SockInfo, c *SockInfo) {
	if went(p, *c) {
		// Closed and re-created with the same addresses: everything it
		// counted is this interval's.
		p = SockInfo{}
	}
	if c.BytesAcked == p.BytesAcked && c.BytesReceived == p.BytesReceived &&
		c.SegsOut == p.SegsOut && c.SegsIn == p.SegsIn {
		return
	}
	s.fill(rows.rowFor(iv, c.Key), &p, c)
}

// went reports whether c's totals are below p's: the socket was closed
// and another one opened with the same addresses.
// Only counters that never go back on a live socket are compared: the
// chrono times include the running chrono up to the read and are not.
func went(p, c SockInfo) bool {
	return c.BytesAcked < p.BytesAcked || c.BytesReceived < p.BytesReceived || c.TotalRetrans < p.TotalRetrans
}

func (s *IterSampler) fill(row *trace.FlowRow, p, c *SockInfo) {
	if !s.leaveRetx {
		row.Retransmits = uint64(c.TotalRetrans - p.TotalRetrans)
	}
	row.SrttUs, row.SndCwnd, row.MinRttUs, row.MSS = ptr(c.SrttUs), ptr(c.SndCwnd), ptr(c.MinRttUs), ptr(c.MSS)
	row.TCPBytesAcked = ptr(c.BytesAcked - p.BytesAcked)
	row.TCPBytesReceived = ptr(c.BytesReceived - p.BytesReceived)
	row.TCPDataSegsOut = ptr(uint64(c.DataSegsOut - p.DataSegsOut)) // 32-bit counter: the difference survives one wrap
	if us, ok := s.jiffy.Micros(c.BusyJiffies - min(p.BusyJiffies, c.BusyJiffies)); ok {
		row.TCPBusyUs = ptr(us)
		rw, _ := s.jiffy.Micros(c.RwndLimitedJiffies - min(p.RwndLimitedJiffies, c.RwndLimitedJiffies))
		sb, _ := s.jiffy.Micros(c.SndbufLimitedJiffies - min(p.SndbufLimitedJiffies, c.SndbufLimitedJiffies))
		row.TCPRwndLimitedUs, row.TCPSndbufLimitedUs = ptr(rw), ptr(sb)
	}
	if bps, ok := c.DeliveryRateBps(); ok {
		row.TCPDeliveryRateBps = ptr(bps)
		var app uint8
		if c.RateAppLimited {
			app = 1
		}
		row.TCPDeliveryAppLimited = ptr(app)
	}
	if c.LastRttUs != 0 {
		row.TCPLastRttUs = ptr(c.LastRttUs)
	}
	row.TCPSndWndBytes, row.TCPRcvWndBytes = ptr(c.SndWnd), ptr(c.RcvWnd)
}
