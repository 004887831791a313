package blob

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Transfer kinds.
const (
	KindPull = "pull"
	KindPush = "push"
)

// TargetStats is one target's cumulative counts.
type TargetStats struct {
	// Index is the target's position in the transfer's URL list.
	Index  int
	Target Target
	Stats
}

// block is one unit of work: a ranged GET or a staged block.
type block struct {
	ep *endpoint
	// out is the sink file index (pull) or the block number (push).
	out int
	// off and n are the byte range within the blob.
	off, n int64
	// done is called after the block succeeded (push: commit the blob
	// when its last block is staged).
	done func(ctx context.Context) error
}

// Transfer is a prepared pull or push: its targets have been checked
// (GetProperties) and its blocks planned. Call Run once, then Close.
type Transfer struct {
	kind   string
	opts   Options
	eps    []*endpoint
	blocks []block
	total  int64
	// work moves one block; buf is the worker's own read buffer (pull).
	work func(ctx context.Context, buf []byte, b block) error
	// finish runs after every block succeeded (nil: nothing to do).
	finish func(ctx context.Context) error
	// closers run once, in Close.
	closers   []func() error
	ran       atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Kind returns KindPull or KindPush.
func (x *Transfer) Kind() string { return x.kind }

// Targets returns the targets in URL order.
func (x *Transfer) Targets() []Target {
	ts := make([]Target, len(x.eps))
	for i, ep := range x.eps {
		ts[i] = ep.t
	}
	return ts
}

// Prepared returns what preparing found out about each target, in URL
// order.
func (x *Transfer) Prepared() []Prep {
	ps := make([]Prep, len(x.eps))
	for i, ep := range x.eps {
		ps[i] = ep.prep
	}
	return ps
}

// CreatedContainers returns the URLs (without SAS) of the containers the
// push created because they did not exist, in URL order.
func (x *Transfer) CreatedContainers() []string {
	var out []string
	for _, ep := range x.eps {
		if ep.prep.CreatedContainer {
			u, err := ep.t.containerURL()
			if err != nil {
				continue
			}
			out = append(out, Redact(u))
		}
	}
	return out
}

// TotalBytes returns the payload bytes the transfer moves when it
// completes (over all targets).
func (x *Transfer) TotalBytes() int64 { return x.total }

// Blocks returns the number of ranged GETs or staged blocks planned.
func (x *Transfer) Blocks() int { return len(x.blocks) }

// Stats returns every target's cumulative counts, including the requests
// made while preparing. Safe to call concurrently with Run.
func (x *Transfer) Stats() []TargetStats {
	out := make([]TargetStats, len(x.eps))
	for i, ep := range x.eps {
		out[i] = TargetStats{Index: i, Target: ep.t, Stats: ep.cnt.Stats()}
	}
	return out
}

// Run moves every block with Options.Concurrency workers and returns nil
// when all succeeded. The first failure (after its retries) stops the
// others and is returned: a *RequestError naming the operation, blob and
// status. Run may be called once.
func (x *Transfer) Run(ctx context.Context) error {
	if x.ran.Swap(true) {
		return errors.New("transfer already run")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := min(x.opts.Concurrency, len(x.blocks))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			if x.kind == KindPull {
				buf = make([]byte, min(x.opts.BlockSize, ReadBuffer))
			}
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(x.blocks)) {
					return
				}
				if err := x.do(ctx, buf, x.blocks[i]); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if x.finish != nil {
		return x.finish(ctx)
	}
	return nil
}

func (x *Transfer) do(ctx context.Context, buf []byte, b block) error {
	if err := x.work(ctx, buf, b); err != nil {
		return err
	}
	if b.done != nil {
		return b.done(ctx)
	}
	return nil
}

// Close releases what the transfer holds (sink files). It is idempotent
// and returns the first close error.
func (x *Transfer) Close() error {
	x.closeOnce.Do(func() {
		var errs []error
		for _, c := range x.closers {
			errs = append(errs, c())
		}
		x.closeErr = errors.Join(errs...)
	})
	return x.closeErr
}

// interleave returns the blocks of every list, taking one from each list
// in turn, so that all targets are in flight at once.
func interleave(lists [][]block) []block {
	var n int
	for _, l := range lists {
		n += len(l)
	}
	out := make([]block, 0, n)
	for i := 0; len(out) < n; i++ {
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
			}
		}
	}
	return out
}

// ranges splits size bytes into blocks of bs bytes (the last may be
// shorter); a zero size gives no block.
func ranges(size, bs int64) [][2]int64 {
	var out [][2]int64
	for off := int64(0); off < size; off += bs {
		out = append(out, [2]int64{off, min(bs, size-off)})
	}
	return out
}

// numBlocks is ceil(size / bs).
func numBlocks(size, bs int64) int64 { return (size + bs - 1) / bs }

// httpRange formats a byte range as in x-ms-range.
func httpRange(off, n int64) string { return fmt.Sprintf("bytes=%d-%d", off, off+n-1) }
