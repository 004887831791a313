package analysis

import (
	"math"
	"slices"
	"sort"
)

// quantUs returns v exact below 1000 µs and rounded to 3 significant
// digits above, so a distribution's distinct values stay bounded (at most
// ~900 per decade) however many rows it sees.
func quantUs(v uint32) uint32 {
	if v < 1000 {
		return v
	}
	step := uint32(1)
	for x := v; x >= 1000; x /= 10 {
		step *= 10
	}
	return (v + step/2) / step * step
}

// rttDist is a samples-weighted distribution of per-interval RTT
// percentiles.
type rttDist struct {
	min, max, kernel uint32
	samples          uint64
	rows             int
	p50, p99         wdist
	// iter: the samples are the socket iterator's tcp_last_rtt_us.
	iter bool
}

// minNZ is the smaller of a and b, ignoring a zero a.
func minNZ(a, b uint32) uint32 {
	if a == 0 || b < a {
		return b
	}
	return a
}

// add adds row i of fb (rows without samples add only the kernel min).
// With iter (the run had the socket iterator, not tcp_probe), a row's
// tcp_last_rtt_us, the socket's latest RTT sample at the read, is one
// sample: its min, p50, p99 and max.
func (d *rttDist) add(fb *flowBatch, i int, iter bool) {
	if k := fb.opt[optMinRTT][i]; k > 0 && fb.has(optMinRTT, i) && (d.kernel == 0 || k < d.kernel) {
		d.kernel = k
	}
	w := fb.samples[i]
	if w == 0 && iter && fb.has(optLastRTT, i) && fb.opt[optLastRTT][i] > 0 {
		v := fb.opt[optLastRTT][i]
		d.rows++
		d.samples++
		d.iter = true
		d.p50.add(quantUs(v), 1)
		d.p99.add(quantUs(v), 1)
		d.min = minNZ(d.min, v)
		d.max = max(d.max, v)
		return
	}
	if w == 0 {
		return
	}
	d.rows++
	d.samples += w
	if fb.has(optRTTP50, i) {
		d.p50.add(quantUs(fb.opt[optRTTP50][i]), w)
	}
	if fb.has(optRTTP99, i) {
		d.p99.add(quantUs(fb.opt[optRTTP99][i]), w)
	}
	if v := fb.opt[optRTTMin][i]; fb.has(optRTTMin, i) && (d.min == 0 || v < d.min) {
		d.min = v
	}
	if v := fb.opt[optRTTMax][i]; fb.has(optRTTMax, i) && v > d.max {
		d.max = v
	}
}

// merge adds o into d.
func (d *rttDist) merge(o *rttDist) {
	if o.kernel > 0 && (d.kernel == 0 || o.kernel < d.kernel) {
		d.kernel = o.kernel
	}
	if o.rows == 0 {
		return
	}
	d.p50.merge(&o.p50)
	d.p99.merge(&o.p99)
	if o.min > 0 && (d.min == 0 || o.min < d.min) {
		d.min = o.min
	}
	d.max = max(d.max, o.max)
	d.iter = d.iter || o.iter
	d.samples += o.samples
	d.rows += o.rows
}

// summary returns the distribution's summary, or nil without samples.
func (d *rttDist) summary() *RTTSummary {
	if d.rows == 0 || d.p50.len() == 0 {
		return nil
	}
	return &RTTSummary{P50Us: d.p50.percentile(0.50), P99Us: d.p99.percentile(0.99),
		MinUs: d.min, MaxUs: d.max, KernelMinUs: d.kernel, Samples: d.samples, Rows: d.rows, FromIterator: d.iter}
}

// wdistInline is how many distinct values a wdist holds without a heap
// allocation.
const wdistInline = 12

