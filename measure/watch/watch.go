// Package watch is `netprof watch`: a per-interval live view of the host's
// network without a traffic generator. Each interval it prints the decimal
// Gbit/s received and sent on each counted interface (netlink delta over
// the measured interval, after the counting rule of probes/ifaces), the
// busiest CPU's NET_RX softirq share, the top flows by bytes and the TCP
// RTT median; optionally it records the same into a run directory and
// serves it as Prometheus metrics.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/jsonstream"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/probes/ifaces"
	"github.com/netprof/netprof/probes/linkstats"
	"github.com/netprof/netprof/probes/nicstats"
	"github.com/netprof/netprof/trace"
)

// ErrUsage is wrapped by Run's errors that are the user's to fix (an
// interface or driver that matches nothing, a bad --link-speed).
var ErrUsage = errors.New("usage")

// Config is what `netprof watch` was asked to do.
type Config struct {
	// Stream, if set, gets every interval as a JSON line (--json-stream).
	Stream     *jsonstream.Stream
	Select     ifaces.Selector
	LinkSpeeds map[string]int64 // --link-speed, see ifaces.ParseSpeedOverrides
	Interval   time.Duration    // default 1 s
	Duration   time.Duration    // 0: until ctx is cancelled (Ctrl-C)
	Out        string           // run directory; "" records nothing
	NoBPF      bool
	// FlowEntries sizes the BPF flow table (0: netdev.DefaultFlowEntries);
	// flows that find it full are counted as lost bytes, not dropped.
	FlowEntries uint32
	// Probes selects probe groups (probeset.Parse; nil: every group).
	Probes   []string
	TopFlows int // default 3
	// Metrics, if set, receives every interval (see metrics.Exporter).
	Metrics *metrics.Exporter
	// W receives the live lines (default os.Stdout).
	W           io.Writer
	Argv        []string
	ToolVersion string
	// Netns runs a function inside the namespace to watch, with its inode
	// (testbed.Host.Do / NetnsInode); nil watches the caller's namespace.
	Netns      func(func() error) error
	NetnsInode uint64
	// OnInterval, if set, is called after each interval is printed.
	OnInterval func(Summary)
}

// Result is what a watch run saw.
type Result struct {
	Dir       string // run directory, "" without Out
	Intervals int
	Counted   []ifaces.Count // counted interfaces at the start
	Notes     []string
	Probes    []trace.Probe
	Status    string
}

// Run watches until ctx is done or cfg.Duration has passed. It returns an
// error wrapping ErrUsage when the selection matches nothing (listing the
// interfaces that exist); BPF probes that cannot be loaded are reported in
// Result.Probes and the view falls back to netlink and /proc/stat. With
// cfg.Out the trace is always closed, also on error.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Result, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.TopFlows <= 0 {
		cfg.TopFlows = 3
	}
	if cfg.W == nil {
		cfg.W = os.Stdout
	}
	ns, err := linkstats.OpenNS(cfg.Netns, cfg.NetnsInode)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	tr, sel, err := selectIfaces(ns, cfg, log)
	if err != nil {
		return nil, err
	}
	res := &Result{Counted: sel.Counted()}
	ps := &probes{status: probeset.Off("--no-bpf: probes off")}
	if !cfg.NoBPF {
		ps = loadProbes(tr, cfg.Netns, cfg.FlowEntries, cfg.Probes, log)
	}
	defer func() {
		if err := ps.Close(); err != nil {
			log.Error("probes", "err", err)
		}
	}()
	res.Probes = ps.status
	printHeader(cfg.W, sel, ps)
	samplers := ps.samplers(tr)
	if nic := nicSampler(ns.Netns, cfg.Netns, sel, log); nic != nil {
		defer nic.Close()
		samplers = append(samplers, nic)
	}
	rec := &measure.Recorder{Samplers: samplers, Period: cfg.Interval, Log: log}
	var w *trace.Writer
	if cfg.Out != "" {
		m := manifest(cfg, ns.Netns, sel, ps.status)
		m.Maps = ps.maps
		if w, err = trace.Create(cfg.Out, m); err != nil {
			return nil, fmt.Errorf("create trace: %w", err)
		}
		res.Dir, rec.Writer = cfg.Out, w
	}
	runCtx, cancel := context.WithCancel(ctx)
	if cfg.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
	}
	defer cancel()
	start := time.Now()
	seenNotes := 0
	rec.OnInterval = func(end time.Time, iv *trace.Interval) {
		res.Intervals++
		s := summarise(end, iv, tr, ps.has("softirq"), cfg.TopFlows)
		if n := tr.Notes(); len(n) > seenNotes {
			s.Notes, seenNotes = n[seenNotes:], len(n)
		}
		if cfg.Stream != nil {
			cfg.Stream.Interval(end, iv)
		}
		if cfg.Metrics != nil {
			cfg.Metrics.Observe(iv)
			if s.SoftirqOK {
				cfg.Metrics.SetBusiestSoftirq(s.CPU, s.SoftirqRatio, s.SoftirqSource)
			}
			if s.RTTOK {
				cfg.Metrics.SetRTTP50(s.RTTP50)
			}
		}
		// The final interval after --duration or Ctrl-C is the short rest
		// after the last full one: in the trace, not printed (it repeated
		// the last line's elapsed time with rates of a few ms).
		if runCtx.Err() == nil || s.Interval >= cfg.Interval/2 {
			s.write(cfg.W, end.Sub(start), cfg.Duration)
		}
		if cfg.OnInterval != nil {
			cfg.OnInterval(s)
		}
	}
	runErr := rec.Run(runCtx)
	res.Notes = tr.Notes()
	res.Status = measure.Status(ctx, runErr)
	if w != nil {
		if err := w.Close(time.Now().UTC(), res.Status); err != nil {
			return res, errors.Join(runErr, fmt.Errorf("close trace: %w", err))
		}
	}
	return res, runErr
}

