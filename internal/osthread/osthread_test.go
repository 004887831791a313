package osthread

import (
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fn never runs on the main thread, and the threads it changed are gone:
// many calls at once change their thread's niceness (a per-thread
// attribute on Linux) and the main thread keeps its own.
func TestDisposableNeverMainThread(t *testing.T) {
	mainNice, err := unix.Getpriority(unix.PRIO_PROCESS, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var onMain int
	for range 64 {
		wg.Go(func() {
			Disposable(func() {
				if unix.Gettid() == unix.Getpid() {
					mu.Lock()
					onMain++
					mu.Unlock()
				}
				_ = unix.Setpriority(unix.PRIO_PROCESS, 0, 5) // this thread only
			})
		})
	}
	wg.Wait()
	if onMain != 0 {
		t.Errorf("fn ran on the main thread %d times", onMain)
	}
	if n, err := unix.Getpriority(unix.PRIO_PROCESS, os.Getpid()); err != nil || n != mainNice {
		t.Errorf("main thread's priority %d (%v), was %d: a changed thread was the main one", n, err, mainNice)
	}
}
