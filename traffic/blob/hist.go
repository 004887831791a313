package blob

import (
	"math/bits"
	"sync/atomic"
)

// Histogram layout: values below histSub are exact; above, each power of
// two is split into histSub buckets (log-linear, ≤ 1/16 ≈ 6% wide).
const (
	histSubBits = 4
	histSub     = 1 << histSubBits
	// histBuckets covers every uint64 value.
	histBuckets = (64 - histSubBits + 1) * histSub
)

// Histogram is a lock-free log-linear histogram of cumulative counts
// (microseconds in this package). The zero value is ready to use.
type Histogram struct {
	b [histBuckets]atomic.Uint64
}

// histIndex returns v's bucket.
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1 // v>>shift is in [histSub, 2*histSub)
	return (shift+1)*histSub + int(v>>shift) - histSub
}

// histValue returns the midpoint of bucket i.
func histValue(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	lo := uint64(histSub+i%histSub) << shift
	return lo + (uint64(1)<<shift)/2
}

// Record adds one value.
func (h *Histogram) Record(v uint64) { h.b[histIndex(v)].Add(1) }

// Snapshot returns the cumulative counts.
func (h *Histogram) Snapshot() HistSnapshot {
	s := make(HistSnapshot, histBuckets)
	for i := range h.b {
		s[i] = h.b[i].Load()
	}
	return s
}

// HistSnapshot is a Histogram's counts at one moment; nil means empty.
type HistSnapshot []uint64

// Sub returns the counts added since prev (nil prev counts from zero).
func (s HistSnapshot) Sub(prev HistSnapshot) HistSnapshot {
	if s == nil {
		return nil
	}
	d := make(HistSnapshot, len(s))
	for i := range s {
		var p uint64
		if i < len(prev) {
			p = prev[i]
		}
		d[i] = s[i] - min(p, s[i])
	}
	return d
}

// Count returns the number of values.
func (s HistSnapshot) Count() uint64 {
	var n uint64
	for _, c := range s {
		n += c
	}
	return n
}

// Quantile returns the q-quantile (0 < q ≤ 1) as its bucket's midpoint,
// and false when there are no values.
func (s HistSnapshot) Quantile(q float64) (uint64, bool) {
	n := s.Count()
	if n == 0 {
		return 0, false
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range s {
		seen += c
		if seen >= rank {
			return histValue(i), true
		}
	}
	return histValue(len(s) - 1), true
}
