package testbed_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the run if the tests leak goroutines or file descriptors
// (connections, listeners).
func TestMain(m *testing.M) {
	// Start the runtime's netpoller (epoll and event fds, kept for the life
	// of the process) before counting.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds, gs := countFDs(), runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if err := checkLeaks(fds, gs); err != nil {
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

// checkLeaks waits briefly for stragglers to exit, then compares.
func checkLeaks(fds, gs int) error {
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
