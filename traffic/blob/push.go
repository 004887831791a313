package blob

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
)

// PushConfig says what to push where.
type PushConfig struct {
	// Targets are blob URLs; each receives the whole source.
	Targets []Target
	// File is the source file; when empty, Size bytes of Synthetic data
	// are pushed.
	File string
	Size int64
	// DeleteAfter deletes each blob once it is committed.
	DeleteAfter bool
}

// PreparePush checks every target (one GetProperties each: a missing blob
// is fine, refused credentials are not), creates a target's container
// when it does not exist (like azcopy; a concurrent creator's 409
// ContainerAlreadyExists is fine), opens the source and plans the blocks:
// Put Block of Options.BlockSize bytes each, then one Put Block List per
// blob when its last block is staged. Staged blocks and the commit are
// idempotent, so retries never store data twice. A blob holds at most
// MaxBlocks blocks. The existence check's 404 (new blob or container) and
// the create's 409 are expected answers: counted in Stats.Expected, not
// as requests or HTTP errors of the transfer.
func (c *Client) PreparePush(ctx context.Context, cfg PushConfig) (*Transfer, error) {
	if len(cfg.Targets) == 0 {
		return nil, errors.New("push: no blob URL")
	}
	x := &Transfer{kind: KindPush, opts: c.opts}
	ok := false
	defer func() {
		if !ok {
			x.Close()
		}
	}()
	src, size, err := x.openSource(cfg)
	if err != nil {
		return nil, err
	}
	if nb := numBlocks(size, c.opts.BlockSize); nb > MaxBlocks {
		return nil, fmt.Errorf("push: %d bytes in blocks of %d make %d blocks; a block blob holds at most %d: raise --block-size to at least %d",
			size, c.opts.BlockSize, nb, MaxBlocks, (size+MaxBlocks-1)/MaxBlocks)
	}
	for _, t := range cfg.Targets {
		ep, err := c.open(t, &Counter{})
		if err != nil {
			return nil, err
		}
		x.eps = append(x.eps, ep)
		octx, op := withProbe(ctx, answerBlobNotFound, answerContainerNotFound)
		_, err = ep.bb.GetProperties(octx, nil)
		switch {
		case err == nil:
			ep.prep.BlobExisted = true
			c.opts.log().Warn("blob exists; the push replaces it", "url", t.Display)
		case IsCode(err, "BlobNotFound"):
		case IsCode(err, "ContainerNotFound"):
			if ep.prep.CreatedContainer, err = c.createContainer(ctx, t, ep.cnt); err != nil {
				return nil, err
			}
		default:
			return nil, newRequestError("get properties of", t, op, err)
		}
	}
	ids := blockIDs(rand.Uint64(), numBlocks(size, c.opts.BlockSize))
	lists := make([][]block, len(x.eps))
	for i, ep := range x.eps {
		var left atomic.Int64
		left.Store(int64(len(ids)))
		done := func(ctx context.Context) error {
			if left.Add(-1) != 0 {
				return nil
			}
			return commit(ctx, ep, ids, cfg.DeleteAfter)
		}
		for k, r := range ranges(size, c.opts.BlockSize) {
			lists[i] = append(lists[i], block{ep: ep, out: k, off: r[0], n: r[1], done: done})
		}
		x.total += size
	}
	x.blocks = interleave(lists)
	x.work = func(ctx context.Context, _ []byte, b block) error {
		octx, op := withOp(ctx)
		body := streaming.NopCloser(io.NewSectionReader(src, b.off, b.n))
		if _, err := b.ep.bb.StageBlock(octx, ids[b.out], body, nil); err != nil {
			return newRequestError(fmt.Sprintf("put block %d (%s) of", b.out, httpRange(b.off, b.n)), b.ep.t, op, err)
		}
		b.ep.cnt.AddBytes(int(b.n))
		return nil
	}
	ok = true
	return x, nil
}

// openSource returns the file or synthetic source and its size.
func (x *Transfer) openSource(cfg PushConfig) (io.ReaderAt, int64, error) {
	if cfg.File == "" {
		if cfg.Size <= 0 {
			return nil, 0, fmt.Errorf("push: size %d: must be positive", cfg.Size)
		}
		return Synthetic{Size: cfg.Size}, cfg.Size, nil
	}
	f, err := os.Open(cfg.File)
	if err != nil {
		return nil, 0, fmt.Errorf("push: %w", err)
	}
	x.closers = append(x.closers, f.Close)
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("push: %w", err)
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		return nil, 0, fmt.Errorf("push: %s is not a non-empty regular file", cfg.File)
	}
	return f, st.Size(), nil
}

// blockIDs returns n block IDs, all of one length (as the service
// requires), unique to this push by nonce.
func blockIDs(nonce uint64, n int64) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "netprof-%016x-%08d", nonce, i))
	}
	return ids
}

// commit writes ep's block list and, with del, deletes the blob again.
func commit(ctx context.Context, ep *endpoint, ids []string, del bool) error {
	octx, op := withOp(ctx)
	if _, err := ep.bb.CommitBlockList(octx, ids, nil); err != nil {
		return newRequestError(fmt.Sprintf("put block list (%d blocks) of", len(ids)), ep.t, op, err)
	}
	if !del {
		return nil
	}
	octx, op = withOp(ctx)
	if _, err := ep.bb.Delete(octx, nil); err != nil {
		return newRequestError("delete", ep.t, op, err)
	}
	return nil
}

// createContainer creates blob target t's container, counting into cnt.
// It returns false when another client created it first (409
// ContainerAlreadyExists).
func (c *Client) createContainer(ctx context.Context, t Target, cnt *Counter) (bool, error) {
	ct := t
	if u, err := t.containerURL(); err == nil {
		ct.Display, ct.Blob = Redact(u), ""
	}
	cc, err := c.ContainerClient(t, cnt)
	if err != nil {
		return false, err
	}
	octx, op := withProbe(ctx, answerContainerExists)
	_, err = cc.Create(octx, nil)
	switch {
	case IsCode(err, "ContainerAlreadyExists"):
		return false, nil
	case err != nil:
		return false, newRequestError("create the missing container", ct, op, err)
	}
	c.opts.log().Info("created the container: it did not exist", "url", ct.Display)
	return true, nil
}
