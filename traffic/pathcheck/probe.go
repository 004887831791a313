package pathcheck

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// Attempt outcomes.
const (
	// Connected: the handshake completed (SYN, SYN-ACK): the time is one
	// round trip plus the local stack's work.
	Connected = "connected"
	// Refused: the peer answered the SYN with a RST (nothing listens on
	// the port). That is a round trip too, and counts as an RTT sample.
	Refused = "refused"
	// Timeout: no answer within Options.Timeout (a firewall dropping the
	// SYN, or no host): no RTT.
	Timeout = "timeout"
	// Failed: another error (no route, host unreachable): no RTT.
	Failed = "failed"
)

// Options tunes Measure. Zero fields take the defaults.
type Options struct {
	Count   int           // attempts; default 20
	Gap     time.Duration // pause between attempts; default 50 ms
	Timeout time.Duration // per attempt; default 2 s
	// Progress, if set, is called after each attempt with the number done.
	Progress func(done, total int)
}

func (o Options) withDefaults() Options {
	if o.Count <= 0 {
		o.Count = 20
	}
	if o.Gap <= 0 {
		o.Gap = 50 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	return o
}

// Attempt is one TCP connect.
type Attempt struct {
	RTT     time.Duration // 0 unless Outcome is Connected or Refused
	Outcome string
	Err     string // for Timeout and Failed
}

// Result summarises the attempts to one address. RTT figures are over the
// connected and refused attempts (each a full round trip) and are zero
// when Samples is 0.
type Result struct {
	Addr                                netip.AddrPort
	Attempts                            []Attempt
	Connected, Refused, Timeouts, Fails int
	Samples                             int
	Min, P50, P90, Max                  time.Duration
}

// Measure times opt.Count TCP connects to addr. The time of one connect is
// taken around a blocking connect(2) (SYN sent until SYN-ACK or RST
// processed and the thread woken), so it includes a few microseconds of the
// local stack's own work. Between attempts it waits opt.Gap; ctx is checked
// there (a connect in progress runs to its timeout). do runs its
// function inside the network namespace to dial from (testbed.Host.Do has
// this shape; nil means the caller's own): every attempt's socket is made
// and timed on that thread, so no namespace switch is timed. It returns an
// error only when ctx is cancelled or do fails; unreachable peers show up
// as Timeout or Failed attempts.
func Measure(ctx context.Context, do func(func() error) error, addr netip.AddrPort, opt Options) (Result, error) {
	opt = opt.withDefaults()
	if do == nil {
		do = func(fn func() error) error {
			runtime.LockOSThread() // one thread for every blocking connect
			defer runtime.UnlockOSThread()
			return fn()
		}
	}
	res := Result{Addr: addr}
	err := do(func() error {
		for i := range opt.Count {
			if i > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(opt.Gap):
				}
			}
			res.Attempts = append(res.Attempts, attempt(addr, opt.Timeout))
			if opt.Progress != nil {
				opt.Progress(i+1, opt.Count)
			}
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("measure %s: %w", addr, err)
	}
	res.summarise()
	return res, nil
}

// attempt makes one blocking connect(2) on the calling thread and times
// the system call: no poller wake-up or goroutine hand-off is timed, which
// with Go's non-blocking dial adds 0.1-0.3 ms, more than a same-rack RTT.
// SO_SNDTIMEO bounds the wait (the kernel then returns EINPROGRESS).
func attempt(addr netip.AddrPort, timeout time.Duration) Attempt {
	fam, sa := unix.AF_INET, unix.Sockaddr(&unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()})
	if addr.Addr().Is6() && !addr.Addr().Is4In6() {
		fam, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	}
	fd, err := unix.Socket(fam, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return Attempt{Outcome: Failed, Err: fmt.Sprintf("socket: %v", err)}
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return Attempt{Outcome: Failed, Err: fmt.Sprintf("SO_SNDTIMEO: %v", err)}
	}
	start := time.Now()
	err = unix.Connect(fd, sa)
	rtt := time.Since(start)
	switch {
	case err == nil:
		return Attempt{RTT: rtt, Outcome: Connected}
	case errors.Is(err, unix.ECONNREFUSED):
		return Attempt{RTT: rtt, Outcome: Refused}
	case errors.Is(err, unix.EINPROGRESS) || errors.Is(err, unix.ETIMEDOUT) || errors.Is(err, unix.EAGAIN):
		return Attempt{Outcome: Timeout, Err: fmt.Sprintf("no answer within %v", timeout)}
	}
	return Attempt{Outcome: Failed, Err: err.Error()}
}

func (r *Result) summarise() {
	var rtts []time.Duration
	for _, a := range r.Attempts {
		switch a.Outcome {
		case Connected:
			r.Connected++
			rtts = append(rtts, a.RTT)
		case Refused:
			r.Refused++
			rtts = append(rtts, a.RTT)
		case Timeout:
			r.Timeouts++
		default:
			r.Fails++
		}
	}
	r.Samples = len(rtts)
	if len(rtts) == 0 {
		return
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	r.Min, r.Max = rtts[0], rtts[len(rtts)-1]
	r.P50, r.P90 = quantile(rtts, 0.5), quantile(rtts, 0.9)
}

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Kind says how the RTT samples were obtained, e.g. "12 connected, 8
// refused (RST: nothing listens, still a round trip), 0 timed out".
func (r Result) Kind() string {
	s := fmt.Sprintf("%d connected", r.Connected)
	if r.Refused > 0 {
		s += fmt.Sprintf(", %d refused (RST: nothing listens on the port; still one round trip)", r.Refused)
	}
	if r.Timeouts > 0 {
		s += fmt.Sprintf(", %d timed out (no answer: filtered port?)", r.Timeouts)
	}
	if r.Fails > 0 {
		s += fmt.Sprintf(", %d failed", r.Fails)
		for _, a := range r.Attempts {
			if a.Outcome == Failed {
				s += " (" + a.Err + ")"
				break
			}
		}
	}
	return s
}
