package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/internal/nicstats"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/probes/netdev"
	"github.com/netprof/netprof/probes/tcpstats"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
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
	// Sent and Received are this host's generator's final per-stream
	// counts (both ends' on the local test bed), stream numbers as in the
	// trace.
	Sent, Received []traffic.StreamSample
	// Namespaces names the test bed's network namespaces (removed by the
	// time Run returns).
	Namespaces []string
	// Summary holds what the run adds to the report: CPU of both ends,
	// phases, the peer, socket options as they took.
	Summary *Summary
}

// summary returns r.Summary, creating it.
func (r *Result) summary() *Summary {
	if r.Summary == nil {
		r.Summary = &Summary{}
	}
	return r.Summary
}

// Run performs one bench run: over a local test bed it creates, or to
// cfg.Peer (see RunPeer). It returns an error wrapping ErrPrivilege
// when not root; an error before recording starts leaves no run directory
// behind only if it happens before the directory is created. Once
// recording started, the trace is always closed (valid, with every
// completed interval) and Result is returned alongside any error, with
// the report of what was recorded when the trace could be read back. The
// test bed is removed before Run returns, also on error and cancellation.
func Run(ctx context.Context, cfg Config, toolVersion string, log *slog.Logger) (*Result, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Peer != "" {
		return RunPeer(ctx, cfg, toolVersion, Local{}, log)
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
	// A bench killed before it could clean up (SIGKILL, power loss) left
	// its namespaces; only netprof's own, no longer used, are removed.
	if removed, err := testbed.CleanupLeftovers(); err != nil {
		log.Warn("leftover test beds of killed runs not fully removed", "removed", removed, "err", err)
	} else if len(removed) > 0 {
		log.Warn("removed the test bed a killed netprof run left behind", "namespaces", removed)
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

// runOnBed runs over an existing test bed: A dials, B listens.
func runOnBed(ctx context.Context, cfg Config, toolVersion string, bed *testbed.Bed, log *slog.Logger) (*Result, error) {
	if log == nil {
		log = slog.Default()
	}
	links, handles, err := describeBed(bed, cfg.dir())
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, h := range handles {
			h.Close()
		}
	}()
	d := newBedDriver(cfg, bed, log)
	defer d.close()
	return execute(ctx, cfg, toolVersion, links, handles, d, nil, log)
}

// driver is one kind of run: both ends over the local test bed, or this
// end of a test with a peer.
type driver interface {
	// connect establishes every data stream before anything is measured.
	connect(ctx context.Context) error
	// namespaces returns the namespaces of this host's ends of the run.
	namespaces() []tcpstats.Netns
	// sockets returns a data connection of the dialing end and, when it is
	// local too, of the accepting end (nil otherwise), right after connect.
	sockets() (dialed, accepted net.Conn)
	// samples returns this host's streams' cumulative counters, with
	// stream numbers as in the trace.
	samples() []traffic.StreamSample
	// started is called once the recorder has its baseline, before run.
	started(t0 time.Time)
	// run sends and receives until the transfer ends.
	run(ctx context.Context) error
	// afterInterval runs on the recorder's goroutine after each interval.
	afterInterval(tl *timeline, w *trace.Writer)
	// finish runs once the recorder stopped: last rows, final counts.
	finish(tl *timeline, w *trace.Writer, res *Result)
	// beforeClose runs before the trace is closed, whatever happened.
	beforeClose(w *trace.Writer)
}

// execute records one run into a new run directory and analyses it.
func execute(ctx context.Context, cfg Config, toolVersion string, links []linkstats.Link, handles []*netlink.Handle,
	d driver, extra map[string]any, log *slog.Logger) (*Result, error) {
	dir := cfg.Out
	if dir == "" {
		dir = measure.DefaultDir(time.Now())
	}
	m := manifest(cfg, toolVersion, links, d.namespaces())
	maps.Copy(m.Config, extra)
	res := &Result{Dir: dir, Summary: newSummary(cfg)}
	status, err := measure.Trace(ctx, dir, m, nil, func(w *trace.Writer) error {
		defer d.beforeClose(w)
		return record(ctx, cfg, links, handles, d, w, res, log)
	})
	if status == "" { // no trace
		return nil, err
	}
	res.Status = status
	// A failed run's partial trace is analysed too (the report says its
	// status); the run's error comes first.
	run, aerr := trace.Open(dir)
	if aerr == nil {
		res.Report, aerr = analysis.FromRun(run)
	}
	if res.Report != nil {
		res.Report.Dir = dir
	}
	if err != nil {
		return res, err
	}
	return res, aerr
}

// record attaches the probes, connects and runs the transfer.
func record(ctx context.Context, cfg Config, links []linkstats.Link, handles []*netlink.Handle,
	d driver, w *trace.Writer, res *Result, log *slog.Logger) error {
	samplers, probes := buildSamplers(cfg, links, handles, d.namespaces(), log)
	defer func() {
		if err := probes.Close(); err != nil {
			log.Error("probes", "err", err)
		}
	}()
	if nic := nicSampler(links, d.namespaces(), log); nic != nil {
		defer nic.Close()
		samplers = slices.Insert(samplers, 1, measure.Sampler(nic)) // beside the netlink rows it goes with
	}
	if err := w.UpdateManifest(func(m *trace.Manifest) { m.Probes, m.Maps = probes.Status, probes.Maps }); err != nil {
		return err
	}
	if err := d.connect(ctx); err != nil {
		return err
	}
	res.summary().SockOpts = readSockets(cfg.SockOpts, d, log)
	return transfer(ctx, cfg, d, w, samplers, res, log)
}

// transfer records while the driver runs the connected streams to their
// end, then completes the summary.
func transfer(ctx context.Context, cfg Config, d driver, w *trace.Writer, samplers []measure.Sampler, res *Result, log *slog.Logger) error {
	cpu := &measure.ProcSampler{ReadCPU: readCPU}
	tl := newTimeline(cfg, cpu)
	// /proc/stat right after the BPF samplers, so it fills their cpus rows
	// with figures of the same interval; the timeline comes last: it marks
	// the traffic rows with their phase and takes the CPU figures.
	samplers = append(samplers, cpu, &trafficSampler{sources: []func() []traffic.StreamSample{d.samples}}, tl)
	lv := newLive(cfg.Live, cfg.Interval, d)
	rec := &measure.Recorder{Samplers: samplers, Period: cfg.Interval, Writer: w, Log: log,
		OnInterval: func(end time.Time, iv *trace.Interval) {
			tl.ended(end)
			d.afterInterval(tl, w)
			lv.line(tl, iv)
			if cfg.Metrics != nil {
				cfg.Metrics.Observe(iv)
			}
			if cfg.Stream != nil {
				cfg.Stream.Interval(end, iv)
			}
		}}
	var started bool
	err := measure.RecordWhile(ctx, rec, w, func(start time.Time) {
		started = true
		tl.start(start)
		d.started(start)
	}, d.run)
	if !started { // no baseline: nothing ran
		return err
	}
	d.finish(tl, w, res)
	res.summary().addLocal(cfg, tl)
	recordSummary(w, res.summary(), tl, d, log)
	return err
}

// buildSamplers returns the samplers in their required order: netlink
// interface rows first (BPF counts are added to them), then the probes.
func buildSamplers(cfg Config, links []linkstats.Link, handles []*netlink.Handle, nss []tcpstats.Netns, log *slog.Logger) ([]measure.Sampler, *probeset.Running) {
	samplers := []measure.Sampler{&measure.LinkSampler{Links: links, Handles: handles}}
	if cfg.NoBPF {
		return samplers, probeset.Disabled("--no-bpf: probes off")
	}
	names, netns := map[netdev.IfaceKey]string{}, map[uint64]bool{}
	for _, l := range links {
		names[netdev.IfaceKey{Netns: l.Netns, Ifindex: uint32(l.Index)}] = l.Name
		netns[l.Netns] = true
	}
	ps := probeset.Start(probeset.Options{Selected: cfg.Probes, Stats: cfg.BPFStats, Scope: probeset.Scope{
		FlowEntries: cfg.FlowEntries,
		Iface: func(ns uint64, ifindex uint32) (string, bool) {
			n, ok := names[netdev.IfaceKey{Netns: ns, Ifindex: ifindex}]
			return n, ok
		},
		InRun:      func(ns uint64) bool { return netns[ns] },
		Namespaces: func() []tcpstats.Netns { return nss },
	}}, log)
	return append(samplers, ps.Samplers()...), ps
}

// describeBed returns both veth ends with netlink handles in their
// namespaces. A sends and B receives, except in reverse runs (the other
// way round); in bidir runs both do both and A is marked the sender.
func describeBed(bed *testbed.Bed, dir control.Direction) ([]linkstats.Link, []*netlink.Handle, error) {
	var links []linkstats.Link
	var handles []*netlink.Handle
	roleA, roleB := trace.RoleSender, trace.RoleReceiver
	if dir == control.Reverse {
		roleA, roleB = roleB, roleA
	}
	for _, h := range []struct {
		host *testbed.Host
		role string
	}{{bed.A(), roleA}, {bed.B(), roleB}} {
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

func manifest(cfg Config, toolVersion string, links []linkstats.Link, nss []tcpstats.Netns) trace.Manifest {
	m := measure.NewManifest(toolVersion, cfg.Argv, cfg.Interval, cfg.manifestConfig())
	for _, l := range links {
		m.Interfaces = append(m.Interfaces, measure.Interface(l, l.Role, nsDo(nss, l.Netns)))
	}
	return m
}

// nicSampler returns the sampler of the links' driver statistics (the nics
// table), or nil (logged) when no ethtool socket could be opened.
func nicSampler(links []linkstats.Link, nss []tcpstats.Netns, log *slog.Logger) *nicstats.Sampler {
	var nl []nicstats.Link
	for _, l := range links {
		nl = append(nl, nicstats.Link{Netns: l.Netns, Ifname: l.Name, Do: nsDo(nss, l.Netns)})
	}
	s, err := nicstats.New(nl)
	if err != nil {
		log.Warn("no driver statistics (nics table)", "err", err)
		return nil
	}
	return s
}

// readCPU takes a /proc/stat and getrusage reading for the run's
// measure.ProcSampler (a variable so that a test can bracket each reading
// with its own).
var readCPU = cpustat.Read

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// nsDo returns the function that runs code inside namespace inode, of the
// run's namespaces nss; nil when inode is not among them (netprof's own).
func nsDo(nss []tcpstats.Netns, inode uint64) func(func() error) error {
	for _, ns := range nss {
		if ns.Inode == inode {
			return ns.Do
		}
	}
	return nil
}
