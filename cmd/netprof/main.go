// Command netprof is a kernel-level network profiler: BPF probes on kernel
// tracepoints, a built-in traffic generator, a Parquet trace per run, and
// an analysis that says where the ceiling is.
//
// Exit codes: 0 ok, 1 the measurement failed, 2 bad usage or missing
// privilege.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// Exit codes.
const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError marks errors that are the user's to fix (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	os.Exit(run(ctx, os.Args, log))
}

func run(ctx context.Context, args []string, log *slog.Logger) int {
	app := newApp(log)
	return exitCode(ctx, app.RunContext(ctx, args), os.Stderr)
}

// exitCode prints err (once) on w and returns the exit code. A command
// interrupted by Ctrl-C or SIGTERM is reported as interrupted, not with
// the bare "context canceled" of whatever it was doing.
func exitCode(ctx context.Context, err error, w io.Writer) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Fprintln(w, "netprof: interrupted")
		return exitFailed
	case errors.As(err, &ue):
		fmt.Fprintf(w, "netprof: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(w, "netprof: %v\n", err)
	return exitFailed
}

func newApp(log *slog.Logger) *cli.App {
	return &cli.App{
		Name:    "netprof",
		Usage:   "kernel-level network profiler: BPF probes + traffic generator + Parquet traces + analysis",
		Version: version,
		Description: "All rates are decimal Gbit/s (10^9 bit/s). Flags go before positional arguments.\n" +
			"Every flag can also be set from the environment as NETPROF_<FLAG> (e.g. NETPROF_STREAMS=8).",
		Commands: withUsageErrors(
			benchCommand(log),
			sweepCommand(log),
			analyzeCommand(),
			ifacesCommand(),
			pathCommand(),
			watchCommand(log),
			blobCommand(log),
			trafficCommand(log),
		),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("unknown command %q (see netprof --help)", c.Args().First())}
			}
			return cli.ShowAppHelp(c)
		},
		// Errors are printed once, by run.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

func onUsageError(_ *cli.Context, err error, _ bool) error { return usageError{err} }

// withUsageErrors makes flag-parsing errors of every command exit 2.
func withUsageErrors(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		c.OnUsageError = onUsageError
	}
	return cmds
}
