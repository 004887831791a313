// Package leakcheck fails a test binary that leaks file descriptors or
// goroutines: call Main from a package's TestMain.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// Main runs the tests and exits. When they pass but more file descriptors
// or goroutines exist afterwards than before (after waiting up to 1 s for
// stragglers), it prints the counts and exits 1.
func Main(m *testing.M) {
	// Start the runtime's netpoller (epoll and event fds, kept for the
	// life of the process) before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds, gs := countFDs(), runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if err := check(fds, gs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// check waits briefly for stragglers to exit, then compares.
func check(fds, gs int) error {
	var nf, ng int
	for range 50 {
		nf, ng = countFDs(), runtime.NumGoroutine()
		if nf <= fds && ng <= gs {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("leak: %d file descriptors (was %d), %d goroutines (was %d)", nf, fds, ng, gs)
}