// selectIfaces discovers, plans and selects, then builds the tracker.
func selectIfaces(ns *linkstats.NS, cfg Config, log *slog.Logger) (*ifaces.Tracker, ifaces.Selection, error) {
	links, err := linkstats.Discover(ns)
	if err != nil {
		return nil, ifaces.Selection{}, err
	}
	named := map[string]int64{}
	for k, v := range cfg.LinkSpeeds {
		if k != "" {
			named[k] = v
		}
	}
	if err := ifaces.ApplySpeeds(links, named); err != nil {
		return nil, ifaces.Selection{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	sel, err := ifaces.Select(ns.Handle, links, ifaces.Plan(links), cfg.Select)
	if err != nil {
		return nil, sel, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if v, ok := cfg.LinkSpeeds[""]; ok {
		for gi := range sel.Groups {
			for ci := range sel.Groups[gi].Counted {
				mbps := v
				sel.Groups[gi].Counted[ci].SpeedMbps, sel.Groups[gi].Counted[ci].SpeedNote = &mbps, "--link-speed"
			}
		}
	}
	return ifaces.NewTracker(ns, sel, cfg.LinkSpeeds, log), sel, nil
}

func printHeader(w io.Writer, sel ifaces.Selection, ps *probes) {
	for _, why := range sel.Why {
		fmt.Fprintf(w, "selected %s\n", why)
	}
	for _, g := range sel.Groups {
		fmt.Fprintf(w, "counting (%s): %s\n", g.Shape, g.Reason)
		for _, c := range g.Counted {
			speed := c.SpeedNote
			if c.SpeedMbps != nil {
				speed = fmt.Sprintf("%.1f Gbit/s (%s)", float64(*c.SpeedMbps)/1e3, c.SpeedNote)
			}
			fmt.Fprintf(w, "  %s: rated %s\n", c.Name, speed)
		}
	}
	attached := 0
	for _, p := range ps.status {
		if p.Attached {
			attached++
		}
	}
	if attached == 0 {
		fmt.Fprintf(w, "bpf probes off (%s): no flows or RTT; softirq from /proc/stat\n", ps.status[0].Reason)
	}
	fmt.Fprintln(w, "rates: decimal Gbit/s (10^9 bit/s), netlink counters (L2, headers included) over the measured interval; Ctrl-C stops")
}

func manifest(cfg Config, netns uint64, sel ifaces.Selection, probes []trace.Probe) trace.Manifest {
	m := measure.NewManifest(cfg.ToolVersion, cfg.Argv, cfg.Interval, map[string]any{"command": "watch", "interval_ns": cfg.Interval.Nanoseconds(),
		"duration_ns": cfg.Duration.Nanoseconds(), "iface": cfg.Select.Names, "driver": cfg.Select.Drivers,
		"no_bpf": cfg.NoBPF, "netns": netns, "flow_entries": flowEntries(cfg.FlowEntries)})
	m.Probes = probes
	for _, g := range sel.Groups {
		for _, l := range g.Members {
			role := "counted (" + string(g.Shape) + ")"
			if !g.Counts(l.Index) {
				role = "not counted: mirrored by " + g.Counted[0].Name
			}
			m.Interfaces = append(m.Interfaces, measure.Interface(l, role, cfg.Netns))
		}
	}
	return m
}

// nicSampler returns the sampler of the counted interfaces' driver
// statistics (the nics table, ethtool -S), nil (logged) when no ethtool
// socket could be opened; the caller closes it. It reads by name: an
// interface removed or renamed during the run has no more rows (logged
// once).
func nicSampler(netns uint64, do func(func() error) error, sel ifaces.Selection, log *slog.Logger) *nicstats.Sampler {
	var links []nicstats.Link
	for _, c := range sel.Counted() {
		links = append(links, nicstats.Link{Netns: netns, Do: do, Ifname: c.Name})
	}
	if len(links) == 0 {
		return nil
	}
	s, err := nicstats.New(links)
	if err != nil {
		log.Warn("no driver statistics (nics table)", "err", err)
		return nil
	}
	return s
}
