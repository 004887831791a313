package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/measure/blobrun"
	"github.com/netprof/netprof/measure/host"
	"github.com/netprof/netprof/measure/jsonstream"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/traffic/blob"
)

const blobAuthHelp = "Credentials come from the environment or the URL, never from flags: a SAS in the URL,\n" +
	"AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY, or (https only)\n" +
	"DefaultAzureCredential (Entra ID: environment, workload or managed identity, Azure CLI).\n" +
	"Every HTTP attempt is counted inside the SDK's retry loop: requests, 2xx, 503 (with its\n" +
	"x-ms-error-code), 500, other, retries, latency; one traffic row per URL per interval.\n" +
	"The host is recorded as by `netprof watch --out`: the counted interfaces' netlink counters\n" +
	"(--iface/--driver, default: the default route's) and, as root, the BPF probes.\n" +
	"Flags go before the URLs."

func blobCommand(log *slog.Logger) *cli.Command {
	subs := []*cli.Command{blobPullCommand(log), blobPushCommand(log), blobBenchCommand(log)}
	for _, s := range subs {
		s.OnUsageError = onUsageError
	}
	return &cli.Command{
		Name:        "blob",
		Usage:       "Azure Blob storage pull / push / bench like azcopy, every HTTP attempt and 503 counted and recorded",
		Description: blobAuthHelp,
		Subcommands: subs,
	}
}

// blobFlags are the flags every blob command takes.
func blobFlags() []cli.Flag {
	d := blob.DefaultOptions()
	return []cli.Flag{
		&cli.IntFlag{Name: "concurrency", Value: d.Concurrency, Usage: "requests (blocks) in flight", EnvVars: []string{"NETPROF_CONCURRENCY"}},
		&cli.StringFlag{Name: "block-size", Value: "8MiB", Usage: "bytes per ranged GET or staged block: KiB/MiB binary, KB/MB decimal", EnvVars: []string{"NETPROF_BLOCK_SIZE"}},
		&cli.IntFlag{Name: "max-retries", Value: d.MaxRetries, Usage: "retries per request after the first attempt (0: none)", EnvVars: []string{"NETPROF_MAX_RETRIES"}},
		&cli.DurationFlag{Name: "retry-delay", Value: d.RetryDelay, Usage: "base of the exponential back-off between retries", EnvVars: []string{"NETPROF_RETRY_DELAY"}},
		&cli.DurationFlag{Name: "max-retry-delay", Value: d.MaxRetryDelay, Usage: "longest back-off between retries", EnvVars: []string{"NETPROF_MAX_RETRY_DELAY"}},
		&cli.DurationFlag{Name: "try-timeout", Usage: "limit on one attempt (0: none)", DefaultText: "none", EnvVars: []string{"NETPROF_TRY_TIMEOUT"}},
		&cli.StringFlag{Name: "auth", Value: string(blob.AuthAuto), Usage: "auto, shared-key, sas, entra or anonymous", EnvVars: []string{"NETPROF_AUTH"}},
		&cli.DurationFlag{Name: "interval", Value: blobrun.DefaultConfig("").Interval, Usage: "sampling interval (one traffic row per URL per interval)", EnvVars: []string{"NETPROF_INTERVAL"}},
		&cli.StringFlag{Name: "out", Usage: "run directory", DefaultText: "./runs/<UTC timestamp>", EnvVars: []string{"NETPROF_OUT"}},
		&cli.StringFlag{Name: "upload", Usage: "container URL [/prefix] to copy the run directory to (host=/date=/run= layout)", EnvVars: []string{"NETPROF_UPLOAD"}},
		&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON", EnvVars: []string{"NETPROF_JSON"}},
		&cli.BoolFlag{Name: "json-stream", Usage: "print one JSON object per line on stdout as the run goes: " +
			`{"event":"interval",...,"data":{TABLE:[ROW...]}} per interval (the trace's table and column names), then ` +
			`{"event":"end","data":the --json summary}`, EnvVars: []string{"NETPROF_JSON_STREAM"}},
		&cli.BoolFlag{Name: "no-bpf", Usage: "no BPF probes: the trace gets netlink interface counters and the blob rows only", EnvVars: []string{"NETPROF_NO_BPF"}},
		hostProbesFlag(),
		&cli.StringFlag{Name: "prometheus", Usage: "serve the figures as Prometheus metrics at ADDR (host:port) during the run", EnvVars: []string{"NETPROF_PROMETHEUS"}},
		flowEntriesFlag(),
	}
}

