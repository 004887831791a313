// Package progress shows how far a long command is: a progress bar with
// elapsed and remaining time (github.com/schollz/progressbar) when stdout is
// a terminal, otherwise a plain line every few seconds, so logs and pipes
// get no control characters. It writes to stderr, never to the command's
// output.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Interval is how often the plain (non-terminal) form prints a line.
const Interval = 5 * time.Second

// Bar counts steps of a known total. It is not safe for concurrent use.
type Bar struct {
	what  string
	total int
	done  int
	start time.Time
	last  time.Time
	bar   *progressbar.ProgressBar // nil in the plain form
	w     io.Writer
}

// StdoutIsTerminal reports whether the process's stdout is a terminal.
func StdoutIsTerminal() bool { return term.IsTerminal(int(os.Stdout.Fd())) }

// New starts a progress display of total steps described by what ("probing
// 10.0.0.5:22"). tty chooses the bar (true) or the plain lines; w is where
// either goes (normally os.Stderr).
func New(what string, total int, tty bool, w io.Writer) *Bar {
	b := &Bar{what: what, total: total, start: time.Now(), w: w}
	b.last = b.start
	if tty {
		b.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(), progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
	}
	return b
}

// Set records that done of the total steps are finished.
func (b *Bar) Set(done int) {
	if b == nil {
		return
	}
	b.done = done
	if b.bar != nil {
		_ = b.bar.Set(done)
		return
	}
	if now := time.Now(); now.Sub(b.last) >= Interval && done < b.total {
		b.last = now
		fmt.Fprintf(b.w, "%s: %d/%d, %s elapsed, ~%s left\n", b.what, done, b.total,
			now.Sub(b.start).Round(time.Second), b.remaining(now).Round(time.Second))
	}
}

// remaining extrapolates from the pace so far.
func (b *Bar) remaining(now time.Time) time.Duration {
	if b.done == 0 {
		return 0
	}
	per := now.Sub(b.start) / time.Duration(b.done)
	return per * time.Duration(b.total-b.done)
}

// Finish removes the bar (the plain form prints nothing more).
func (b *Bar) Finish() {
	if b != nil && b.bar != nil {
		_ = b.bar.Finish()
	}
}
