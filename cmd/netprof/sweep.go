package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/measure/bench"
)

func sweepCommand(log *slog.Logger) *cli.Command {
	def := bench.DefaultConfig()
	flags := []cli.Flag{
		&cli.StringFlag{Name: "streams", Value: "1,4,16,64", Usage: "stream counts to run, comma-separated", EnvVars: []string{"NETPROF_STREAMS"}},
		&cli.StringFlag{Name: "block-size", Value: "128KiB", Usage: "block sizes to run, comma-separated: " + units.SizeHelp, EnvVars: []string{"NETPROF_BLOCK_SIZE"}},
		&cli.StringFlag{Name: "window", Usage: "SO_SNDBUF/SO_RCVBUF sizes to run, comma-separated; 0 = kernel autotuning (" + units.SizeHelp + ")", EnvVars: []string{"NETPROF_WINDOW"}},
	}
	return &cli.Command{
		Name:  "sweep",
		Usage: "run bench for every combination of streams, block size and window; keep each trace; print one table",
		Description: "Runs `netprof bench` once per combination (streams outermost), each with all of bench's other\n" +
			"flags (local test bed, or --peer), writing each trace to a subdirectory of --out\n" +
			"(streams4-block128KiB[-window4MiB]), then prints one table: configuration, peak, steady state and\n" +
			"whole run (decimal Gbit/s, each run's primary counter), sender retransmits and the busiest CPU %\n" +
			"(NET_RX softirq with the softirq probe, else /proc/stat's softirq of every vector; labelled so),\n" +
			"and flags the rate-limiter signature between consecutive runs (as analyze --compare).\n" +
			"A failed run is shown in the table and the sweep goes on (exit 1 at the end). Flags go before arguments.\n" +
			"Examples: netprof sweep --streams 1,4,16,64 --duration 10s --out /tmp/sweep1\n" +
			"          netprof sweep --peer 10.0.0.5 --streams 4,16 --block-size 64KiB,1MiB --window 0,16MiB\n\n" + probeGroupsHelp(),
		Flags:  append(flags, commonBenchFlags(def)...),
		Action: func(c *cli.Context) error { return runSweep(c, log) },
	}
}

func runSweep(c *cli.Context, log *slog.Logger) error {
	if c.NArg() > 0 {
		return usageError{fmt.Errorf("sweep takes no arguments (got %q); flags go before arguments", c.Args().Slice())}
	}
	if c.Bool("json-stream") {
		return usageError{errors.New("sweep has no --json-stream (its runs' traces are kept; --json prints the table)")}
	}
	sc, err := sweepConfig(c)
	if err != nil {
		return usageError{err}
	}
	if err := sc.Validate(); err != nil {
		return usageError{err}
	}
	if err := validate(sc.Base); err != nil {
		return err
	}
	done := func(i, n int, row bench.SweepRow) {
		fmt.Fprintf(c.App.ErrWriter, "netprof sweep: %d/%d %s: %s\n", i+1, n, filepath.Base(row.Dir), orNone(row.Status, row.Err))
	}
	rows, err := bench.Sweep(c.Context, sc, version, log, done)
	if errors.Is(err, bench.ErrPrivilege) {
		return usageError{err}
	}
	t := bench.NewSweepTable(rows)
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(t); jerr != nil {
			return jerr
		}
	} else if terr := t.WriteText(c.App.Writer); terr != nil {
		return terr
	}
	return err
}

func orNone(status string, err error) string {
	switch {
	case status != "":
		return status
	case err != nil:
		return "failed: " + err.Error()
	}
	return "-"
}

// sweepConfig reads sweep's flags: bench's shared ones plus the lists.
func sweepConfig(c *cli.Context) (bench.SweepConfig, error) {
	base, err := benchConfig(c)
	if err != nil {
		return bench.SweepConfig{}, err
	}
	sc := bench.SweepConfig{Base: base, Out: base.Out}
	if sc.Streams, err = intList("streams", c.String("streams")); err != nil {
		return sc, err
	}
	if sc.BlockSizes, err = sizeList("block-size", c.String("block-size"), false); err != nil {
		return sc, err
	}
	sc.Windows, err = sizeList("window", c.String("window"), true)
	return sc, err
}

func intList(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s %q: want positive whole numbers separated by commas", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// sizeList parses comma-separated sizes; zeroOK allows "0" (window:
// autotuning).
func sizeList(name, s string, zeroOK bool) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if zeroOK && f == "0" {
			out = append(out, 0)
			continue
		}
		z, err := parseSizeFlag(name, f)
		if err != nil {
			return nil, err
		}
		out = append(out, z)
	}
	return out, nil
}
