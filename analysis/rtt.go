package analysis

import (
	"math"
	"sort"

	"github.com/netprof/netprof/trace"
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
	p50, p99         map[uint32]uint64
	min, max, kernel uint32
	samples          uint64
	rows             int
}

// add adds one flows row (rows without samples add only the kernel min).
func (d *rttDist) add(x *trace.FlowRow) {
	if x.MinRttUs != nil && *x.MinRttUs > 0 && (d.kernel == 0 || *x.MinRttUs < d.kernel) {
		d.kernel = *x.MinRttUs
	}
	if x.RTTSamples == 0 {
		return
	}
	if d.p50 == nil {
		d.p50, d.p99 = map[uint32]uint64{}, map[uint32]uint64{}
	}
	d.rows++
	d.samples += x.RTTSamples
	if x.RTTP50Us != nil {
		d.p50[quantUs(*x.RTTP50Us)] += x.RTTSamples
	}
	if x.RTTP99Us != nil {
		d.p99[quantUs(*x.RTTP99Us)] += x.RTTSamples
	}
	if x.RTTMinUs != nil && (d.min == 0 || *x.RTTMinUs < d.min) {
		d.min = *x.RTTMinUs
	}
	if x.RTTMaxUs != nil && *x.RTTMaxUs > d.max {
		d.max = *x.RTTMaxUs
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
	if d.p50 == nil {
		d.p50, d.p99 = map[uint32]uint64{}, map[uint32]uint64{}
	}
	for v, w := range o.p50 {
		d.p50[v] += w
	}
	for v, w := range o.p99 {
		d.p99[v] += w
	}
	if o.min > 0 && (d.min == 0 || o.min < d.min) {
		d.min = o.min
	}
	d.max = max(d.max, o.max)
	d.samples += o.samples
	d.rows += o.rows
}

// summary returns the distribution's summary, or nil without samples.
func (d *rttDist) summary() *RTTSummary {
	if d.rows == 0 || len(d.p50) == 0 {
		return nil
	}
	return &RTTSummary{P50Us: weightedPercentile(d.p50, 0.50), P99Us: weightedPercentile(d.p99, 0.99),
		MinUs: d.min, MaxUs: d.max, KernelMinUs: d.kernel, Samples: d.samples, Rows: d.rows}
}

// weightedPercentile returns the smallest value whose cumulative weight
// (values ascending) reaches q × the total weight; 0 for no weight.
func weightedPercentile(m map[uint32]uint64, q float64) uint32 {
	vals := make([]uint32, 0, len(m))
	var total uint64
	for v, w := range m {
		vals = append(vals, v)
		total += w
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	target := q * float64(total)
	var cum uint64
	for _, v := range vals {
		cum += m[v]
		if m[v] > 0 && float64(cum) >= target {
			return v
		}
	}
	return 0
}

// histogram bins the p50 distribution into log-spaced bins (4 per
// doubling) between its smallest and largest value.
func (d *rttDist) histogram() []HistBin {
	if len(d.p50) == 0 {
		return nil
	}
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for v := range d.p50 {
		lo, hi = min(lo, v), max(hi, v)
	}
	lo = max(lo, 1)
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
	for v, w := range d.p50 {
		i := sort.Search(len(bins), func(i int) bool { return bins[i].HiUs > v })
		if i < len(bins) {
			bins[i].Samples += w
		}
	}
	return bins
}
