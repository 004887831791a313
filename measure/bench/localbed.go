package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
)

// bedDriver runs both ends over the local test bed: namespace A dials,
// namespace B listens on the data ports. Forward streams are sent from A
// to B, reverse streams from B to A.
type bedDriver struct {
	cfg Config
	bed *testbed.Bed
	log *slog.Logger

	senders []*traffic.Sender
	recvs   []*traffic.Receiver
	// srcs return each end's samples with stream numbers as in the trace.
	srcs []func() []traffic.StreamSample
	// dialed and accepted are stream 0 of each end, for reading the socket
	// options back.
	dialed, accepted net.Conn
}

func newBedDriver(cfg Config, bed *testbed.Bed, log *slog.Logger) *bedDriver {
	return &bedDriver{cfg: cfg, bed: bed, log: log}
}

// connect opens B's listeners, then dials every stream from A in both
// directions, each bounded by the connect timeout.
func (d *bedDriver) connect(ctx context.Context) error {
	fwd, rev := d.cfg.streamCounts()
	b := d.bed.B()
	ports := d.cfg.ports()
	ports = ports[:min(fwd+rev, len(ports))]
	lns, err := d.listenAll(ports)
	if err != nil {
		return err
	}
	id, err := traffic.NewRunID()
	if err != nil {
		closeListeners(lns)
		return err
	}
	actx, cancel := context.WithTimeout(ctx, d.cfg.connectTimeout()+time.Second)
	defer cancel()
	type accepted struct {
		a   *traffic.Accepted
		err error
	}
	got := make(chan accepted, 1)
	go func() { // owned: awaited below on every path
		acc, err := traffic.AcceptStreams(actx, lns, id, fwd, rev)
		got <- accepted{acc, err}
	}()
	fc, rc, derr := d.dialAll(ctx, b.Addr.String(), ports, id, fwd, rev)
	if derr != nil {
		cancel()
	}
	acc := <-got
	if derr != nil || acc.err != nil {
		closeConns(fc, rc)
		if acc.a != nil {
			acc.a.Close()
		}
		return errors.Join(derr, acc.err)
	}
	return d.build(fc, rc, acc.a)
}

