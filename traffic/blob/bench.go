package blob

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// BenchConfig is a self-contained benchmark, like `azcopy bench`: it
// creates Count test blobs of Size bytes under a unique prefix in a
// container, measures a pull or a push, and deletes what it created.
type BenchConfig struct {
	// Container is a container URL, optionally with a name prefix.
	Container Target
	// Mode is KindPull (blobs are pushed first, unmeasured, then pulled
	// to SinkDiscard) or KindPush (the push is measured).
	Mode  string
	Count int
	Size  int64
}

// Bench is a prepared benchmark. Measure is the transfer to record;
// Cleanup removes the test blobs (and the container, if the bench made
// it).
type Bench struct {
	// Measure is the transfer to Run and record.
	Measure *Transfer
	// Setup is the unmeasured push of a pull bench (nil for push); its
	// counts are kept for the summary.
	Setup *Transfer

	c        *Client
	ct       Target
	cc       *container.Client
	created  bool
	targets  []Target
	prefixed string
}

// PrepareBench creates the container when it does not exist, and for a
// pull bench pushes the test blobs; it returns the prepared measurement.
// On error it removes what it created.
func (c *Client) PrepareBench(ctx context.Context, cfg BenchConfig) (*Bench, error) {
	if cfg.Mode != KindPull && cfg.Mode != KindPush {
		return nil, fmt.Errorf("bench mode %q: want pull or push", cfg.Mode)
	}
	if cfg.Count < 1 || cfg.Size < 1 {
		return nil, fmt.Errorf("bench needs at least one blob of at least one byte (count %d, size %d)", cfg.Count, cfg.Size)
	}
	cc, err := c.ContainerClient(cfg.Container, &Counter{})
	if err != nil {
		return nil, err
	}
	b := &Bench{c: c, ct: cfg.Container, cc: cc}
	b.prefixed = path.Join(cfg.Container.Blob, fmt.Sprintf("netprof-bench-%016x", rand.Uint64()))
	octx, op := withOp(ctx)
	if _, err := cc.GetProperties(octx, nil); IsCode(err, "ContainerNotFound") {
		octx, op = withOp(ctx)
		if _, err := cc.Create(octx, nil); err != nil && !IsCode(err, "ContainerAlreadyExists") {
			return nil, newRequestError("create container", cfg.Container, op, err)
		}
		b.created = true
		c.opts.log().Info("bench created its container; it is deleted at the end", "url", cfg.Container.Display)
	} else if err != nil {
		return nil, newRequestError("get properties of container", cfg.Container, op, err)
	}
	ok := false
	defer func() {
		if !ok {
			b.Cleanup(context.WithoutCancel(ctx)) //nolint:errcheck // already failing
		}
	}()
	for i := range cfg.Count {
		t, err := cfg.Container.BlobURL(fmt.Sprintf("%s/blob-%04d", b.prefixed, i))
		if err != nil {
			return nil, err
		}
		b.targets = append(b.targets, t)
	}
	push := PushConfig{Targets: b.targets, Size: cfg.Size}
	if cfg.Mode == KindPush {
		if b.Measure, err = c.PreparePush(ctx, push); err != nil {
			return nil, err
		}
		ok = true
		return b, nil
	}
	if b.Setup, err = c.PreparePush(ctx, push); err != nil {
		return nil, err
	}
	if err := b.Setup.Run(ctx); err != nil {
		return nil, fmt.Errorf("bench setup: %w", err)
	}
	if b.Measure, err = c.PreparePull(ctx, PullConfig{Targets: b.targets, Sink: SinkDiscard}); err != nil {
		return nil, err
	}
	ok = true
	return b, nil
}

// Prefix returns the blob-name prefix of the test blobs.
func (b *Bench) Prefix() string { return b.prefixed }

// Cleanup deletes the test blobs (a missing one is fine) and, when the
// bench created the container, the container. It returns every failure
// joined.
func (b *Bench) Cleanup(ctx context.Context) error {
	var errs []error
	for _, x := range []*Transfer{b.Measure, b.Setup} {
		if x != nil {
			errs = append(errs, x.Close())
		}
	}
	if b.created {
		octx, op := withOp(ctx)
		if _, err := b.cc.Delete(octx, nil); err != nil {
			errs = append(errs, newRequestError("delete container", b.ct, op, err))
		}
		return errors.Join(errs...)
	}
	for _, t := range b.targets {
		ep, err := b.c.open(t, &Counter{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		octx, op := withOp(ctx)
		if _, err := ep.bb.Delete(octx, nil); err != nil && !IsCode(err, "BlobNotFound") {
			errs = append(errs, newRequestError("delete", t, op, err))
		}
	}
	return errors.Join(errs...)
}