func blobPullCommand(log *slog.Logger) *cli.Command {
	return &cli.Command{
		Name:      "pull",
		Usage:     "download blobs with parallel ranged GETs",
		ArgsUsage: "URL...",
		Description: "Several URLs are pulled at once, their blocks interleaved over the workers; with --shard\n" +
			"the URLs are replicas of one blob (other accounts or containers) and block i comes from\n" +
			"replica i mod n. Example: netprof blob pull --concurrency 32 --block-size 16MiB \\\n" +
			"  https://acct.blob.core.windows.net/data/big.bin\n\n" + blobAuthHelp + "\n\n" + probeGroupsHelp(),
		Flags: append(append(blobFlags(), selectFlags()...),
			&cli.StringFlag{Name: "sink", Value: blob.SinkDiscard, Usage: "discard, a FILE, or a DIR (existing, or ending in /) for DIR/CONTAINER/BLOB", EnvVars: []string{"NETPROF_SINK"}},
			&cli.BoolFlag{Name: "shard", Usage: "the URLs are replicas of one blob: spread its blocks over them", EnvVars: []string{"NETPROF_SHARD"}},
		),
		Action: func(c *cli.Context) error {
			return runBlob(c, blobrun.CmdPull, log, func(cfg *blobrun.Config) error {
				cfg.Sink, cfg.Shard = c.String("sink"), c.Bool("shard")
				return nil
			})
		},
	}
}

func blobPushCommand(log *slog.Logger) *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "upload synthetic data or a file with staged blocks + one block list per blob",
		ArgsUsage: "URL...",
		Description: "Each URL receives the whole source, staged in --block-size blocks (Put Block) and\n" +
			"committed with Put Block List: idempotent under retries, block size honoured at every size.\n" +
			"A container that does not exist is created (like azcopy) and the summary says so; the\n" +
			"existence check's 404 for a new blob or container is an expected answer, not an HTTP error.\n" +
			"Example: netprof blob push --size 300GB --block-size 64MiB --delete-after https://acct.blob.core.windows.net/c/x\n\n" +
			blobAuthHelp + "\n\n" + probeGroupsHelp(),
		Flags: append(append(blobFlags(), selectFlags()...),
			&cli.StringFlag{Name: "size", Usage: "bytes of synthetic data (e.g. 300GB, 1GiB)", EnvVars: []string{"NETPROF_SIZE"}},
			&cli.StringFlag{Name: "file", Usage: "push this file instead of synthetic data", EnvVars: []string{"NETPROF_FILE"}},
			&cli.BoolFlag{Name: "delete-after", Usage: "delete each blob once committed", EnvVars: []string{"NETPROF_DELETE_AFTER"}},
		),
		Action: func(c *cli.Context) error {
			return runBlob(c, blobrun.CmdPush, log, func(cfg *blobrun.Config) error {
				cfg.File, cfg.DeleteAfter = c.String("file"), c.Bool("delete-after")
				var err error
				cfg.Size, err = parseSize("size", c.String("size"))
				return err
			})
		},
	}
}

func blobBenchCommand(log *slog.Logger) *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "create test blobs in a container, measure a pull or a push, delete them (like azcopy bench)",
		ArgsUsage: "CONTAINER_URL",
		Description: "Creates the container if it does not exist (and then deletes it). --mode pull pushes the\n" +
			"test blobs first (not recorded) and records the pull; --mode push records the push.\n" +
			"Example: netprof blob bench --mode pull --count 8 --size 1GiB https://acct.blob.core.windows.net/bench\n\n" +
			blobAuthHelp + "\n\n" + probeGroupsHelp(),
		Flags: append(append(blobFlags(), selectFlags()...),
			&cli.StringFlag{Name: "mode", Value: blob.KindPull, Usage: "pull or push", EnvVars: []string{"NETPROF_MODE"}},
			&cli.IntFlag{Name: "count", Value: 4, Usage: "number of test blobs", EnvVars: []string{"NETPROF_COUNT"}},
			&cli.StringFlag{Name: "size", Value: "1GiB", Usage: "bytes per test blob", EnvVars: []string{"NETPROF_SIZE"}},
		),
		Action: func(c *cli.Context) error {
			return runBlob(c, blobrun.CmdBench, log, func(cfg *blobrun.Config) error {
				cfg.Mode, cfg.Count = c.String("mode"), c.Int("count")
				var err error
				cfg.Size, err = parseSize("size", c.String("size"))
				return err
			})
		},
	}
}