// listenAll opens B's data listeners with the socket options (but the
// device binding, which names a device of A).
func (d *bedDriver) listenAll(ports []int) ([]net.Listener, error) {
	b := d.bed.B()
	lopts := d.cfg.SockOpts
	lopts.BindDev = ""
	var lns []net.Listener
	for _, p := range ports {
		ln, err := lopts.Listen(b.Do, "tcp", joinHostPort(b.Addr.String(), p))
		if err != nil {
			closeListeners(lns)
			return nil, fmt.Errorf("receiver listen on port %d: %w", p, err)
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// dialAll dials the forward and the reverse streams from A; stream i of a
// set goes to ports[i mod len(ports)], reverse streams after the forward
// ones (as `traffic serve` assigns them).
func (d *bedDriver) dialAll(ctx context.Context, host string, ports []int, id traffic.RunID, fwd, rev int) (fc, rc []net.Conn, err error) {
	dial := d.cfg.SockOpts.Dial(d.bed.A().Do)
	addrs := func(n, off int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = joinHostPort(host, ports[(off+i)%len(ports)])
		}
		return out
	}
	timeout := d.cfg.connectTimeout()
	var ferr, rerr error
	var wg sync.WaitGroup
	if fwd > 0 {
		wg.Go(func() { fc, ferr = traffic.DialStreams(ctx, dial, addrs(fwd, 0), traffic.Forward, id, timeout) })
	}
	if rev > 0 {
		wg.Go(func() { rc, rerr = traffic.DialStreams(ctx, dial, addrs(rev, fwd), traffic.Reverse, id, timeout) })
	}
	wg.Wait()
	if err = errors.Join(wrap("forward streams", ferr), wrap("reverse streams", rerr)); err != nil {
		closeConns(fc, rc)
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	return fc, rc, nil
}

// build makes the senders and receivers over the established streams.
func (d *bedDriver) build(fc, rc []net.Conn, acc *traffic.Accepted) error {
	tcfg := d.cfg.traffic()
	off := len(fc) // reverse streams are numbered after the forward ones
	add := func(send, recv []net.Conn, sendOff int) error {
		s, err := traffic.NewSenderConns(send, tcfg)
		if err != nil {
			return err
		}
		r, err := traffic.NewReceiverConns(recv, tcfg)
		if err != nil {
			_ = s.Close()
			return err
		}
		d.senders, d.recvs = append(d.senders, s), append(d.recvs, r)
		d.srcs = append(d.srcs, offset(s.Sample, sendOff), offset(r.Sample, sendOff))
		return nil
	}
	var err error
	if len(fc) > 0 {
		d.dialed, d.accepted = fc[0], acc.Forward[0]
		err = add(fc, acc.Forward, 0)
	}
	if err == nil && len(rc) > 0 {
		if d.dialed == nil {
			d.dialed, d.accepted = rc[0], acc.Reverse[0]
		}
		err = add(acc.Reverse, rc, off)
	}
	if err != nil {
		d.close()
		closeConns(fc, rc)
		acc.Close()
		return err
	}
	return nil
}

// offset returns src with off added to every stream number.
func offset(src func() []traffic.StreamSample, off int) func() []traffic.StreamSample {
	return func() []traffic.StreamSample {
		out := src()
		for i := range out {
			out[i].Stream += off
		}
		return out
	}
}

func (d *bedDriver) samples() []traffic.StreamSample {
	var out []traffic.StreamSample
	for _, src := range d.srcs {
		out = append(out, src()...)
	}
	return out
}

func (d *bedDriver) started(time.Time) {}

// run runs every sender and receiver; receivers get drainTimeout after the
// last sender ended to read what is in flight.
func (d *bedDriver) run(ctx context.Context) error {
	rctx, cancelRecv := context.WithCancel(ctx)
	defer cancelRecv()
	sendErrs, recvErrs := make([]error, len(d.senders)), make([]error, len(d.recvs))
	var recvWG, sendWG sync.WaitGroup
	for i, r := range d.recvs {
		recvWG.Go(func() { recvErrs[i] = r.Serve(rctx) })
	}
	for i, s := range d.senders {
		sendWG.Go(func() { sendErrs[i] = s.Run(ctx) })
	}
	sendWG.Wait()
	recvDone := make(chan struct{})
	go func() { // owned: recvDone is awaited below
		recvWG.Wait()
		close(recvDone)
	}()
	var drainErr error
	select {
	case <-recvDone:
	case <-time.After(drainTimeout):
		cancelRecv()
		<-recvDone
		drainErr = errors.New("receiver did not finish within " + drainTimeout.String())
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(wrap("sender", errors.Join(sendErrs...)), wrap("receiver", errors.Join(append(recvErrs, drainErr)...)))
}

func (d *bedDriver) afterInterval(*timeline, *trace.Writer) {}

// finish records the final counts.
func (d *bedDriver) finish(_ *timeline, _ *trace.Writer, res *Result) {
	for _, s := range d.senders {
		res.Sent = append(res.Sent, s.Sample()...)
	}
	for _, r := range d.recvs {
		res.Received = append(res.Received, r.Sample()...)
	}
}

// beforeClose records the delay line's counters, if the bed has one.
func (d *bedDriver) beforeClose(w *trace.Writer) { recordDelayLine(d.bed, w, d.log) }

// sockets returns stream 0 of the dialing (A) and accepting (B) ends.
func (d *bedDriver) sockets() (dialed, accepted net.Conn) { return d.dialed, d.accepted }

func (d *bedDriver) namespaces() []tcpstats.Netns {
	a, b := d.bed.A(), d.bed.B()
	return []tcpstats.Netns{{Inode: a.NetnsInode(), Do: a.Do}, {Inode: b.NetnsInode(), Do: b.Do}}
}

// close closes every stream that was connected but not run.
func (d *bedDriver) close() {
	for _, s := range d.senders {
		_ = s.Close()
	}
	for _, r := range d.recvs {
		_ = r.Close()
	}
}

func joinHostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

func closeConns(sets ...[]net.Conn) {
	for _, cs := range sets {
		for _, c := range cs {
			if c != nil {
				_ = c.Close()
			}
		}
	}
}
