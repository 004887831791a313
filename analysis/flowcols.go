package analysis

import (
	"runtime"
	"time"

	"github.com/netprof/netprof/trace"
)

// Optional flows columns, indexes into flowBatch.opt.
const (
	optRTTMin = iota
	optRTTP50
	optRTTP99
	optRTTMax
	optSrtt
	optCwnd
	optMinRTT
	optMSS
	optLastRTT
	numOpt
)

// Optional uint64 flows columns (the socket iterator's payload counters),
// indexes into flowBatch.opt64; they follow the uint32 ones.
const (
	optAcked = iota
	optReceived
	optDataSegsOut
	optBusy   // tcp_busy_us
	optRwnd   // tcp_rwnd_limited_us
	optSndbuf // tcp_sndbuf_limited_us
	numOpt64
)

// flowColumns are the flows.parquet columns the analysis reads, in the
// order fromColumns expects; the optional ones come last, in opt order.
var flowColumns = []trace.Column{
	{Name: "time", Kind: trace.TimeCol}, {Name: "interval_ns", Kind: trace.Int64Col},
	{Name: "netns", Kind: trace.Uint64Col}, {Name: "ifindex", Kind: trace.Int32Col},
	{Name: "family", Kind: trace.Uint32Col}, {Name: "proto", Kind: trace.Uint32Col},
	{Name: "src_addr", Kind: trace.StringCol}, {Name: "src_port", Kind: trace.Uint32Col},
	{Name: "dst_addr", Kind: trace.StringCol}, {Name: "dst_port", Kind: trace.Uint32Col},
	{Name: "rx_bytes", Kind: trace.Uint64Col}, {Name: "tx_bytes", Kind: trace.Uint64Col},
	{Name: "tx_packets", Kind: trace.Uint64Col}, {Name: "retransmits", Kind: trace.Uint64Col},
	{Name: "rtt_samples", Kind: trace.Uint64Col},
	{Name: "rtt_min_us", Kind: trace.Uint32Col}, {Name: "rtt_p50_us", Kind: trace.Uint32Col},
	{Name: "rtt_p99_us", Kind: trace.Uint32Col}, {Name: "rtt_max_us", Kind: trace.Uint32Col},
	{Name: "srtt_us", Kind: trace.Uint32Col}, {Name: "snd_cwnd", Kind: trace.Uint32Col},
	{Name: "min_rtt_us", Kind: trace.Uint32Col}, {Name: "mss", Kind: trace.Uint32Col},
	{Name: "tcp_last_rtt_us", Kind: trace.Uint32Col},
	{Name: "tcp_bytes_acked", Kind: trace.Uint64Col}, {Name: "tcp_bytes_received", Kind: trace.Uint64Col},
	{Name: "tcp_data_segs_out", Kind: trace.Uint64Col},
	{Name: "tcp_busy_us", Kind: trace.Uint64Col}, {Name: "tcp_rwnd_limited_us", Kind: trace.Uint64Col},
	{Name: "tcp_sndbuf_limited_us", Kind: trace.Uint64Col},
}

// flowBatch is flows rows column by column: what flowAcc reads, whether
// the rows came from trace.ScanColumns or from trace.FlowRow structs.
type flowBatch struct {
	n                                     int
	end, ivNs                             []int64 // time (Unix ns), interval_ns
	netns                                 []uint64
	ifindex                               []int32
	family, proto, sport, dport, src, dst []uint32 // src, dst: string ids
	rx, tx, txPkts, retx, samples         []uint64
	// opt holds the optional columns; optOK[k][i] says row i of opt[k] is
	// not null (optOK[k] nil: no nulls).
	opt   [numOpt][]uint32
	optOK [numOpt][]bool
	// opt64 and opt64OK are the same for the uint64 optional columns.
	opt64   [numOpt64][]uint64
	opt64OK [numOpt64][]bool
	// str returns the address of a string id.
	str func(uint32) string
}

// has reports whether optional column k of row i is not null.
func (fb *flowBatch) has(k, i int) bool {
	ok := fb.optOK[k]
	return ok == nil || ok[i]
}

// has64 reports whether optional uint64 column k of row i is not null.
func (fb *flowBatch) has64(k, i int) bool {
	ok := fb.opt64OK[k]
	return ok == nil || ok[i]
}

// fromColumns points fb at the columns of cb, read with flowColumns.
func (fb *flowBatch) fromColumns(cb *trace.ColumnBatch) {
	fb.n = cb.Len
	fb.end, fb.ivNs, fb.netns, fb.ifindex = cb.Int64(0), cb.Int64(1), cb.Uint64(2), cb.Int32(3)
	fb.family, fb.proto, fb.src, fb.sport = cb.Uint32(4), cb.Uint32(5), cb.StringIDs(6), cb.Uint32(7)
	fb.dst, fb.dport = cb.StringIDs(8), cb.Uint32(9)
	fb.rx, fb.tx, fb.txPkts, fb.retx, fb.samples = cb.Uint64(10), cb.Uint64(11), cb.Uint64(12), cb.Uint64(13), cb.Uint64(14)
	first := len(flowColumns) - numOpt - numOpt64
	for k := range numOpt {
		fb.opt[k], fb.optOK[k] = cb.Uint32(first+k), cb.Valid(first+k)
	}
	for k := range numOpt64 {
		c := first + numOpt + k
		fb.opt64[k], fb.opt64OK[k] = cb.Uint64(c), cb.Valid(c)
	}
	fb.str = cb.String
}

