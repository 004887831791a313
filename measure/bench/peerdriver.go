package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
)

// peerDriver runs this end of a test negotiated with a `netprof traffic
// serve` over the control protocol; the peer's interval reports become
// trace rows (remoteRows).
type peerDriver struct {
	cfg  Config
	addr string
	log  *slog.Logger
	sess *control.Session
	dial traffic.DialFunc
	rows *remoteRows

	mu    sync.Mutex
	first net.Conn // the first data connection dialled, for reading options back

	report *control.Report // set by run

	local Local // where this end lives
}

func (d *peerDriver) namespaces() []tcpstats.Netns {
	return []tcpstats.Netns{{Inode: d.local.Netns, Do: d.local.Do}}
}

// dialPeer opens the control connection and negotiates the test; the data
// streams are connected later (connect), once the probes are attached.
func dialPeer(ctx context.Context, cfg Config, local Local, addr string, log *slog.Logger) (*peerDriver, error) {
	p := control.Params{
		Streams: cfg.Streams, Duration: cfg.sendTime(), BlockSize: int64(cfg.BlockSize), Direction: cfg.dir(),
		Interval: cfg.Interval, ConnectTimeout: cfg.connectTimeout(),
	}
	sess, err := control.Dial(ctx, traffic.SockOpts{}.Dial(local.Do), addr, p)
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w%s", addr, err, dialHint(err))
	}
	fwd, _ := cfg.streamCounts()
	d := &peerDriver{cfg: cfg, addr: addr, log: log, sess: sess, rows: newRemoteRows(cfg.Interval, fwd), local: local}
	data := cfg.SockOpts.Dial(local.Do)
	d.dial = func(ctx context.Context, network, a string) (net.Conn, error) {
		c, err := data(ctx, network, a)
		if err == nil {
			d.mu.Lock()
			if d.first == nil {
				d.first = c
			}
			d.mu.Unlock()
		}
		return c, err
	}
	return d, nil
}

// dialHint says what a failed control connection most likely means; ""
// when the error speaks for itself (the server's own answer, e.g. busy).
func dialHint(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return " (nothing listens on that port: is `netprof traffic serve` running there, with --listen on this port?)"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return " (no route to that host from here: check the address; netprof path HOST shows the route)"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return " (no answer: is the address right, and the control port open in the firewalls between? " +
			"`netprof traffic serve` must be running there)"
	}
	return ""
}

// manifestInfo describes the peer and the negotiated test for the
// manifest's config.
func (d *peerDriver) manifestInfo() map[string]any {
	info := d.sess.Info()
	return map[string]any{
		"peer_address": d.addr, "peer_software": d.sess.Software(), "peer_data_ports": info.Ports,
		"run_id": info.RunID, "peer_limits": info.Limits,
		"testbed": "none: this host and the peer (netprof traffic serve)",
	}
}

// connect establishes every data stream within the connect timeout; a
// failure is a *control.DataError naming the ports.
func (d *peerDriver) connect(ctx context.Context) error {
	if err := d.sess.ConnectData(ctx, d.dial); err != nil {
		return fmt.Errorf("peer %s: %w", d.addr, err)
	}
	return nil
}

// samples returns this end's streams: forward streams 0..N-1, reverse
// streams numbered after the forward ones.
func (d *peerDriver) samples() []traffic.StreamSample {
	out := d.sess.Sample()
	for i := range out {
		if out[i].Role == traffic.RoleReceiver {
			out[i].Stream += d.rows.reverseOff
		}
	}
	return out
}

// started fixes the local time of the peer's clock zero (it starts its
// clock when the start message arrives, which run sends next).
func (d *peerDriver) started(time.Time) { d.rows.base = time.Now() }

