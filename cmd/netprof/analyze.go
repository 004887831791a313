package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/analysis/htmlreport"
	"github.com/netprof/netprof/measure/bench"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/blob"
)

func analyzeCommand() *cli.Command {
	return &cli.Command{
		Name:      "analyze",
		Usage:     "print the report of a recorded run from its files alone (no kernel needed)",
		ArgsUsage: "RUN_DIR | --compare RUN_A RUN_B [...] | --fleet DIR|CONTAINER_URL [...]",
		Description: "Reads manifest.json and the Parquet tables of RUN_DIR and prints throughput per direction\n" +
			"(peak / active window / steady state / whole run; application, interface, wire estimate),\n" +
			"per-CPU softirq load, RTT per flow and peer, BDP, retransmits and verdicts with their evidence.\n" +
			"Flags go before the run directories. Examples:\n" +
			"  netprof analyze --link-speed 100Gbit --target 80Gbit runs/20261130T090000Z\n" +
			"  netprof analyze --html report.html runs/20261130T090000Z\n" +
			"  netprof analyze --compare runs/streams4 runs/streams8 runs/streams16\n" +
			"  netprof analyze --fleet --egress-price 0.087USD runs/ https://acct.blob.core.windows.net/traces/netprof",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON (decimal units, units in keys)", EnvVars: []string{"NETPROF_JSON"}},
			&cli.StringFlag{Name: "html", Usage: "also write a self-contained HTML report with plots to `FILE`", EnvVars: []string{"NETPROF_HTML"}},
			&cli.StringFlag{Name: "units", Value: "decimal", Usage: "decimal (Gbit/s) or binary (Gibit/s, GiB/s)", EnvVars: []string{"NETPROF_UNITS"}},
			&cli.StringFlag{Name: "link-speed", Usage: "rated link speed with a unit, e.g. 10Gbit or 10000Mbit (overrides the manifest, including bench --link-speed)", EnvVars: []string{"NETPROF_LINK_SPEED"}},
			&cli.StringFlag{Name: "target", Usage: "target rate for the streams-needed figure, with a unit, e.g. 80Gbit", DefaultText: "the rated speed", EnvVars: []string{"NETPROF_TARGET"}},
			&cli.DurationFlag{Name: "expect-rtt", Value: analysis.DefaultThresholds().HairpinExpectRTT, Usage: "min RTT expected of the peer (hairpin rule; overrides bench --expect-rtt)",
				DefaultText: fmt.Sprintf("the run's bench --expect-rtt, else its --rtt, else %v", analysis.DefaultThresholds().HairpinExpectRTT), EnvVars: []string{"NETPROF_EXPECT_RTT"}},
			&cli.BoolFlag{Name: "full", Aliases: []string{"details"}, Usage: "print the whole report (per-CPU and per-flow tables, every verdict with evidence and thresholds, notes) instead of one screen", EnvVars: []string{"NETPROF_FULL"}},
			&cli.BoolFlag{Name: "compare", Usage: "line up several runs (e.g. a sweep) instead of reporting one", EnvVars: []string{"NETPROF_COMPARE"}},
			&cli.BoolFlag{Name: "fleet", Usage: "one row per run (host, start, peak / steady / whole run, hot core, RTT floor, retransmits, bytes, verdicts) " +
				"for every run directory under each argument: run directories, trees of them (e.g. the host=/date=/run= layout of --upload), " +
				"or a container URL [/prefix] of such a tree (downloaded to a temporary directory; credentials as for netprof blob)", EnvVars: []string{"NETPROF_FLEET"}},
			&cli.StringFlag{Name: "egress-price", Usage: "with --fleet: price per decimal GB (10^9 bytes) sent, with its currency, e.g. 0.087USD: each run's and the total egress cost, " +
				"for runs whose traffic left this host (a local test bed, loopback or blob emulator run is n/a: no egress)", EnvVars: []string{"NETPROF_EGRESS_PRICE"}},
			&cli.StringFlag{Name: "auth", Value: string(blob.AuthAuto), Usage: "with --fleet CONTAINER_URL: auto, shared-key, sas, entra or anonymous", EnvVars: []string{"NETPROF_AUTH"}},
		},
		Action: analyzeAction,
	}
}

// analyzeConfig is the analyze command's flags as plain values.
type analyzeConfig struct {
	Runs    []string
	JSON    bool
	HTML    string
	Compare bool
	Fleet   bool
	Price   *analysis.EgressPrice
	Auth    blob.AuthMode
	Options analysis.Options
}

