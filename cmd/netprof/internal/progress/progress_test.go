package progress

import (
	"strings"
	"testing"
	"time"
)

// Without a terminal, progress is a plain line (no control characters)
// with elapsed and remaining time, at most every Interval.
func TestPlain(t *testing.T) {
	var w strings.Builder
	b := New("probing", 10, false, &w)
	b.start = time.Now().Add(-2 * Interval)
	b.last = b.start
	b.Set(5)
	b.Set(6) // within Interval of the last line: silent
	b.Finish()
	out := w.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "probing: 5/10, 10s elapsed, ~10s left") || strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("output %q", out)
	}
	var nilBar *Bar
	nilBar.Set(1)
	nilBar.Finish()
}

func TestBar(t *testing.T) {
	var w strings.Builder
	b := New("probing", 4, true, &w)
	for i := 1; i <= 4; i++ {
		b.Set(i)
	}
	b.Finish()
	if !strings.Contains(w.String(), "probing") {
		t.Errorf("bar output %q", w.String())
	}
}
