package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
)

// trafficCommand groups the two-machine traffic generator's commands.
func trafficCommand(log *slog.Logger) *cli.Command {
	serve := serveCommand(log)
	serve.OnUsageError = onUsageError
	return &cli.Command{
		Name:        "traffic",
		Usage:       "traffic generator between two machines (server side: traffic serve)",
		Subcommands: []*cli.Command{serve},
	}
}

func serveCommand(_ *slog.Logger) *cli.Command {
	def := control.DefaultLimits()
	return &cli.Command{
		Name:  "serve",
		Usage: "run tests for remote netprof clients, one after another (like iperf3 -s, ntttcp -r)",
		Description: "Listens for clients on --listen; each test's data streams use --ports (one port per\n" +
			"stream, shared round-robin beyond the range) or the single --port. A client arriving\n" +
			"during a test is told \"busy\". At the end of every interval the server sends the client\n" +
			"the payload it received or sent per stream and its host CPU (user/system/softirq, %) and\n" +
			"own CPU seconds. Open the control port and the data ports in the firewall: a blocked\n" +
			"data port makes the client fail naming it. Sizes: " + units.SizeHelp + ".\n" +
			"Example: netprof traffic serve --listen 0.0.0.0:5000 --ports 5001-5064 --out /var/tmp/np",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: ":5000", Usage: "control address (host:port; empty host = all addresses); data ports bind to the same host", EnvVars: []string{"NETPROF_LISTEN"}},
			&cli.StringFlag{Name: "ports", Value: "5001-5064", Usage: "data port range FIRST-LAST, one port per stream", EnvVars: []string{"NETPROF_PORTS"}},
			&cli.IntFlag{Name: "port", Usage: "a single data port for every stream (instead of --ports)", DefaultText: "none: --ports", EnvVars: []string{"NETPROF_PORT"}},
			&cli.BoolFlag{Name: "once", Usage: "exit after one test (exit 1 if it failed)", EnvVars: []string{"NETPROF_ONCE"}},
			&cli.StringFlag{Name: "out", Usage: "write each test's server-side record (intervals, CPU, result) as JSON into this directory", EnvVars: []string{"NETPROF_OUT"}},
			&cli.IntFlag{Name: "max-streams", Value: def.MaxStreams, Usage: "largest stream count (per direction) a client may ask for", EnvVars: []string{"NETPROF_MAX_STREAMS"}},
			&cli.DurationFlag{Name: "max-duration", Value: def.MaxDuration, Usage: "longest test a client may ask for", EnvVars: []string{"NETPROF_MAX_DURATION"}},
			&cli.StringFlag{Name: "max-block-size", Value: units.Size(def.MaxBlockSize).String(), Usage: "largest block size a client may ask for", EnvVars: []string{"NETPROF_MAX_BLOCK_SIZE"}},
			&cli.StringFlag{Name: "max-buffers", Value: units.Size(def.MaxBuffers).String(), Usage: "largest streams x block size a client may ask for (memory per test)", EnvVars: []string{"NETPROF_MAX_BUFFERS"}},
		},
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError{fmt.Errorf("traffic serve takes no arguments (got %q); flags go before arguments", c.Args().Slice())}
	}
	cfg, err := serveConfig(c)
	if err != nil {
		return usageError{err}
	}
	log := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.Log = log
	var last *control.TestRecord
	out := c.String("out")
	cfg.OnTest = func(rec control.TestRecord) {
		last = &rec
		if out != "" {
			if path, err := writeRecord(out, rec); err != nil {
				log.Error("write test record", "err", err)
			} else {
				log.Info("test record written", "path", path)
			}
		}
	}
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	srv, err := control.NewServer(cfg)
	if err != nil {
		return usageError{err}
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return usageError{fmt.Errorf("--listen: %w", err)}
	}
	fmt.Fprintf(c.App.ErrWriter, "netprof traffic serve: control on %s, data ports %s; Ctrl-C to stop\n", ln.Addr(), portsText(cfg.Ports))
	if err := srv.Serve(c.Context, ln); err != nil {
		return err
	}
	if cfg.MaxTests > 0 && last != nil && last.Error != "" {
		return fmt.Errorf("test %s failed: %s", last.Session.RunID, last.Error)
	}
	return nil
}

func serveConfig(c *cli.Context) (control.ServerConfig, error) {
	host, _, err := net.SplitHostPort(c.String("listen"))
	if err != nil {
		return control.ServerConfig{}, fmt.Errorf("--listen %q: want host:port: %w", c.String("listen"), err)
	}
	cfg := control.ServerConfig{DataHost: host, Software: "netprof " + version}
	if c.IsSet("port") {
		if c.IsSet("ports") {
			return cfg, fmt.Errorf("give --port or --ports, not both")
		}
		cfg.Ports, err = parsePorts(strconv.Itoa(c.Int("port")))
	} else {
		cfg.Ports, err = parsePorts(c.String("ports"))
	}
	if err != nil {
		return cfg, err
	}
	if c.Bool("once") {
		cfg.MaxTests = 1
	}
	cfg.Limits = control.Limits{MaxStreams: c.Int("max-streams"), MaxDuration: c.Duration("max-duration")}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"max-block-size", &cfg.Limits.MaxBlockSize}, {"max-buffers", &cfg.Limits.MaxBuffers}} {
		z, err := units.ParseSize(c.String(f.name))
		if err != nil {
			return cfg, fmt.Errorf("--%s: %w", f.name, err)
		}
		if z <= 0 {
			return cfg, fmt.Errorf("--%s %q: must be positive", f.name, c.String(f.name))
		}
		*f.dst = int64(z)
	}
	if cfg.Limits.MaxStreams < 1 || cfg.Limits.MaxDuration <= 0 {
		return cfg, fmt.Errorf("--max-streams and --max-duration must be positive")
	}
	return cfg, nil
}

// parsePorts parses "5001" or "5001-5064" (at most traffic.MaxStreams
// ports).
func parsePorts(s string) ([]int, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	switch {
	case err1 != nil || err2 != nil:
		return nil, fmt.Errorf("data ports %q: want PORT or FIRST-LAST", s)
	case a < 1 || b > 65535 || a > b:
		return nil, fmt.Errorf("data ports %q: want 1 <= FIRST <= LAST <= 65535", s)
	case b-a+1 > traffic.MaxStreams:
		return nil, fmt.Errorf("data ports %q: at most %d ports", s, traffic.MaxStreams)
	}
	ports := make([]int, 0, b-a+1)
	for p := a; p <= b; p++ {
		ports = append(ports, p)
	}
	return ports, nil
}

func portsText(ports []int) string {
	if len(ports) == 1 {
		return strconv.Itoa(ports[0])
	}
	return fmt.Sprintf("%d-%d", ports[0], ports[len(ports)-1])
}

// writeRecord writes rec as DIR/<UTC start>-<run id prefix>.json.
func writeRecord(dir string, rec control.TestRecord) (string, error) {
	start := rec.Start
	if start.IsZero() {
		start = rec.End
	}
	name := fmt.Sprintf("%s-%.8s.json", start.UTC().Format("20060102T150405Z"), rec.Session.RunID)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}
