package testbed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/traffic/testbed/delayline"
)

// MaxDelay is the longest Options.Delay accepted.
const MaxDelay = delayline.MaxDelay

// createNetns creates each host's named namespace and records its handle
// and inode, calling hook(steps[i]) after the i-th, as build does.
func createNetns(hosts []*Host, steps []string) error {
	if err := ensureNetnsDir(); err != nil {
		return err
	}
	for i, h := range hosts {
		ns, err := createNamed(h.Name)
		if err != nil {
			return err
		}
		h.ns, h.created = ns, true
		if h.inode, err = nsInode(ns); err != nil {
			return err
		}
		if err := hook(steps[i]); err != nil {
			return err
		}
	}
	return nil
}

// buildDelayed is build for Options.Delay > 0: instead of a veth pair, a
// TUN device in each namespace (named Host.Link), both opened by this
// process, with a delayline.Line forwarding between them. The line belongs
// to the bed: Close stops it (closing the TUNs removes them).
func (b *Bed) buildDelayed(ctx context.Context, opt Options) error {
	if err := createNetns([]*Host{b.a, b.b}, []string{"netns-a", "netns-b"}); err != nil {
		return err
	}
	var tuns [2]*delayline.TUN
	started := false
	defer func() {
		if !started {
			for _, t := range tuns {
				if t != nil {
					_ = t.Close()
				}
			}
		}
	}()
	for i, h := range []*Host{b.a, b.b} {
		err := h.Do(func() error {
			var err error
			tuns[i], err = delayline.OpenTUN(h.Link)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	if err := hook("tun"); err != nil {
		return err
	}
	for _, h := range []*Host{b.a, b.b} {
		if err := h.configure(); err != nil {
			return err
		}
	}
	if err := hook("configured"); err != nil {
		return err
	}
	line, err := delayline.Start(context.Background(), tuns[0], tuns[1], delayline.Config{
		Delay: opt.Delay, MaxBytes: opt.DelayQueueBytes,
	})
	started = true // Start owns the TUNs now, also when it fails
	if err != nil {
		return err
	}
	b.line = line
	for _, h := range []*Host{b.a, b.b} {
		if err := h.waitCarrier(ctx); err != nil {
			return err
		}
	}
	return hook("up")
}

// waitCarrier polls until the link has carrier (IFF_LOWER_UP). A TUN's
// operstate stays "unknown", so waitUp's check does not apply.
func (h *Host) waitCarrier(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, linkUpTimeout)
	defer cancel()
	nh, err := h.Handle()
	if err != nil {
		return err
	}
	defer nh.Close()
	for {
		link, err := nh.LinkByIndex(h.ifindex)
		if err != nil {
			return fmt.Errorf("%s: get %s: %w", h.Name, h.Link, err)
		}
		if link.Attrs().RawFlags&unix.IFF_LOWER_UP != 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s has no carrier: %w", h.Name, h.Link, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// DelayStats returns the delay line's counters (A→B is AB) and true, or
// false for a bed without a delay line (Options.Delay zero).
func (b *Bed) DelayStats() (delayline.Stats, bool) {
	if b.line == nil {
		return delayline.Stats{}, false
	}
	return b.line.Stats(), true
}

// Delay returns the one-way delay of the bed's delay line, or 0.
func (b *Bed) Delay() time.Duration {
	if b.line == nil {
		return 0
	}
	return b.line.Delay()
}

func validateDelay(o Options) error {
	var errs []error
	if o.Delay < 0 || o.Delay > MaxDelay {
		errs = append(errs, fmt.Errorf("delay %v: must be 0..%v", o.Delay, MaxDelay))
	}
	if o.DelayQueueBytes < 0 || (o.DelayQueueBytes > 0 && o.DelayQueueBytes < delayline.MaxTUNFrame) {
		errs = append(errs, fmt.Errorf("delay queue %d bytes: must be 0 (default) or at least %d", o.DelayQueueBytes, delayline.MaxTUNFrame))
	}
	if o.DelayQueueBytes > 0 && o.Delay == 0 {
		errs = append(errs, errors.New("delay queue set without a delay"))
	}
	return errors.Join(errs...)
}
