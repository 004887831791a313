package blob

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Counter is an azcore pipeline policy that counts every HTTP attempt.
// Placed in ClientOptions.PerRetryPolicies it runs inside the retry loop,
// once per try: a request the retry policy sends four times is counted
// four times (one request and three retries).
//
// An attempt is counted when it ends: by status class (2xx, 503, 500,
// other; an attempt without a response, e.g. connection refused, counts
// as other), with its latency to response headers and, for a 503, its
// x-ms-error-code. Attempts aborted because the caller cancelled the
// context (context.Canceled) are not counted; a per-try timeout is.
//
// A probe's expected answer is not a failure: when the call declared the
// status and x-ms-error-code it expects (push's existence check of a new
// blob, 404 BlobNotFound or ContainerNotFound; its container create, 409
// ContainerAlreadyExists), an attempt answered so is counted in Expected
// only, not in Requests, HTTPOther or the latencies.
// Counts are cumulative; Stats is safe to call at any time.
type Counter struct {
	requests, s2xx, s503, s500, other, retries, expected atomic.Uint64
	// bytes is payload moved (added by the transfer, not the policy).
	bytes   atomic.Uint64
	latency Histogram

	mu    sync.Mutex
	codes map[string]uint64
}

// tries is per-operation state shared by the attempts of one SDK call:
// the retry policy's clones share the request's operation values.
type tries struct{ n int }

// opKey carries an *opStats through a call's context.
type opKey struct{}

// opStats is filled by the policy for one call of this package: the
// number of attempts it took (for error messages). expect lists the
// answers that are not failures of a probe (see withProbe).
type opStats struct {
	attempts atomic.Int32
	expect   []answer
}

// answer is an HTTP status with its x-ms-error-code.
type answer struct {
	Status int
	Code   string
}

// Answers a push's probes expect.
var (
	answerBlobNotFound      = answer{http.StatusNotFound, "BlobNotFound"}
	answerContainerNotFound = answer{http.StatusNotFound, "ContainerNotFound"}
	answerContainerExists   = answer{http.StatusConflict, "ContainerAlreadyExists"}
)

func withOp(ctx context.Context) (context.Context, *opStats) { return withProbe(ctx) }

// withProbe is withOp for a call whose answers in expect are outcomes the
// caller acts on, not errors: the Counter counts them as Expected.
func withProbe(ctx context.Context, expect ...answer) (context.Context, *opStats) {
	op := &opStats{expect: expect}
	return context.WithValue(ctx, opKey{}, op), op
}

// expects reports whether resp is one of op's expected answers.
func (op *opStats) expects(resp *http.Response) bool {
	if op == nil || resp == nil {
		return false
	}
	for _, a := range op.expect {
		if resp.StatusCode == a.Status && resp.Header.Get("x-ms-error-code") == a.Code {
			return true
		}
	}
	return false
}

// Do implements policy.Policy.
func (c *Counter) Do(req *policy.Request) (*http.Response, error) {
	var st *tries
	if !req.OperationValue(&st) || st == nil {
		st = &tries{}
		req.SetOperationValue(st)
	}
	st.n++
	ctx := req.Raw().Context()
	op, _ := ctx.Value(opKey{}).(*opStats)
	if op != nil {
		op.attempts.Add(1)
	}
	start := time.Now()
	resp, err := req.Next()
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return resp, err
	}
	if err == nil && op.expects(resp) {
		c.expected.Add(1)
		return resp, err
	}
	c.requests.Add(1)
	if st.n > 1 {
		c.retries.Add(1)
	}
	if err != nil || resp == nil {
		c.other.Add(1)
		return resp, err
	}
	c.latency.Record(uint64(time.Since(start).Microseconds()))
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		c.s2xx.Add(1)
	case s == http.StatusServiceUnavailable:
		c.s503.Add(1)
		code := resp.Header.Get("x-ms-error-code")
		if code == "" {
			code = "-"
		}
		c.mu.Lock()
		if c.codes == nil {
			c.codes = map[string]uint64{}
		}
		c.codes[code]++
		c.mu.Unlock()
	case s == http.StatusInternalServerError:
		c.s500.Add(1)
	default:
		c.other.Add(1)
	}
	return resp, err
}

