package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/probes/linkstats"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
)

// ErrPrivilege is wrapped by Run when the process cannot create network
// namespaces or load BPF programs (not root).
var ErrPrivilege = loader.ErrPrivilege

// drainTimeout bounds how long the receiver may take to read what is in
// flight after the sender stops.
const drainTimeout = 10 * time.Second

// Result is what a run produced.
type Result struct {
	Dir    string
	Status string // "ok", "interrupted", or "failed: <reason>"
	Report *analysis.Report
	// Sent and Received are the generator's final per-stream counts.
	Sent, Received []traffic.StreamSample
	// Namespaces names the test bed's network namespaces (removed by the
	// time Run returns).
	Namespaces []string
}

// Run performs one bench run. It returns an error wrapping ErrPrivilege
// when not root; an error before recording starts leaves no run directory
// behind only if it happens before the directory is created. Once
// recording started, the trace is always closed (valid, with every
// completed interval) and Result is returned alongside any error. The test
// bed is removed before Run returns, also on error and cancellation.
func Run(ctx context.Context, cfg Config, toolVersion string, log *slog.Logger) (*Result, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("bench creates network namespaces and needs root (run with sudo): %w", ErrPrivilege)
	}
	if !cfg.NoBPF {
		if err := loader.Check(log); err != nil {
			return nil, fmt.Errorf("%w (run with sudo, or use --no-bpf for generator and netlink figures only)", err)
		}
	}
	bed, err := testbed.New(ctx, cfg.bedOptions())
	if err != nil {
		return nil, fmt.Errorf("test bed: %w", err)
	}
	defer func() {
		if err := bed.Close(); err != nil {
			log.Error("test bed not fully removed", "err", err)
		}
	}()
	res, err := runOnBed(ctx, cfg, toolVersion, bed, log)
	if res != nil {
		res.Namespaces = []string{bed.A().Name, bed.B().Name}
	}
	return res, err
}

func runOnBed(ctx context.Context, cfg Config, toolVersion string, bed *testbed.Bed, log *slog.Logger) (*Result, error) {
	links, handles, err := describeBed(bed)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	dir := cfg.Out
	if dir == "" {
		dir = filepath.Join("runs", time.Now().UTC().Format("20060102T150405Z"))
	}
	w, err := trace.Create(dir, manifest(cfg, toolVersion, links))
	if err != nil {
		return nil, fmt.Errorf("create trace: %w", err)
	}
	res := &Result{Dir: dir}
	samplers, probes, err := buildSamplers(cfg, links, handles, log)
	defer func() {
		if err := probes.Close(); err != nil {
			log.Error("probes", "err", err)
		}
	}()
	if err == nil {
		if probes != nil {
			err = w.SetProbes(probes.status)
		} else {
			err = w.SetProbes(offProbes())
		}
	}
	if err == nil {
		err = transfer(ctx, cfg, bed, w, samplers, res, log)
	}
	recordDelayLine(bed, w, log)
	res.Status = status(ctx, err)
	if cerr := w.Close(time.Now().UTC(), res.Status); cerr != nil {
		return res, errors.Join(err, fmt.Errorf("close trace: %w", cerr))
	}
	if err != nil {
		return res, err
	}
	run, err := trace.Open(dir)
	if err != nil {
		return res, err
	}
	res.Report, err = analysis.FromRun(run)
	if res.Report != nil {
		res.Report.Dir = dir
	}
	return res, err
}

func status(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil:
		return "interrupted"
	case err != nil:
		return "failed: " + err.Error()
	}
	return "ok"
}

