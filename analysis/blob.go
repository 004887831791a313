package analysis

import (
	"time"
)

// BlobRow is a traffic.parquet row read with the blob columns that blob
// pull/push rows add (requests, http_503, http_500, http_other_errors).
// TCP generator rows, and traces written before the columns existed, read
// them as null: the storage-throttled rule is then skipped with "no blob
// rows".
type BlobRow struct {
	Time       time.Time `parquet:"time,timestamp(microsecond:utc)"`
	IntervalNs int64     `parquet:"interval_ns"`
	Stream     int32     `parquet:"stream"`
	Role       string    `parquet:"role"`
	AppBytes   uint64    `parquet:"app_bytes"`
	// Requests is HTTP attempts sent, HTTP503 those answered 503
	// (ServerBusy), HTTP500 those answered 500 and HTTPOtherErrors any
	// other failure, in the interval.
	Requests        *uint64 `parquet:"requests,optional"`
	HTTP503         *uint64 `parquet:"http_503,optional"`
	HTTP500         *uint64 `parquet:"http_500,optional"`
	HTTPOtherErrors *uint64 `parquet:"http_other_errors,optional"`
}

// BlobSummary is the HTTP outcome of blob streams over the run.
type BlobSummary struct {
	// Rows is the number of blob rows (http_503 not null); Requests,
	// HTTP503 and HTTPErrs (500 and other failures) are whole-run sums.
	Rows                        int
	Requests, HTTP503, HTTPErrs uint64
	// Intervals503 counts intervals with at least one 503 (of Intervals).
	Intervals503, Intervals int
	// RateWith503Bps and RateWithout503Bps are the median Primary rates
	// (bit/s) of intervals with and without 503s; 0 when there are none.
	RateWith503Bps, RateWithout503Bps float64
}

// blobAcc accumulates blob rows.
type blobAcc struct {
	sum      BlobSummary
	per503   map[int64]uint64
	hasBlobs bool
}

// add returns the batch function for BlobRow.
func (a *blobAcc) add(_ *builder) func([]BlobRow) error {
	return func(rows []BlobRow) error {
		for i := range rows {
			a.row(&rows[i])
		}
		return nil
	}
}

func (a *blobAcc) row(x *BlobRow) {
	if x.HTTP503 == nil {
		return
	}
	if a.per503 == nil {
		a.per503 = map[int64]uint64{}
	}
	a.hasBlobs = true
	a.sum.Rows++
	a.sum.HTTP503 += *x.HTTP503
	a.per503[x.Time.UnixNano()] += *x.HTTP503
	if x.Requests != nil {
		a.sum.Requests += *x.Requests
	}
	if x.HTTP500 != nil {
		a.sum.HTTPErrs += *x.HTTP500
	}
	if x.HTTPOtherErrors != nil {
		a.sum.HTTPErrs += *x.HTTPOtherErrors
	}
}

// finish sets Report.Blob with the rates of intervals with and without 503s.
func (a *blobAcc) finish(b *builder) {
	if !a.hasBlobs {
		return
	}
	s := a.sum
	s.Intervals = len(a.per503)
	var with, without []float64
	if p := b.r.Primary; p != nil {
		for _, pt := range p.Points {
			n, ok := a.per503[pt.End.UnixNano()]
			switch {
			case !ok:
			case n > 0:
				with = append(with, pt.RateBps())
			default:
				without = append(without, pt.RateBps())
			}
		}
	}
	for _, n := range a.per503 {
		if n > 0 {
			s.Intervals503++
		}
	}
	s.RateWith503Bps, s.RateWithout503Bps = median(with), median(without)
	b.r.Blob = &s
}
