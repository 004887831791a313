package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/cmd/netprof/internal/bench"
)

func benchCommand(log *slog.Logger) *cli.Command {
	def := bench.DefaultConfig()
	return &cli.Command{
		Name:  "bench",
		Usage: "run a TCP transfer over a local veth pair between two network namespaces, record it, report it",
		Description: "Creates two network namespaces joined by a veth pair (198.18.0.1/30 -> 198.18.0.2/30),\n" +
			"attaches the BPF probes, sends for --duration, samples every --interval into a run\n" +
			"directory (manifest.json + Parquet tables), removes the namespaces and prints the report.\n" +
			"--rtt D puts netprof's user-space delay line (a TUN device in each namespace) between them\n" +
			"instead of the veth pair, delaying each direction by D/2 (the line adds ~0.2-0.5 ms), and\n" +
			"raises tcp_rmem/tcp_wmem max to 64 MiB inside the namespaces (recorded in the manifest).\n" +
			"Needs root. Examples: netprof bench --streams 8 --duration 20s --out /tmp/run1\n" +
			"                      netprof bench --rtt 20ms --streams 16",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "duration", Value: def.Duration, Usage: "sending time, after all streams are connected", EnvVars: []string{"NETPROF_DURATION"}},
			&cli.IntFlag{Name: "streams", Value: def.Streams, Usage: "parallel TCP streams", EnvVars: []string{"NETPROF_STREAMS"}},
			&cli.StringFlag{Name: "block-size", Value: "128KiB", Usage: "bytes per write: KiB/MiB are binary (1024), KB/MB decimal (1000)", EnvVars: []string{"NETPROF_BLOCK_SIZE"}},
			&cli.DurationFlag{Name: "interval", Value: def.Interval, Usage: "sampling interval (one trace row set per interval)", EnvVars: []string{"NETPROF_INTERVAL"}},
			&cli.StringFlag{Name: "out", Usage: "run directory (default ./runs/<UTC timestamp>)", EnvVars: []string{"NETPROF_OUT"}},
			&cli.BoolFlag{Name: "no-bpf", Usage: "generator and netlink counters only; no BPF probes", EnvVars: []string{"NETPROF_NO_BPF"}},
			&cli.DurationFlag{Name: "rtt", Value: def.RTT, Usage: "round-trip time to add between the namespaces with the TUN delay line (D/2 each way); 0 = direct veth pair", EnvVars: []string{"NETPROF_RTT"}},
			&cli.IntFlag{Name: "port", Value: def.Port, Usage: "receiver TCP port inside the test bed", EnvVars: []string{"NETPROF_PORT"}},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON", EnvVars: []string{"NETPROF_JSON"}},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError{fmt.Errorf("bench takes no arguments (got %q); flags go before arguments", c.Args().Slice())}
			}
			cfg, err := benchConfig(c)
			if err != nil {
				return usageError{err}
			}
			res, err := bench.Run(c.Context, cfg, version, log)
			if errors.Is(err, bench.ErrPrivilege) {
				return usageError{err}
			}
			if res != nil && res.Report != nil {
				if perr := printReport(c, res.Report); perr != nil {
					return perr
				}
			}
			if res != nil && err != nil {
				fmt.Fprintf(os.Stderr, "netprof: trace with every completed interval kept in %s (status %q)\n", res.Dir, res.Status)
			}
			return err
		},
	}
}

func benchConfig(c *cli.Context) (bench.Config, error) {
	cfg := bench.DefaultConfig()
	cfg.Duration = c.Duration("duration")
	cfg.Streams = c.Int("streams")
	cfg.Interval = c.Duration("interval")
	cfg.Out = c.String("out")
	cfg.NoBPF = c.Bool("no-bpf")
	cfg.Port = c.Int("port")
	cfg.RTT = c.Duration("rtt")
	cfg.Argv = os.Args
	bs, err := humanize.ParseBytes(c.String("block-size"))
	if err != nil {
		return cfg, fmt.Errorf("--block-size %q: %w", c.String("block-size"), err)
	}
	if bs > 1<<40 {
		return cfg, fmt.Errorf("--block-size %q: too large", c.String("block-size"))
	}
	cfg.BlockSize = int(bs)
	if cfg.Duration <= 0 {
		return cfg, fmt.Errorf("--duration %v: must be positive", cfg.Duration)
	}
	_ = time.Second
	return cfg, cfg.Validate()
}
