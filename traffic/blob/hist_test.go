package blob

import (
	"math/rand/v2"
	"sort"
	"testing"
)

func TestHistIndexRoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 123456, 1 << 40, 1<<64 - 1} {
		i := histIndex(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d out of range", v, i)
		}
		mid := histValue(i)
		if v < histSub && mid != v {
			t.Errorf("small value %d -> %d", v, mid)
		}
		// The midpoint is within 1/32 of the value (half a bucket).
		if v >= histSub {
			diff := float64(mid) - float64(v)
			if diff < 0 {
				diff = -diff
			}
			if diff/float64(v) > 1.0/16 {
				t.Errorf("%d -> bucket %d midpoint %d: %.1f%% off", v, i, mid, 100*diff/float64(v))
			}
		}
	}
}

func TestHistQuantiles(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 10000)
	for i := range vals {
		v := uint64(r.ExpFloat64() * 2000)
		vals[i] = float64(v)
		h.Record(v)
	}
	sort.Float64s(vals)
	before := h.Snapshot()
	for _, q := range []float64{0.5, 0.99} {
		got, ok := before.Quantile(q)
		want := vals[int(q*float64(len(vals)))-1]
		if !ok || float64(got) < want*0.93 || float64(got) > want*1.07 {
			t.Errorf("q%.2f = %d, want ~%.0f", q, got, want)
		}
	}
	h.Record(5)
	d := h.Snapshot().Sub(before)
	if d.Count() != 1 {
		t.Fatalf("delta has %d values, want 1", d.Count())
	}
	if v, ok := d.Quantile(0.99); !ok || v != 5 {
		t.Errorf("delta quantile %d", v)
	}
	if _, ok := HistSnapshot(nil).Quantile(0.5); ok {
		t.Error("empty histogram has a quantile")
	}
}

func TestRetryMapping(t *testing.T) {
	o := DefaultOptions()
	o.MaxRetries, o.RetryDelay = 0, 0
	r := o.retry()
	if r.MaxRetries != -1 || r.RetryDelay != -1 {
		t.Errorf("0 retries / 0 delay map to %d / %v; azcore needs -1 for none", r.MaxRetries, r.RetryDelay)
	}
	o.MaxRetries = 7
	if r := o.retry(); r.MaxRetries != 7 || r.MaxRetryDelay != DefaultMaxDelay {
		t.Errorf("retry options %+v", r)
	}
}

func TestFormatCodes(t *testing.T) {
	if got := FormatCodes(map[string]uint64{"ServerBusy": 3, "-": 1, "OperationTimedOut": 2}); got != "-=1;OperationTimedOut=2;ServerBusy=3" {
		t.Errorf("FormatCodes = %q", got)
	}
}
