package tcpstats

import (
	"math"
	"testing"
)

// Every value falls inside the bounds of the bucket it maps to, buckets
// are contiguous, and resolution is what the docs promise.
func TestBucketsContiguousAndContaining(t *testing.T) {
	var prevHigh uint64
	for b := 0; b < Buckets; b++ {
		low, high := BucketBounds(b)
		if low != prevHigh {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", b, low, prevHigh)
		}
		prevHigh = high
		if low < 1024 && high-low != 8 {
			t.Fatalf("bucket %d width %d below 1 ms, want 8", b, high-low)
		}
		if low >= 1024 && float64(high-low)/float64(low) > 0.125+1e-12 {
			t.Fatalf("bucket %d relative width %.3f > 12.5%%", b, float64(high-low)/float64(low))
		}
	}
	if prevHigh != 1<<32 {
		t.Fatalf("last bucket ends at %d, want 2^32", prevHigh)
	}
	for _, us := range []uint32{0, 1, 7, 8, 50, 150, 1023, 1024, 1100, 2047, 2048, 20000, 1 << 31, math.MaxUint32} {
		b := BucketOf(us)
		low, high := BucketBounds(b)
		if uint64(us) < low || uint64(us) >= high {
			t.Errorf("%d µs -> bucket %d [%d,%d)", us, b, low, high)
		}
	}
	if BucketOf(50) == BucketOf(150) {
		t.Error("50 µs and 150 µs share a bucket")
	}
}

func TestQuantileAndRange(t *testing.T) {
	var h [Buckets]uint64
	// 90 samples at 100 µs (bucket [96,104)), 10 at 5000 µs.
	h[BucketOf(100)] = 90
	h[BucketOf(5000)] = 10
	p50, ok := Quantile(&h, 0.5)
	if !ok || p50 < 96 || p50 >= 104 {
		t.Fatalf("p50 = %v, want in [96,104)", p50)
	}
	p99, _ := Quantile(&h, 0.99)
	lo, hi := BucketBounds(BucketOf(5000))
	if p99 < float64(lo) || p99 > float64(hi) {
		t.Fatalf("p99 = %v, want in [%d,%d]", p99, lo, hi)
	}
	minLow, _, _, maxHigh, ok := Range(&h)
	if !ok || minLow != 96 || maxHigh != hi {
		t.Fatalf("range = %d..%d", minLow, maxHigh)
	}
	var empty [Buckets]uint64
	if _, ok := Quantile(&empty, 0.5); ok {
		t.Fatal("quantile of empty histogram reported ok")
	}
}

func TestDiffUsesExactExtremes(t *testing.T) {
	k := Key{Netns: 1, Family: 4}
	prev := map[Key]Sock{k: {Samples: 2, MinUs: 100, MaxUs: 100}}
	prev[k] = func(s Sock) Sock { s.Hist[BucketOf(100)] = 2; return s }(prev[k])
	cur := prev[k]
	cur.Samples = 5
	cur.MaxUs = 3000
	cur.Hist[BucketOf(3000)] += 3
	cur.RetransSegs = 4
	d := Diff(prev, map[Key]Sock{k: cur})
	iv, ok := d[k]
	if !ok {
		t.Fatal("socket missing from diff")
	}
	if iv.Samples != 3 || iv.RetransSegs != 4 {
		t.Fatalf("samples %d retrans %d", iv.Samples, iv.RetransSegs)
	}
	// The max is exact (the all-time max lies in this interval's top
	// bucket); the min is the bucket's low bound (the all-time min, 100 µs,
	// is from an earlier interval).
	lo, _ := BucketBounds(BucketOf(3000))
	if iv.MaxUs != 3000 || iv.MinUs != uint32(lo) {
		t.Fatalf("min %d max %d, want %d and 3000", iv.MinUs, iv.MaxUs, lo)
	}
	// An idle socket produces no interval.
	if d := Diff(map[Key]Sock{k: cur}, map[Key]Sock{k: cur}); len(d) != 0 {
		t.Fatalf("idle socket in diff: %v", d)
	}
}
