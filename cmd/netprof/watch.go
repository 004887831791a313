package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/measure/host"
	"github.com/netprof/netprof/measure/jsonstream"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/measure/watch"
	"github.com/netprof/netprof/trace"
)

func watchCommand(log *slog.Logger) *cli.Command {
	return &cli.Command{
		Name:  "watch",
		Usage: "live per-interval view of the host's network (no traffic generator) until Ctrl-C",
		Description: "Every --interval prints, per counted interface, decimal Gbit/s received and sent (the\n" +
			"netlink counter's delta over the measured interval, like a careful `sar -n DEV 1`), the\n" +
			"busiest CPU's softirq share (/proc/stat, every vector; NET_RX alone with --probes deep),\n" +
			"the top TCP connections by bytes, each once as sender -> receiver (both ends on this host, e.g. lo:\n" +
			"merged), and the TCP RTT median of the sending ends (BPF, root: by default the socket iterator's\n" +
			"payload bytes and latest RTT samples, no per-packet hook; --probes deep: L2 bytes, per-ACK RTT).\n" +
			"lo and TUN devices count IP packets (no L2 header). Mirrored interfaces\n" +
			"(VF + synthetic NIC, bond, bridge, macvlan) are counted once (see `netprof ifaces`); an\n" +
			"interface renamed mid-run is followed by index. --out records the same into a run\n" +
			"directory; --prometheus serves it at http://ADDR/metrics.\n" +
			"Example: netprof watch --iface auto --duration 60s --out /tmp/w1 --prometheus 127.0.0.1:9464\n\n" + probeGroupsHelp(),
		Flags: append(selectFlags(),
			&cli.DurationFlag{Name: "interval", Value: time.Second, Usage: "sampling interval", EnvVars: []string{"NETPROF_INTERVAL"}},
			&cli.DurationFlag{Name: "duration", Usage: "stop after this long", DefaultText: "until Ctrl-C", EnvVars: []string{"NETPROF_DURATION"}},
			&cli.StringFlag{Name: "out", Usage: "record into this run directory (manifest.json + Parquet tables)", EnvVars: []string{"NETPROF_OUT"}},
			&cli.BoolFlag{Name: "no-bpf", Usage: "netlink and /proc only; no BPF probes (no flows, no RTT)", EnvVars: []string{"NETPROF_NO_BPF"}},
			hostProbesFlag(),
			&cli.StringFlag{Name: "prometheus", Usage: "serve the figures as Prometheus metrics at ADDR (host:port) while watching", EnvVars: []string{"NETPROF_PROMETHEUS"}},
			&cli.IntFlag{Name: "top", Value: 3, Usage: "connections (top flows) to show per interval", EnvVars: []string{"NETPROF_TOP"}},
			&cli.BoolFlag{Name: "json-stream", Usage: "instead of the view, print one JSON object per line on stdout: " +
				`{"event":"interval",...,"data":{TABLE:[ROW...]}} per interval (the trace's table and column names), then ` +
				`{"event":"end","data":{intervals, dir, status, notes, probes}}`, EnvVars: []string{"NETPROF_JSON_STREAM"}},
			flowEntriesFlag(),
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError{fmt.Errorf("watch takes no arguments (got %q); flags go before arguments", c.Args().Slice())}
			}
			cfg, err := watchConfig(c)
			if err != nil {
				return usageError{err}
			}
			var srv *metrics.Server
			if cfg.Metrics, srv, err = servePrometheus(c, os.Stderr, log); err != nil {
				return err
			}
			defer srv.Close()
			if c.Bool("json-stream") {
				cfg.Stream, cfg.W = jsonstream.New(c.App.Writer), io.Discard
			}
			res, err := watch.Run(c.Context, cfg, log)
			if errors.Is(err, watch.ErrUsage) || isUsage(err) {
				return usageError{err}
			}
			if cfg.Stream != nil && res != nil {
				end := watchEnd{Intervals: res.Intervals, Dir: res.Dir, Status: res.Status, Notes: res.Notes, Probes: res.Probes}
				if serr := cfg.Stream.End(end); serr != nil && err == nil {
					err = serr
				}
			}
			if res != nil && res.Dir != "" {
				fmt.Fprintf(os.Stderr, "netprof: %d intervals recorded in %s (status %q)\n", res.Intervals, res.Dir, res.Status)
			}
			return err
		},
	}
}

func watchConfig(c *cli.Context) (watch.Config, error) {
	speeds, err := speedOverrides(c.StringSlice("link-speed"))
	if err != nil {
		return watch.Config{}, err
	}
	cfg := watch.Config{
		Host:     host.Config{Select: selector(c), LinkSpeeds: speeds, NoBPF: c.Bool("no-bpf")},
		Interval: c.Duration("interval"), Duration: c.Duration("duration"),
		Out: c.String("out"), TopFlows: c.Int("top"), W: c.App.Writer,
		Argv: os.Args, ToolVersion: version,
	}
	if cfg.Host.Probes, err = probeset.Parse(c.String("probes")); err != nil {
		return cfg, err
	}
	if cfg.Host.FlowEntries, err = flowEntries(c); err != nil {
		return cfg, err
	}
	switch {
	case cfg.Interval < 10*time.Millisecond:
		return cfg, fmt.Errorf("--interval %v: must be at least 10ms", cfg.Interval)
	case cfg.Duration < 0:
		return cfg, fmt.Errorf("--duration %v: must not be negative", cfg.Duration)
	case cfg.TopFlows < 0:
		return cfg, fmt.Errorf("--top %d: must not be negative", cfg.TopFlows)
	}
	return cfg, nil
}

// servePrometheus serves --prometheus of watch, bench and blob: without
// the flag it returns nil (a nil *metrics.Server's Close does nothing);
// with it, the exporter the run records into and its server, announced on
// w. A server that cannot listen is a usage error.
func servePrometheus(c *cli.Context, w io.Writer, log *slog.Logger) (*metrics.Exporter, *metrics.Server, error) {
	addr := c.String("prometheus")
	if addr == "" {
		return nil, nil, nil
	}
	e := metrics.New()
	srv, err := metrics.Serve(addr, e, log)
	if err != nil {
		return nil, nil, usageError{err}
	}
	fmt.Fprintf(w, "netprof: prometheus metrics at http://%s/metrics\n", srv.Addr())
	return e, srv, nil
}

// watchEnd is the end event of watch --json-stream.
type watchEnd struct {
	Intervals int           `json:"intervals"`
	Dir       string        `json:"run_dir,omitempty"`
	Status    string        `json:"status"`
	Notes     []string      `json:"notes"`
	Probes    []trace.Probe `json:"probes"`
}

// hostProbesFlag is --probes of the commands that watch the host (watch,
// blob): the probe groups they load, default the hook-free set.
func hostProbesFlag() cli.Flag { return probesFlag("load") }