// transfer connects every stream, then records while the sender sends and
// until the receiver has read everything (or drainTimeout passes).
func transfer(ctx context.Context, cfg Config, bed *testbed.Bed, w *trace.Writer, samplers []loader.Sampler, res *Result, log *slog.Logger) error {
	addr := net.JoinHostPort(bed.B().Addr.String(), strconv.Itoa(cfg.Port))
	ln, err := bed.B().Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("receiver listen %s: %w", addr, err)
	}
	tcfg := cfg.traffic()
	recv := traffic.NewReceiver(ln, tcfg)
	recvCtx, cancelRecv := context.WithCancel(ctx)
	defer cancelRecv()
	recvDone := make(chan error, 1)
	go func() { recvDone <- recv.Serve(recvCtx) }()

	send := traffic.NewSender(bed.A().Dial, addr, tcfg)
	defer send.Close()
	if err := send.Connect(ctx); err != nil {
		cancelRecv()
		<-recvDone
		return fmt.Errorf("connect: %w", err)
	}
	samplers = append(samplers, &trafficSampler{sources: []func() []traffic.StreamSample{send.Sample, recv.Sample}})
	rec := &loader.Recorder{Samplers: samplers, Period: cfg.Interval, Writer: w, Log: log}
	recCtx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRec()
	start, err := rec.Start()
	if err == nil {
		err = w.UpdateManifest(func(m *trace.Manifest) { m.Start = start.UTC() })
	}
	if err != nil {
		cancelRecv()
		<-recvDone
		return err
	}
	recDone := make(chan error, 1)
	go func() { recDone <- rec.Run(recCtx) }()

	sendErr := send.Run(ctx)
	var recvErr error
	select {
	case recvErr = <-recvDone:
	case <-time.After(drainTimeout):
		cancelRecv()
		recvErr = errors.Join(errors.New("receiver did not finish within "+drainTimeout.String()), <-recvDone)
	}
	stopRec()
	recErr := <-recDone
	res.Sent, res.Received = send.Sample(), recv.Sample()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(wrap("sender", sendErr), wrap("receiver", recvErr), wrap("recorder", recErr))
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// buildSamplers returns the samplers in their required order: netlink
// interface rows first (BPF counts are added to them), then the probes.
func buildSamplers(cfg Config, links []linkstats.Link, handles []*netlink.Handle, log *slog.Logger) ([]loader.Sampler, *probeSet, error) {
	samplers := []loader.Sampler{&linkSampler{links: links, handles: handles}}
	if cfg.NoBPF {
		return samplers, nil, nil
	}
	sc := scope{names: map[netdev.IfaceKey]string{}, netns: map[uint64]bool{}}
	for _, l := range links {
		sc.names[netdev.IfaceKey{Netns: l.Netns, Ifindex: uint32(l.Index)}] = l.Name
		sc.netns[l.Netns] = true
	}
	ps, err := loadProbes(sc, cfg.FlowEntries, log)
	if err != nil {
		return nil, nil, err
	}
	return append(samplers, ps.samplers...), ps, nil
}

func offProbes() []trace.Probe {
	return []trace.Probe{{Name: "all", Reason: "--no-bpf: probes off"}}
}

// describeBed returns both veth ends (A sends, B receives) with netlink
// handles in their namespaces.
func describeBed(bed *testbed.Bed) ([]linkstats.Link, []*netlink.Handle, error) {
	var links []linkstats.Link
	var handles []*netlink.Handle
	for _, h := range []struct {
		host *testbed.Host
		role string
	}{{bed.A(), trace.RoleSender}, {bed.B(), trace.RoleReceiver}} {
		nh, err := h.host.Handle()
		if err != nil {
			return nil, nil, closeAll(handles, fmt.Errorf("netlink in %s: %w", h.host.Name, err))
		}
		handles = append(handles, nh)
		l, err := linkstats.Describe(nh, h.host.NetnsInode(), h.host.Ifindex())
		if err != nil {
			return nil, nil, closeAll(handles, err)
		}
		l.Role = h.role
		links = append(links, l)
	}
	return links, handles, nil
}

func closeAll(hs []*netlink.Handle, err error) error {
	for _, h := range hs {
		h.Close()
	}
	return err
}

func manifest(cfg Config, toolVersion string, links []linkstats.Link) trace.Manifest {
	host, _ := os.Hostname()
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	m := trace.Manifest{
		ToolVersion: toolVersion, Argv: cfg.Argv, Start: time.Now().UTC(), Host: host,
		Kernel: unix.ByteSliceToString(uts.Release[:]), CPUCount: runtime.NumCPU(),
		IntervalNs: cfg.Interval.Nanoseconds(), Config: cfg.manifestConfig(),
	}
	for _, l := range links {
		m.Interfaces = append(m.Interfaces, trace.Interface{
			Name: l.Name, Index: int32(l.Index), Netns: l.Netns, Driver: l.Driver,
			Master: l.Master, MTU: l.MTU, Role: l.Role,
		})
	}
	return m
}