// columnFlows reads run's flows table with trace.ScanColumns, decoding
// row groups on GOMAXPROCS-1 goroutines (at least 1, at most 4) while the
// the caller aggregates: decoding and aggregating a row cost about the same.
// The batch passed to fn is reused: fn must not keep it.
func columnFlows(run *trace.Run) source[*flowBatch] {
	return func(fn func([]*flowBatch) error) error {
		var fb flowBatch
		one := []*flowBatch{&fb}
		opts := trace.ColumnScanOptions{Workers: min(max(runtime.GOMAXPROCS(0)-1, 1), 4)}
		return trace.ScanColumns(run, trace.FlowsFile, flowColumns, opts, func(cb *trace.ColumnBatch) error {
			fb.fromColumns(cb)
			return fn(one)
		})
	}
}

// rowFlows converts src's trace.FlowRow batches into flowBatches.
func rowFlows(src source[trace.FlowRow]) source[*flowBatch] {
	if src == nil {
		return nil
	}
	return func(fn func([]*flowBatch) error) error {
		ids := map[string]uint32{}
		var strs []string
		intern := func(s string) uint32 {
			id, ok := ids[s]
			if !ok {
				id = uint32(len(strs))
				ids[s] = id
				strs = append(strs, s)
			}
			return id
		}
		str := func(id uint32) string { return strs[id] }
		return src(func(rows []trace.FlowRow) error {
			return fn([]*flowBatch{fromRows(rows, intern, str)})
		})
	}
}

// fromRows returns rows as a flowBatch, addresses interned with intern.
func fromRows(rows []trace.FlowRow, intern func(string) uint32, str func(uint32) string) *flowBatch {
	n := len(rows)
	fb := &flowBatch{n: n, end: make([]int64, n), ivNs: make([]int64, n), netns: make([]uint64, n),
		ifindex: make([]int32, n), family: make([]uint32, n), proto: make([]uint32, n), sport: make([]uint32, n),
		dport: make([]uint32, n), src: make([]uint32, n), dst: make([]uint32, n), rx: make([]uint64, n),
		tx: make([]uint64, n), txPkts: make([]uint64, n), retx: make([]uint64, n), samples: make([]uint64, n), str: str}
	for k := range numOpt {
		fb.opt[k], fb.optOK[k] = make([]uint32, n), make([]bool, n)
	}
	for k := range numOpt64 {
		fb.opt64[k], fb.opt64OK[k] = make([]uint64, n), make([]bool, n)
	}
	for i := range rows {
		x := &rows[i]
		fb.end[i], fb.ivNs[i], fb.netns[i], fb.ifindex[i] = x.Time.UnixNano(), x.IntervalNs, x.Netns, x.Ifindex
		fb.family[i], fb.proto[i], fb.sport[i], fb.dport[i] = uint32(x.Family), uint32(x.Proto), uint32(x.SrcPort), uint32(x.DstPort)
		fb.src[i], fb.dst[i] = intern(x.SrcAddr), intern(x.DstAddr)
		fb.rx[i], fb.tx[i], fb.txPkts[i], fb.retx[i], fb.samples[i] = x.RxBytes, x.TxBytes, x.TxPackets, x.Retransmits, x.RTTSamples
		for k, p := range []*uint32{x.RTTMinUs, x.RTTP50Us, x.RTTP99Us, x.RTTMaxUs, x.SrttUs, x.SndCwnd, x.MinRttUs, x.MSS, x.TCPLastRttUs} {
			if p != nil {
				fb.opt[k][i], fb.optOK[k][i] = *p, true
			}
		}
		for k, p := range []*uint64{x.TCPBytesAcked, x.TCPBytesReceived, x.TCPDataSegsOut, x.TCPBusyUs, x.TCPRwndLimitedUs, x.TCPSndbufLimitedUs} {
			if p != nil {
				fb.opt64[k][i], fb.opt64OK[k][i] = *p, true
			}
		}
	}
	return fb
}

// keepFlows feeds only the rows keep accepts, like keepRows (nil stays
// nil). It compacts each batch in place.
func keepFlows(src source[*flowBatch], keep func(end time.Time, intervalNs int64) bool) source[*flowBatch] {
	if src == nil {
		return nil
	}
	return func(fn func([]*flowBatch) error) error {
		return src(func(batches []*flowBatch) error {
			for _, fb := range batches {
				fb.compact(func(i int) bool { return keep(time.Unix(0, fb.end[i]).UTC(), fb.ivNs[i]) })
				if fb.n > 0 {
					if err := fn([]*flowBatch{fb}); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
}

// compact keeps the rows i for which keep(i), in order.
func (fb *flowBatch) compact(keep func(i int) bool) {
	n := 0
	for i := range fb.n {
		if !keep(i) {
			continue
		}
		for _, c := range [][]int64{fb.end, fb.ivNs} {
			c[n] = c[i]
		}
		for _, c := range [][]uint64{fb.netns, fb.rx, fb.tx, fb.txPkts, fb.retx, fb.samples} {
			c[n] = c[i]
		}
		for _, c := range [][]uint32{fb.family, fb.proto, fb.sport, fb.dport, fb.src, fb.dst} {
			c[n] = c[i]
		}
		fb.ifindex[n] = fb.ifindex[i]
		for k := range numOpt {
			fb.opt[k][n] = fb.opt[k][i]
			if ok := fb.optOK[k]; ok != nil {
				ok[n] = ok[i]
			}
		}
		n++
	}
	fb.n = n
}
