package tcpstats

import "math"

// Histogram layout, mirroring bpf/netprof.h: 128 linear buckets of 8 µs
// below 1024 µs, then each power of two from 2^10 to 2^31 µs split into 8.
const (
	linearShift   = 3
	linearBuckets = 128
	logFirst      = 10
	subBits       = 3
	// Buckets is the number of RTT histogram buckets.
	Buckets = linearBuckets + (32-logFirst)<<subBits
)

// BucketOf returns the bucket index of a value in µs (as the kernel bins it).
func BucketOf(us uint32) int {
	if us < linearBuckets<<linearShift {
		return int(us >> linearShift)
	}
	msb := 31 - leadingZeros(us)
	sub := (us >> (msb - subBits)) & (1<<subBits - 1)
	return linearBuckets + int(msb-logFirst)<<subBits + int(sub)
}

func leadingZeros(v uint32) uint32 {
	n := uint32(0)
	for v&0x80000000 == 0 && n < 32 {
		v <<= 1
		n++
	}
	return n
}

// BucketBounds returns the [low, high) range of bucket b in µs.
func BucketBounds(b int) (low, high uint64) {
	if b < linearBuckets {
		return uint64(b) << linearShift, uint64(b+1) << linearShift
	}
	i := b - linearBuckets
	msb := uint(logFirst + i>>subBits)
	width := uint64(1) << (msb - subBits)
	low = uint64(1)<<msb + uint64(i&(1<<subBits-1))*width
	return low, low + width
}

// Quantile returns the q-quantile (0..1) of a histogram in µs, linearly
// interpolated inside its bucket, and false when the histogram is empty.
func Quantile(h *[Buckets]uint64, q float64) (float64, bool) {
	var total uint64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return 0, false
	}
	rank := q * float64(total)
	var cum uint64
	for b, c := range h {
		if c == 0 {
			continue
		}
		if float64(cum+c) >= rank {
			low, high := BucketBounds(b)
			frac := (rank - float64(cum)) / float64(c)
			frac = math.Min(math.Max(frac, 0), 1)
			return float64(low) + frac*float64(high-low), true
		}
		cum += c
	}
	_, high := BucketBounds(Buckets - 1)
	return float64(high), true
}

// Range returns the lowest and highest occupied bucket bounds in µs: the
// interval's minimum lies in [minLow, minHigh) and its maximum in
// [maxLow, maxHigh). ok is false for an empty histogram.
func Range(h *[Buckets]uint64) (minLow, minHigh, maxLow, maxHigh uint64, ok bool) {
	first, last := -1, -1
	for b, c := range h {
		if c != 0 {
			if first < 0 {
				first = b
			}
			last = b
		}
	}
	if first < 0 {
		return 0, 0, 0, 0, false
	}
	minLow, minHigh = BucketBounds(first)
	maxLow, maxHigh = BucketBounds(last)
	return minLow, minHigh, maxLow, maxHigh, true
}
