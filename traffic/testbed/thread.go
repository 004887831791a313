package testbed

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// onThread runs fn on a fresh goroutine locked to its OS thread and waits for
// it. fn may switch the thread's network namespace (setns, unshare); afterwards
// the thread is moved back to the namespace it started in. If that fails, the
// goroutine exits with the thread still locked, so the Go runtime terminates
// the thread instead of reusing it in the wrong namespace.
//
// Running on a separate goroutine keeps the caller's own thread untouched
// whatever happens. A panic in fn is re-raised in the caller after the thread
// was restored.
func onThread(fn func() error) error {
	type result struct {
		err      error
		panicked bool
		panicVal any
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() { done <- res }()

		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			// Nothing was switched yet: the thread is clean.
			runtime.UnlockOSThread()
			res.err = fmt.Errorf("get current netns: %w", err)
			return
		}
		defer func() {
			if err := netns.Set(orig); err != nil {
				// Keep the thread locked: it dies with this goroutine.
				res.err = errors.Join(res.err, fmt.Errorf("restore netns: %w", err))
				_ = orig.Close()
				return
			}
			_ = orig.Close()
			runtime.UnlockOSThread()
		}()
		defer func() {
			if p := recover(); p != nil {
				res.panicked, res.panicVal = true, p
			}
		}()
		res.err = fn()
	}()
	res := <-done
	if res.panicked {
		panic(res.panicVal)
	}
	return res.err
}

// inNetns runs fn on a locked thread switched into ns (see onThread).
func inNetns(ns netns.NsHandle, fn func() error) error {
	return onThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		return fn()
	})
}