// runBlob builds the configuration, runs it and prints the summary.
func runBlob(c *cli.Context, cmd string, log *slog.Logger, extra func(*blobrun.Config) error) error {
	cfg, err := blobConfig(c, cmd)
	if err == nil {
		err = extra(&cfg)
	}
	if err != nil {
		return usageError{err}
	}
	if c.Bool("json-stream") {
		if c.Bool("json") {
			return usageError{errors.New("--json and --json-stream exclude each other (the stream ends with the --json summary)")}
		}
		cfg.Stream = jsonstream.New(c.App.Writer)
	}
	var srv *metrics.Server
	if cfg.Metrics, srv, err = servePrometheus(c, os.Stderr, log); err != nil {
		return err
	}
	defer srv.Close()
	res, err := blobrun.Run(c.Context, cfg, version, os.Getenv, log)
	if blobrun.IsUsage(err) {
		return usageError{err}
	}
	if res != nil && res.Summary != nil {
		if perr := printBlobSummary(c, res.Summary, cfg.Stream); perr != nil {
			return perr
		}
	}
	if err != nil && res == nil {
		return err
	}
	var msgs []string
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	if res.UploadErr != nil {
		msgs = append(msgs, res.UploadErr.Error())
	}
	if len(msgs) > 0 {
		// One line: what failed, and where the trace is.
		return fmt.Errorf("%s; the trace is kept in %s", strings.Join(msgs, "; "), res.Dir)
	}
	if len(res.Uploaded) > 0 && !c.Bool("json") && cfg.Stream == nil {
		fmt.Fprintf(c.App.Writer, "uploaded %d files to %s\n", len(res.Uploaded), blob.Redact(cfg.Upload))
	}
	return nil
}

func blobConfig(c *cli.Context, cmd string) (blobrun.Config, error) {
	cfg := blobrun.DefaultConfig(cmd)
	cfg.URLs = c.Args().Slice()
	for _, a := range cfg.URLs {
		if strings.HasPrefix(a, "-") {
			return cfg, fmt.Errorf("flag %q after a URL: flags go before the URLs", a)
		}
	}
	bs, err := parseSize("block-size", c.String("block-size"))
	if err != nil {
		return cfg, err
	}
	cfg.Blob.Concurrency, cfg.Blob.BlockSize = c.Int("concurrency"), bs
	cfg.Blob.MaxRetries = c.Int("max-retries")
	cfg.Blob.RetryDelay, cfg.Blob.MaxRetryDelay = c.Duration("retry-delay"), c.Duration("max-retry-delay")
	cfg.Blob.TryTimeout = c.Duration("try-timeout")
	cfg.Auth = blob.AuthMode(c.String("auth"))
	cfg.Interval, cfg.Out, cfg.Upload = c.Duration("interval"), c.String("out"), c.String("upload")
	cfg.Argv = os.Args
	speeds, err := speedOverrides(c.StringSlice("link-speed"))
	if err != nil {
		return cfg, err
	}
	cfg.Host = host.Config{Select: selector(c), LinkSpeeds: speeds, NoBPF: c.Bool("no-bpf")}
	if cfg.Host.Probes, err = probeset.Parse(c.String("probes")); err != nil {
		return cfg, err
	}
	cfg.Host.FlowEntries, err = flowEntries(c)
	return cfg, err
}

// parseSize parses a byte size flag ("" is 0).
func parseSize(flag, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := units.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flag, err)
	}
	return int64(n), nil
}

func printBlobSummary(c *cli.Context, s *blobrun.Summary, st *jsonstream.Stream) error {
	if st != nil {
		return st.End(s.JSON())
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(s.JSON())
	}
	return s.WriteText(c.App.Writer)
}