// run runs the test. A peer that sends no interval report for the peer
// timeout is given up (the run's context is cancelled, which closes every
// stream); a run that ends without the peer's result reports the peer lost.
func (d *peerDriver) run(ctx context.Context) error {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // owned: stopped and awaited below
		defer close(done)
		d.watch(cancel, stop)
	}()
	rep, err := d.sess.Run(rctx)
	close(stop)
	<-done
	d.mu.Lock()
	d.report = rep
	d.mu.Unlock()
	if cause := context.Cause(rctx); errors.Is(cause, ErrPeerLost) {
		return errors.Join(cause, err)
	}
	if err != nil && ctx.Err() == nil && (rep == nil || rep.Result == nil || connLost(err)) {
		return fmt.Errorf("%w: %s went away before its result (%d interval reports arrived): %w",
			ErrPeerLost, d.addr, len(d.sess.Remote()), err)
	}
	return err
}

// connLost reports whether err says the peer's end of a connection went
// away (reset, broken pipe, EOF): a peer that stops mid-run may still have
// sent a result saying so, but the run lost its peer all the same.
func connLost(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF)
}

// watch cancels the run when no interval report arrived for the peer
// timeout.
func (d *peerDriver) watch(cancel context.CancelCauseFunc, stop <-chan struct{}) {
	timeout := d.cfg.peerTimeout()
	tick := time.NewTicker(min(250*time.Millisecond, d.cfg.Interval/2))
	defer tick.Stop()
	last, seen := time.Now(), 0
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			if n := len(d.sess.Remote()); n != seen {
				last, seen = now, n
			} else if now.Sub(last) > timeout {
				cancel(fmt.Errorf("%w: no interval report from %s for %v (%d arrived)", ErrPeerLost, d.addr, timeout, seen))
				return
			}
		}
	}
}

// latest returns the peer's most recent interval report.
func (d *peerDriver) latest() (control.Interval, bool) {
	r := d.sess.Remote()
	if len(r) == 0 {
		return control.Interval{}, false
	}
	return r[len(r)-1], true
}

// afterInterval writes the peer's reports that arrived so far.
func (d *peerDriver) afterInterval(tl *timeline, w *trace.Writer) {
	if err := d.rows.flush(tl, w, d.sess.Remote(), d.samples(), false); err != nil {
		d.log.Error("write the peer's rows", "err", err)
	}
}

// finish writes the last of the peer's rows and collects the final
// counts and the peer's summary.
func (d *peerDriver) finish(tl *timeline, w *trace.Writer, res *Result) {
	local := d.samples()
	if err := d.rows.flush(tl, w, d.sess.Remote(), local, true); err != nil {
		d.log.Error("write the peer's rows", "err", err)
	}
	for _, s := range local {
		if s.Role == traffic.RoleSender {
			res.Sent = append(res.Sent, s)
		} else {
			res.Received = append(res.Received, s)
		}
	}
	d.mu.Lock()
	rep := d.report
	d.mu.Unlock()
	res.summary().Peer = d.peerSummary(rep)
	if f, ok := cpuFigures(d.rows.usage, d.rows.moved); ok {
		f.End, f.Role, f.Source = "peer", peerRole(d.cfg.dir()), "the peer's interval reports (its /proc/stat and getrusage)"
		res.summary().CPU = append(res.summary().CPU, f)
	}
}

// peerSummary describes the peer and its result.
func (d *peerDriver) peerSummary(rep *control.Report) *PeerSummary {
	info := d.sess.Info()
	ps := &PeerSummary{Address: d.addr, Software: d.sess.Software(), DataPorts: info.Ports,
		Intervals: d.rows.done, ReceivedBytes: d.rows.recvTotal, SentBytes: d.rows.sentTotal}
	if rep != nil && rep.Result != nil {
		ok, msg := rep.Result.OK, rep.Result.Error
		ps.ResultOK, ps.ResultError = &ok, msg
	}
	return ps
}

func peerRole(d control.Direction) string {
	switch d {
	case control.Reverse:
		return trace.RoleSender
	case control.Bidir:
		return "both"
	}
	return trace.RoleReceiver
}

func (d *peerDriver) beforeClose(*trace.Writer) {}

// sockets returns the first data connection (this end dialled them all).
func (d *peerDriver) sockets() (dialed, accepted net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first, nil
}

// close closes the control connection and any data stream not run.
func (d *peerDriver) close() { _ = d.sess.Close() }