// wdist is a weighted distribution: its distinct values ascending, each
// with its total weight. A flow sees few distinct (quantised) values: they
// live inline (iv, iw: no allocation, next to the flow's other figures in
// memory) until there are more than wdistInline, then in spill.
type wdist struct {
	n      int // values inline (0 once spilled)
	iv     [wdistInline]uint32
	iw     [wdistInline]uint64
	spills *wspill
}

// wspill holds a wdist's values once they no longer fit inline.
type wspill struct {
	vals []uint32
	ws   []uint64
}

// view returns the values and their weights.
func (d *wdist) view() ([]uint32, []uint64) {
	if d.spills != nil {
		return d.spills.vals, d.spills.ws
	}
	return d.iv[:d.n], d.iw[:d.n]
}

// add adds weight w to value v.
func (d *wdist) add(v uint32, w uint64) {
	if d.n > 0 || d.spills == nil {
		i := 0
		for i < d.n && d.iv[i] < v {
			i++
		}
		switch {
		case i < d.n && d.iv[i] == v:
			d.iw[i] += w
			return
		case d.n < wdistInline:
			copy(d.iv[i+1:d.n+1], d.iv[i:d.n])
			copy(d.iw[i+1:d.n+1], d.iw[i:d.n])
			d.iv[i], d.iw[i] = v, w
			d.n++
			return
		}
		d.spills = &wspill{slices.Clone(d.iv[:d.n]), slices.Clone(d.iw[:d.n])}
		d.n = 0
	}
	sp := d.spills
	i, found := slices.BinarySearch(sp.vals, v)
	if found {
		sp.ws[i] += w
		return
	}
	sp.vals = slices.Insert(sp.vals, i, v)
	sp.ws = slices.Insert(sp.ws, i, w)
}

// len returns the number of distinct values.
func (d *wdist) len() int {
	vals, _ := d.view()
	return len(vals)
}

// merge adds o's weights into d.
func (d *wdist) merge(o *wdist) {
	vals, ws := o.view()
	for i, v := range vals {
		d.add(v, ws[i])
	}
}

// percentile returns the smallest value whose cumulative weight (values
// ascending) reaches q × the total weight; 0 for no weight.
func (d *wdist) percentile(q float64) uint32 {
	vals, ws := d.view()
	var total uint64
	for _, w := range ws {
		total += w
	}
	target := q * float64(total)
	var cum uint64
	for i, v := range vals {
		cum += ws[i]
		if ws[i] > 0 && float64(cum) >= target {
			return v
		}
	}
	return 0
}

// histogram bins the per-interval p50 and p99 distributions into
// log-spaced bins (4 per doubling) from the smallest p50 (or min) to the
// largest p99 or max, so the axis reaches the tail.
func (d *rttDist) histogram() []HistBin {
	vals, ws := d.p50.view()
	if len(vals) == 0 {
		return nil
	}
	v99, w99 := d.p99.view()
	lo, hi := max(vals[0], 1), vals[len(vals)-1]
	if d.min > 0 {
		lo = max(min(lo, d.min), 1)
	}
	if len(v99) > 0 {
		hi = max(hi, v99[len(v99)-1])
	}
	hi = max(hi, d.max)
	edges := []uint32{lo}
	for e := float64(lo); uint32(e) <= hi; {
		e *= math.Pow(2, 0.25)
		if c := uint32(math.Ceil(e)); c > edges[len(edges)-1] {
			edges = append(edges, c)
		}
	}
	bins := make([]HistBin, len(edges)-1)
	for i := range bins {
		bins[i] = HistBin{LoUs: edges[i], HiUs: edges[i+1]}
	}
	find := func(v uint32) int { return sort.Search(len(bins), func(i int) bool { return bins[i].HiUs > v }) }
	for j, v := range vals {
		if i := find(v); i < len(bins) {
			bins[i].Samples += ws[j]
		}
	}
	for j, v := range v99 {
		if i := find(v); i < len(bins) {
			bins[i].P99Samples += w99[j]
		}
	}
	return bins
}