// AddBytes adds n payload bytes moved.
func (c *Counter) AddBytes(n int) { c.bytes.Add(uint64(n)) }

// Stats are a Counter's cumulative counts at one moment.
type Stats struct {
	// Bytes is payload moved: bytes read from GET bodies (pull), or the
	// bytes of blocks staged successfully (push).
	Bytes    uint64
	Requests uint64
	HTTP2xx  uint64
	HTTP503  uint64
	HTTP500  uint64
	// HTTPOther is any other status, or no response.
	HTTPOther uint64
	// Retries counts attempts after the first of one SDK call.
	Retries uint64
	// Expected counts probe attempts answered as the probe expected (a
	// push's existence check of a new blob or container: 404 BlobNotFound
	// or ContainerNotFound; its container create: 409
	// ContainerAlreadyExists). They are answers, not failures, and are not
	// in Requests (nor in any other count).
	Expected uint64
	// Latency holds latencies to response headers, in µs.
	Latency HistSnapshot
	// Codes503 counts 503 responses per x-ms-error-code ("-": none).
	Codes503 map[string]uint64
}

// Stats returns the cumulative counts.
func (c *Counter) Stats() Stats {
	s := Stats{
		Bytes: c.bytes.Load(), Requests: c.requests.Load(), HTTP2xx: c.s2xx.Load(),
		HTTP503: c.s503.Load(), HTTP500: c.s500.Load(), HTTPOther: c.other.Load(),
		Retries: c.retries.Load(), Expected: c.expected.Load(), Latency: c.latency.Snapshot(),
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.codes) > 0 {
		s.Codes503 = make(map[string]uint64, len(c.codes))
		for k, v := range c.codes {
			s.Codes503[k] = v
		}
	}
	return s
}

// Sub returns the counts added since prev (a zero prev counts from zero).
func (s Stats) Sub(prev Stats) Stats {
	d := Stats{
		Bytes: sub(s.Bytes, prev.Bytes), Requests: sub(s.Requests, prev.Requests),
		HTTP2xx: sub(s.HTTP2xx, prev.HTTP2xx), HTTP503: sub(s.HTTP503, prev.HTTP503),
		HTTP500: sub(s.HTTP500, prev.HTTP500), HTTPOther: sub(s.HTTPOther, prev.HTTPOther),
		Retries: sub(s.Retries, prev.Retries), Expected: sub(s.Expected, prev.Expected),
		Latency: s.Latency.Sub(prev.Latency),
	}
	for k, v := range s.Codes503 {
		if n := sub(v, prev.Codes503[k]); n > 0 {
			if d.Codes503 == nil {
				d.Codes503 = map[string]uint64{}
			}
			d.Codes503[k] = n
		}
	}
	return d
}

// Add returns the sum of two Stats.
func (s Stats) Add(o Stats) Stats {
	r := Stats{
		Bytes: s.Bytes + o.Bytes, Requests: s.Requests + o.Requests, HTTP2xx: s.HTTP2xx + o.HTTP2xx,
		HTTP503: s.HTTP503 + o.HTTP503, HTTP500: s.HTTP500 + o.HTTP500,
		HTTPOther: s.HTTPOther + o.HTTPOther, Retries: s.Retries + o.Retries, Expected: s.Expected + o.Expected,
	}
	if s.Latency != nil || o.Latency != nil {
		r.Latency = make(HistSnapshot, histBuckets)
		for i := range r.Latency {
			if i < len(s.Latency) {
				r.Latency[i] += s.Latency[i]
			}
			if i < len(o.Latency) {
				r.Latency[i] += o.Latency[i]
			}
		}
	}
	for _, m := range []map[string]uint64{s.Codes503, o.Codes503} {
		for k, v := range m {
			if r.Codes503 == nil {
				r.Codes503 = map[string]uint64{}
			}
			r.Codes503[k] += v
		}
	}
	return r
}

func sub(a, b uint64) uint64 { return a - min(a, b) }

// FormatCodes renders 503 error-code counts as "Code=N;Code=N", sorted by
// code; "" for none.
func FormatCodes(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ";")
}
