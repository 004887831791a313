// Package osthread runs code on an OS thread of its own that ends with it,
// for changes Go cannot undo for the rest of the process: a thread moved
// into other namespaces (setns, unshare), given another CPU affinity.
package osthread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Disposable runs fn on a goroutine locked to an OS thread that is never
// unlocked, so the runtime ends the thread with the goroutine instead of
// giving it, changed, to other goroutines; it returns when fn has.
//
// Never on the process's main thread: the runtime cannot end that one and
// parks it for good instead, keeping fn's changes — and /proc/self, which
// shows the main thread, would then show fn's namespaces to the whole
// process. A goroutine that starts on the main thread holds it while
// another, which can then only run on another thread, runs fn.
func Disposable(fn func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			Disposable(fn)
			runtime.UnlockOSThread()
			close(done)
			return
		}
		defer close(done)
		fn()
	}()
	<-done
}
