// Package watch is `netprof watch`: a per-interval live view of the host's
// network without a traffic generator. Each interval it prints the decimal
// Gbit/s received and sent on each counted interface (netlink delta over
// the measured interval, after the counting rule of measure/ifaces), the
// busiest CPU's NET_RX softirq share, the top flows by bytes and the TCP
// RTT median; optionally it records the same into a run directory and
// serves it as Prometheus metrics.
package watch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/measure"
	"github.com/netprof/netprof/measure/host"
	"github.com/netprof/netprof/measure/ifaces"
	"github.com/netprof/netprof/measure/jsonstream"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/trace"
)

// ErrUsage is wrapped by Run's errors that are the user's to fix (an
// interface or driver that matches nothing, a bad --link-speed).
var ErrUsage = host.ErrUsage

// Config is what `netprof watch` was asked to do.
type Config struct {
	// Host selects the namespace, its counted interfaces and the probes.
	Host host.Config
	// Stream, if set, gets every interval as a JSON line (--json-stream).
	Stream   *jsonstream.Stream
	Interval time.Duration // default 1 s
	Duration time.Duration // 0: until ctx is cancelled (Ctrl-C)
	Out      string        // run directory; "" records nothing
	TopFlows int           // default 3
	// Metrics, if set, receives every interval (see metrics.Exporter).
	Metrics *metrics.Exporter
	// W receives the live lines (default os.Stdout).
	W           io.Writer
	Argv        []string
	ToolVersion string
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
	h, err := host.Open(cfg.Host, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := h.Close(); err != nil {
			log.Error("probes", "err", err)
		}
	}()
	tr := h.Tracker()
	res := &Result{Counted: h.Selection().Counted(), Probes: h.Probes()}
	printHeader(cfg.W, h.Selection(), h.Probes())
	rec := &measure.Recorder{Samplers: h.Samplers(), Period: cfg.Interval, Log: log}
	runCtx, cancel := context.WithCancel(ctx)
	if cfg.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cfg.Duration)
	}
	defer cancel()
	start := time.Now()
	seenNotes := 0
	hist := connHistory{}
	rec.OnInterval = func(end time.Time, iv *trace.Interval) {
		res.Intervals++
		s := summarise(end, iv, tr, h.HasProbe("softirq"), cfg.TopFlows, &hist)
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
	run := func(w *trace.Writer) error {
		rec.Writer = w
		err := rec.Run(runCtx)
		res.Notes = tr.Notes()
		return err
	}
	if cfg.Out == "" {
		err = run(nil)
		res.Status = measure.Status(ctx, err)
		return res, err
	}
	res.Status, err = measure.Trace(ctx, cfg.Out, manifest(cfg, h), nil, run)
	if res.Status == "" { // no trace
		return nil, err
	}
	res.Dir = cfg.Out
	return res, err
}

func printHeader(w io.Writer, sel ifaces.Selection, probes []trace.Probe) {
	var lines []string
	for _, why := range sel.Why {
		lines = append(lines, "selected "+why)
	}
	var l2, noL2 []string
	for _, g := range sel.Groups {
		lines = append(lines, fmt.Sprintf("counting (%s): %s", g.Shape, g.Reason))
		for _, c := range g.Counted {
			speed := c.SpeedNote
			if c.SpeedMbps != nil {
				speed = fmt.Sprintf("%.1f Gbit/s (%s)", float64(*c.SpeedMbps)/1e3, c.SpeedNote)
			}
			if c.SpeedMbps == nil {
				speed += " (set --link-speed)"
			}
			lines = append(lines, fmt.Sprintf("  %s: rated %s", c.Name, speed))
			if why := noL2Header(c.Link); why != "" {
				noL2 = append(noL2, c.Name+" ("+why+")")
			} else {
				l2 = append(l2, c.Name)
			}
		}
	}
	attached, netdev, iter := 0, false, false
	for _, p := range probes {
		if p.Attached {
			attached++
			netdev, iter = netdev || p.Name == "np_nd_rx", iter || p.Name == "np_tcp_iter"
		}
	}
	if attached == 0 {
		lines = append(lines, fmt.Sprintf("bpf probes off (%s): no flows or RTT; softirq from /proc/stat", probes[0].Reason))
	}
	lines = append(lines, "rates: decimal Gbit/s (10^9 bit/s) over the measured interval, interfaces by their netlink counters: "+
		countedBytes(l2, noL2))
	flows := "flows: connections, sender -> receiver, with the ends on this host (both ends: their rows merged, " +
		"the sending end's figures); rate: "
	switch {
	case netdev || iter:
		if netdev {
			flows += "L2 bytes both ways (netdev probe)"
		} else {
			flows += "payload bytes both ways (socket iterator: acked + received; no netdev probe)"
		}
		lines = append(lines, flows+"; rtt: p50 of tcp_probe samples, else the socket's latest sample")
	case attached > 0:
		lines = append(lines, "flows: none (neither the netdev probe nor the socket iterator is attached)")
	}
	lines = append(lines, "Ctrl-C stops")
	for _, l := range lines {
		writeWrapped(w, "", "    ", []string{l})
	}
}

// noL2Header says why an interface's netlink counter has no L2 header
// (loopback: IP packets, lo counts after eth_type_trans; a TUN device:
// IP packets), "" when it counts L2 headers. The manifest does not tell
// TUN from TAP: tuntap is taken for TUN, as in the report.
func noL2Header(l linkstats.Link) string {
	switch {
	case l.Driver == "loopback" || l.Name == "lo":
		return "loopback: IP packets, no L2 header"
	case l.Driver == "tuntap" || l.Driver == "tun":
		return "TUN device: IP packets, no L2 header"
	}
	return ""
}

// countedBytes says what the counted interfaces' netlink bytes include.
func countedBytes(l2, noL2 []string) string {
	switch {
	case len(noL2) == 0:
		return "L2 headers included"
	case len(l2) == 0:
		return strings.Join(noL2, ", ")
	}
	return strings.Join(l2, ", ") + " L2 headers included; " + strings.Join(noL2, ", ")
}

// manifest describes a watch run: the command's settings, the host's
// interfaces, probes and maps.
func manifest(cfg Config, h *host.Host) trace.Manifest {
	hc := cfg.Host
	m := measure.NewManifest(cfg.ToolVersion, cfg.Argv, cfg.Interval, map[string]any{"command": "watch", "interval_ns": cfg.Interval.Nanoseconds(),
		"duration_ns": cfg.Duration.Nanoseconds(), "iface": hc.Select.Names, "driver": hc.Select.Drivers,
		"no_bpf": hc.NoBPF, "netns": h.Netns(), "flow_entries": hc.FlowTable()})
	m.Probes, m.Interfaces, m.Maps = h.Probes(), h.Interfaces(), h.Maps()
	return m
}
