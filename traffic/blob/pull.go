package blob

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
)

// SinkDiscard is PullConfig.Sink for "read and drop".
const SinkDiscard = "discard"

// ReadBuffer is each pull worker's buffer: the most bytes read from a
// response body, and written to a sink file, per call. Small enough to
// stay in the CPU cache; large enough for few system calls.
const ReadBuffer = 256 << 10

// PullConfig says what to pull and where to put it.
type PullConfig struct {
	// Targets are blob URLs (see ParseTarget).
	Targets []Target
	// Shard treats Targets as replicas of one blob (same size): block i is
	// fetched from Targets[i mod n] and the sink receives one blob.
	// Without Shard every target is a blob of its own; all are pulled at
	// once with their blocks interleaved over the workers.
	Shard bool
	// Sink is SinkDiscard (or ""), a file (one blob, or a sharded pull),
	// or a directory (an existing one, or a path ending in '/'), where
	// each blob is written to DIR/CONTAINER/BLOB.
	Sink string
}

// PreparePull checks every target (one GetProperties each, counted like
// every other request), opens the sink files and plans the ranged GETs.
// Errors name the blob and the status: a *RequestError for the service's
// answers (403, 404 ContainerNotFound / BlobNotFound, no response), or a
// plain error for a bad sink or mismatched replicas.
func (c *Client) PreparePull(ctx context.Context, cfg PullConfig) (*Transfer, error) {
	if len(cfg.Targets) == 0 {
		return nil, errors.New("pull: no blob URL")
	}
	x := &Transfer{kind: KindPull, opts: c.opts}
	ok := false
	defer func() {
		if !ok {
			x.Close()
		}
	}()
	sizes := make([]int64, len(cfg.Targets))
	for i, t := range cfg.Targets {
		ep, err := c.open(t, &Counter{})
		if err != nil {
			return nil, err
		}
		x.eps = append(x.eps, ep)
		octx, op := withOp(ctx)
		props, err := ep.bb.GetProperties(octx, nil)
		if err != nil {
			return nil, newRequestError("get properties of", t, op, err)
		}
		if props.ContentLength == nil {
			return nil, fmt.Errorf("get properties of %s: no Content-Length in the answer", t.Display)
		}
		sizes[i], ep.etag = *props.ContentLength, props.ETag
	}
	if cfg.Shard {
		for i := range sizes {
			if sizes[i] != sizes[0] {
				return nil, fmt.Errorf("sharded pull needs replicas of one blob: %s has %d bytes, %s has %d",
					cfg.Targets[0].Display, sizes[0], cfg.Targets[i].Display, sizes[i])
			}
		}
	}
	outs, err := openSinks(cfg, sizes)
	if err != nil {
		return nil, err
	}
	for _, o := range outs {
		if o != nil {
			x.closers = append(x.closers, o.Close)
		}
	}
	x.plan(cfg.Shard, sizes)
	x.work = func(ctx context.Context, buf []byte, b block) error {
		var out io.WriterAt
		if outs[b.out] != nil {
			out = outs[b.out]
		}
		return getBlock(ctx, buf, b, out, c.opts.MaxRetries)
	}
	ok = true
	return x, nil
}

// plan lays out the ranged GETs.
func (x *Transfer) plan(shard bool, sizes []int64) {
	bs := x.opts.BlockSize
	if shard {
		for i, r := range ranges(sizes[0], bs) {
			x.blocks = append(x.blocks, block{ep: x.eps[i%len(x.eps)], out: 0, off: r[0], n: r[1]})
		}
		x.total = sizes[0]
		return
	}
	lists := make([][]block, len(x.eps))
	for i, ep := range x.eps {
		for _, r := range ranges(sizes[i], bs) {
			lists[i] = append(lists[i], block{ep: ep, out: i, off: r[0], n: r[1]})
		}
		x.total += sizes[i]
	}
	x.blocks = interleave(lists)
}

// getBlock fetches one range through buf and writes it to out (nil:
// discard) piece by piece as it arrives.
// Bytes are counted as they arrive. A body cut short is resumed by the
// SDK's retry reader (a new ranged GET, counted) up to retries times.
func getBlock(ctx context.Context, buf []byte, b block, out io.WriterAt, retries int) error {
	rng := httpRange(b.off, b.n)
	octx, op := withOp(ctx)
	opts := &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: b.off, Count: b.n}}
	if b.ep.etag != nil {
		opts.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: b.ep.etag}}
	}
	resp, err := b.ep.bb.DownloadStream(octx, opts)
	if err != nil {
		return newRequestError("get "+rng+" of", b.ep.t, op, err)
	}
	if resp.ContentLength != nil && *resp.ContentLength != b.n {
		resp.Body.Close()
		return fmt.Errorf("get %s of %s: the service sent %d bytes, want %d", rng, b.ep.t.Display, *resp.ContentLength, b.n)
	}
	body := io.ReadCloser(resp.Body)
	if retries > 0 {
		body = resp.NewRetryReader(octx, &blob.RetryReaderOptions{MaxRetries: int32(retries)})
	}
	defer body.Close()
	// Read into the worker's small buffer and pass each piece on at once:
	// the data stays in the CPU cache between the socket and the sink.
	var got int64
	for got < b.n {
		n, rerr := body.Read(buf[:min(int64(len(buf)), b.n-got)])
		if n > 0 {
			b.ep.cnt.AddBytes(n)
			if out != nil {
				if _, err := out.WriteAt(buf[:n], b.off+got); err != nil {
					return fmt.Errorf("write %s of %s to the sink: %w", rng, b.ep.t.Display, err)
				}
			}
			got += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return newRequestError("read "+rng+" of", b.ep.t, op, rerr)
		}
	}
	if got != b.n {
		return fmt.Errorf("get %s of %s: body ended after %d of %d bytes", rng, b.ep.t.Display, got, b.n)
	}
	return nil
}
