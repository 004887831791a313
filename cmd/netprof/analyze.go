package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/trace"
)

func analyzeCommand() *cli.Command {
	return &cli.Command{
		Name:      "analyze",
		Usage:     "print the report of a recorded run from its files alone (no kernel needed)",
		ArgsUsage: "RUN_DIR",
		Description: "Reads manifest.json and the Parquet tables of RUN_DIR and prints throughput\n" +
			"(peak / steady state / whole run, decimal Gbit/s), per-CPU NET_RX softirq share,\n" +
			"TCP RTT and retransmits. Example: netprof analyze --json runs/20261130T090000Z",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON", EnvVars: []string{"NETPROF_JSON"}},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError{fmt.Errorf("analyze needs exactly one RUN_DIR (got %d arguments); flags go before it", c.NArg())}
			}
			run, err := trace.Open(c.Args().First())
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return usageError{err}
				}
				return err
			}
			rep, err := analysis.FromRun(run)
			if err != nil {
				return err
			}
			rep.Dir = run.Dir
			return printReport(c, rep)
		},
	}
}

func printReport(c *cli.Context, rep *analysis.Report) error {
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(rep.JSON())
	}
	return rep.WriteText(c.App.Writer)
}
