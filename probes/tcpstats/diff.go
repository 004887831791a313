package tcpstats

import "math"

// Interval is one socket's activity between two reads.
type Interval struct {
	Samples     uint64
	RetransSegs uint64
	RetransFail uint64
	Hist        [Buckets]uint64
	// RTT of this interval's samples, µs; valid when Samples > 0. Min and
	// max are exact when the socket's all-time extreme falls in this
	// interval's extreme bucket, otherwise bucket bounds (8 µs below 1 ms,
	// 12.5% above).
	MinUs, P50Us, P99Us, MaxUs uint32
	// Last values at the end of the interval.
	SrttUs, SndCwnd, MinRttUs, Mss uint32
}

// Diff returns, for every socket that took an RTT sample or retransmitted
// since prev, what it did in between. A socket whose totals went backwards
// was evicted and re-created: its current totals are the delta.
func Diff(prev, cur map[Key]Sock) map[Key]Interval {
	out := map[Key]Interval{}
	for k, c := range cur {
		p := prev[k]
		if c.Samples < p.Samples || c.RetransSegs < p.RetransSegs || c.RetransFail < p.RetransFail {
			p = Sock{}
		}
		iv := Interval{
			Samples: c.Samples - p.Samples, RetransSegs: c.RetransSegs - p.RetransSegs,
			RetransFail: c.RetransFail - p.RetransFail,
			SrttUs:      c.SrttUs, SndCwnd: c.SndCwnd, MinRttUs: c.MinRttUs, Mss: c.Mss,
		}
		if iv.Samples == 0 && iv.RetransSegs == 0 && iv.RetransFail == 0 {
			continue
		}
		for i := range c.Hist {
			iv.Hist[i] = c.Hist[i] - min(p.Hist[i], c.Hist[i])
		}
		iv.fillRTT(c)
		out[k] = iv
	}
	return out
}

func (iv *Interval) fillRTT(c Sock) {
	minLow, minHigh, maxLow, maxHigh, ok := Range(&iv.Hist)
	if !ok {
		return
	}
	iv.MinUs = uint32(minLow)
	if m := uint64(c.MinUs); m >= minLow && m < minHigh {
		iv.MinUs = c.MinUs
	}
	iv.MaxUs = uint32(min(maxHigh-1, math.MaxUint32))
	if m := uint64(c.MaxUs); m >= maxLow && m < maxHigh {
		iv.MaxUs = c.MaxUs
	}
	p50, _ := Quantile(&iv.Hist, 0.50)
	p99, _ := Quantile(&iv.Hist, 0.99)
	iv.P50Us = clampRTT(p50, iv.MinUs, iv.MaxUs)
	iv.P99Us = clampRTT(p99, iv.MinUs, iv.MaxUs)
}

func clampRTT(v float64, lo, hi uint32) uint32 {
	r := uint32(math.Round(v))
	return min(max(r, lo), hi)
}
