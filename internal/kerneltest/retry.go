package kerneltest

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// A test whose setup can be disturbed by other load on the machine (an
// interface that never goes quiet, a scheduler that runs the test's
// goroutines late) says so with Disturbed, naming what it measured. Inside
// Retry that ends the attempt, logs the reason and runs the attempt once
// more from scratch; a second disturbance fails the test. Outside Retry a
// disturbance fails the test at once. Nothing here ever skips: a retry is
// logged, a failure of what the test checks fails on the first attempt.

// disturbance is what Disturbed panics with inside a Retry attempt.
type disturbance struct{ reason string }

var (
	attemptsMu sync.Mutex
	attempts   = map[testing.TB]*disturbance{} // t of each running attempt
)

// Retry runs attempt as subtest "try1" of t. When the attempt calls
// Disturbed, its own cleanups run, the reason is logged and attempt runs
// again as "try2"; if that one is disturbed too, t fails with both
// reasons. The attempt must call Disturbed from its own goroutine (as with
// t.FailNow).
func Retry(t *testing.T, attempt func(t *testing.T)) {
	t.Helper()
	var reasons []string
	for try := 1; try <= 2; try++ {
		var got *disturbance
		t.Run(fmt.Sprintf("try%d", try), func(t *testing.T) {
			attemptsMu.Lock()
			attempts[t] = nil
			attemptsMu.Unlock()
			defer func() {
				attemptsMu.Lock()
				delete(attempts, t)
				attemptsMu.Unlock()
				if r := recover(); r != nil {
					d, ok := r.(*disturbance)
					if !ok {
						panic(r)
					}
					got = d
				}
			}()
			attempt(t)
		})
		if got == nil {
			return
		}
		reasons = append(reasons, got.reason)
		if try == 1 {
			t.Logf("try 1: setup disturbed by other load (%s): trying once more", got.reason)
		}
	}
	t.Fatalf("setup disturbed by other load twice: try 1: %s; try 2: %s", reasons[0], reasons[1])
}

// Disturbed reports that t's setup was disturbed by other load on the
// machine, with what was measured. Inside a Retry attempt it ends the
// attempt (to be retried once); elsewhere it fails t. Call it from t's
// goroutine.
func Disturbed(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	attemptsMu.Lock()
	_, inRetry := attempts[t]
	attemptsMu.Unlock()
	if !inRetry {
		t.Fatalf("setup disturbed by other load: %s", reason)
	}
	t.Logf("setup disturbed by other load: %s", reason)
	panic(&disturbance{reason: reason})
}

// Lag measures how late the Go scheduler runs a goroutine that sleeps
// period at a time: the largest lateness seen between Start and Check. A
// machine whose other load keeps the test off the CPU for much longer than
// a scheduler slice disturbs tests that compare timings.
type Lag struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	max  time.Duration
	at   time.Time
}

// StartLag starts measuring scheduling lateness in steps of period; t's
// cleanup stops it.
func StartLag(t testing.TB, period time.Duration) *Lag {
	l := &Lag{stop: make(chan struct{}), done: make(chan struct{})}
	go l.run(period)
	t.Cleanup(l.Stop)
	return l
}

func (l *Lag) run(period time.Duration) {
	defer close(l.done)
	tk := time.NewTimer(period)
	defer tk.Stop()
	want := time.Now().Add(period)
	for {
		select {
		case <-l.stop:
			return
		case <-tk.C:
			// Not the channel's value: that is when the timer was due.
			now := time.Now()
			if late := now.Sub(want); late > 0 {
				l.mu.Lock()
				if late > l.max {
					l.max, l.at = late, now
				}
				l.mu.Unlock()
			}
			want = now.Add(period)
			tk.Reset(period)
		}
	}
}

// Stop ends the measurement; it may be called more than once.
func (l *Lag) Stop() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// Max returns the largest lateness seen so far and when it ended.
func (l *Lag) Max() (time.Duration, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max, l.at
}

// Check calls Disturbed when a wake-up came more than limit late.
func (l *Lag) Check(t testing.TB, limit time.Duration) {
	t.Helper()
	late, at := l.Max()
	t.Logf("scheduling lateness so far: at most %v (limit %v)", late.Round(time.Microsecond), limit)
	if late > limit {
		Disturbed(t, "a goroutine sleeping in steps ran %v late at %s (limit %v)", late.Round(time.Millisecond), at.Format("15:04:05.000"), limit)
	}
}