// Validate checks the run count against the mode.
func (c analyzeConfig) Validate() error {
	switch {
	case c.Fleet && c.Compare:
		return errors.New("--fleet and --compare are two different tables: give one")
	case c.Fleet && c.HTML != "":
		return errors.New("--html writes one run's report; it does not combine with --fleet")
	case c.Fleet && len(c.Runs) == 0:
		return errors.New("--fleet needs run directories, trees of them or container URLs; flags go before them")
	case c.Fleet:
	case c.Price != nil:
		return errors.New("--egress-price goes with --fleet")
	case c.Compare && len(c.Runs) < 2:
		return fmt.Errorf("--compare needs at least two run directories (got %d); flags go before them", len(c.Runs))
	case !c.Compare && len(c.Runs) != 1:
		return fmt.Errorf("analyze needs exactly one RUN_DIR (got %d arguments); flags go before it", len(c.Runs))
	case c.Compare && c.HTML != "":
		return errors.New("--html writes one run's report; it does not combine with --compare")
	}
	return nil
}

func analyzeFlags(c *cli.Context) (analyzeConfig, error) {
	cfg := analyzeConfig{Runs: c.Args().Slice(), JSON: c.Bool("json"), HTML: c.String("html"), Compare: c.Bool("compare"),
		Fleet: c.Bool("fleet"), Auth: blob.AuthMode(c.String("auth"))}
	var err error
	if s := c.String("egress-price"); s != "" {
		p, err := analysis.ParseEgressPrice(s)
		if err != nil {
			return cfg, fmt.Errorf("--egress-price: %w", err)
		}
		cfg.Price = &p
	}
	if cfg.Options.Units, err = analysis.ParseUnits(c.String("units")); err != nil {
		return cfg, fmt.Errorf("--units: %w", err)
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"link-speed", &cfg.Options.LinkSpeedBps}, {"target", &cfg.Options.TargetBps}} {
		if s := c.String(f.name); s != "" {
			if *f.dst, err = analysis.ParseRate(s); err != nil {
				return cfg, fmt.Errorf("--%s: %w", f.name, err)
			}
		}
	}
	// Unset, --expect-rtt leaves the run's own (bench --expect-rtt), else
	// the default, to the analysis.
	if c.IsSet("expect-rtt") {
		if d := c.Duration("expect-rtt"); d <= 0 {
			return cfg, fmt.Errorf("--expect-rtt %v: must be positive", d)
		}
		cfg.Options.Thresholds.HairpinExpectRTT = c.Duration("expect-rtt")
	}
	return cfg, cfg.Validate()
}

func analyzeAction(c *cli.Context) error {
	cfg, err := analyzeFlags(c)
	if err != nil {
		return usageError{err}
	}
	if cfg.Compare {
		return compareRuns(c.App.Writer, cfg)
	}
	if cfg.Fleet {
		return fleetAnalyze(c.Context, c.App.Writer, cfg, os.Getenv)
	}
	rep, err := analyzeRun(cfg.Runs[0], cfg.Options)
	if err != nil {
		return err
	}
	if cfg.HTML != "" {
		if err := writeHTML(cfg.HTML, rep); err != nil {
			return err
		}
	}
	rep.Color = !cfg.JSON && isTerminal(c.App.Writer)
	return printReport(c, rep)
}

// analyzeRun opens and analyses one run directory; a missing directory is
// a usage error.
func analyzeRun(dir string, opts analysis.Options) (*analysis.Report, error) {
	run, err := trace.Open(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageError{err}
		}
		return nil, err
	}
	return analysis.Analyze(run, opts)
}

// compareRuns analyses each run in turn (keeping only its comparison row)
// and prints the comparison.
func compareRuns(w io.Writer, cfg analyzeConfig) error {
	rows := make([]analysis.CompareRow, 0, len(cfg.Runs))
	for _, dir := range cfg.Runs {
		rep, err := analyzeRun(dir, cfg.Options)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		rows = append(rows, analysis.CompareRowOf(rep))
	}
	cmp := analysis.Compare(rows, cfg.Options.Thresholds, cfg.Options.Units)
	if cfg.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cmp.JSON())
	}
	return cmp.WriteText(w)
}

// writeHTML writes the HTML report to path.
func writeHTML(path string, rep *analysis.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	werr := htmlreport.Write(f, rep, time.Now())
	if cerr := f.Close(); werr == nil && cerr != nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// isTerminal reports whether w is a terminal (colour only then) and
// NO_COLOR is unset.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func printReport(c *cli.Context, rep *analysis.Report) error {
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(rep.JSON())
	}
	if !c.Bool("full") {
		return rep.WriteSummary(c.App.Writer)
	}
	if err := rep.WriteText(c.App.Writer); err != nil {
		return err
	}
	return writeBenchSummary(c.App.Writer, rep.Manifest)
}

// writeBenchSummary prints what a bench or sweep run recorded beside its
// tables (manifest config.summary: CPU of both ends from /proc/stat and
// getrusage, the peer, the phases, the socket options as they took), as
// bench printed it at the end of the run. Other runs have none.
func writeBenchSummary(w io.Writer, m trace.Manifest) error {
	raw, ok := m.Config["summary"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Errorf("manifest config.summary: %w", err)
	}
	var s bench.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("manifest config.summary: %w", err)
	}
	return s.WriteText(w)
}
