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
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

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

// onUsageError makes flag-parsing errors exit 2, said in the terms the
// user typed (flagError).
func onUsageError(c *cli.Context, err error, _ bool) error {
	var cmd *cli.Command
	path := []string{"netprof"}
	if c != nil {
		cmd = c.Command
		var names []string
		for _, l := range c.Lineage() {
			if l.Command != nil && l.Command.Name != "" && l.Command.Name != "netprof" {
				names = append([]string{l.Command.Name}, names...)
			}
		}
		path = append(path, names...)
	}
	return usageError{flagError(cmd, strings.Join(path, " "), err)}
}

// Errors of Go's flag package, which urfave/cli passes on.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	needsValue    = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
	invalidValue  = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
)

// flagError rewrites a flag-parsing error of cmd (called as path, e.g.
// "netprof blob pull"): flags are named --name as the help writes them
// (the flag package says -name), an unknown one points to the command's
// --help, and a bad value says what the flag wants (a duration's unit, a
// whole number, true or false).
func flagError(cmd *cli.Command, path string, err error) error {
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("unknown flag --%s (see %s --help)", m[1], path)
	}
	if m := needsValue.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("--%s needs a value (see %s --help)", m[1], path)
	}
	m := invalidValue.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	value, name, why := m[1], m[2], m[3]
	switch findFlag(cmd, name).(type) {
	case *cli.DurationFlag:
		if _, derr := time.ParseDuration(value); derr != nil && strings.Contains(derr.Error(), "missing unit") {
			return fmt.Errorf("--%s %q: a duration needs a unit, e.g. 150us, 2ms, 1s or 1m30s", name, value)
		}
		return fmt.Errorf("--%s %q: not a duration (a number and a unit, e.g. 150us, 2ms, 1s or 1m30s)", name, value)
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		return fmt.Errorf("--%s %q: want a whole number", name, value)
	case *cli.BoolFlag:
		return fmt.Errorf("--%s=%q: want true or false", name, value)
	}
	return fmt.Errorf("--%s %q: %s", name, value, why)
}

// findFlag returns cmd's flag called name (or alias), nil when none.
func findFlag(cmd *cli.Command, name string) cli.Flag {
	if cmd == nil {
		return nil
	}
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// withUsageErrors makes flag-parsing errors of every command exit 2.
func withUsageErrors(cmds ...*cli.Command) []*cli.Command {
	for _, c := range cmds {
		c.OnUsageError = onUsageError
	}
	return cmds
}
