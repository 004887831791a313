package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/internal/cpulist"
	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/measure/bench"
	"github.com/netprof/netprof/measure/jsonstream"
	"github.com/netprof/netprof/measure/metrics"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
)

func benchCommand(log *slog.Logger) *cli.Command {
	def := bench.DefaultConfig()
	flags := []cli.Flag{
		&cli.IntFlag{Name: "streams", Value: def.Streams, Usage: "parallel TCP streams (per direction)", EnvVars: []string{"NETPROF_STREAMS"}},
		&cli.StringFlag{Name: "cpus", Usage: "pin stream i's sending and receiving loops to the i-th CPU of LIST, round-robin " +
			"(kernel list format, e.g. 0-3,8; like ntttcp -m / iperf3 -A; local test bed only); each receiving stream's " +
			"SO_INCOMING_CPU is recorded either way (traffic.incoming_cpu)", EnvVars: []string{"NETPROF_CPUS"}},
		&cli.StringFlag{Name: "block-size", Value: "128KiB", Usage: "bytes per write: " + units.SizeHelp, EnvVars: []string{"NETPROF_BLOCK_SIZE"}},
		&cli.StringFlag{Name: "window", Usage: "SO_SNDBUF and SO_RCVBUF of the data sockets, e.g. 4MiB (" + units.SizeHelp +
			"); turns buffer autotuning off; a request the kernel caps (net.core.rmem_max/wmem_max) is reported",
			DefaultText: "kernel autotuning", EnvVars: []string{"NETPROF_WINDOW"}},
	}
	return &cli.Command{
		Name:  "bench",
		Usage: "run a TCP transfer (local test bed, or to a netprof traffic serve peer), record it, report it",
		Description: "Without --peer: creates two network namespaces joined by a veth pair (198.18.0.1/30 -> 198.18.0.2/30,\n" +
			"or 2001:2::1/64 -> 2001:2::2/64 with --ipv6), attaches the BPF probes, sends for --duration, samples every\n" +
			"--interval into a run directory (manifest.json + Parquet tables), removes the namespaces and prints the report.\n" +
			"--rtt D puts netprof's user-space delay line (a TUN device in each namespace) between them instead of the\n" +
			"veth pair (D/2 each way; the line adds ~0.2-0.5 ms) and raises tcp_rmem/tcp_wmem max to 64 MiB inside them.\n" +
			"With --peer HOST[:PORT] (control port, default 5000) the other end is `netprof traffic serve` on another\n" +
			"machine: the data ports are the server's (its --ports); probes and netlink counters run here, on the\n" +
			"interface carrying the route to HOST, and the peer's per-interval report (payload it received or sent,\n" +
			"its CPU) goes into the trace and the report. A peer silent for --peer-timeout is given up (exit 1).\n" +
			"--warmup and --cooldown send before and after --duration; those intervals are recorded (traffic.phase)\n" +
			"but excluded from every figure. Rates are decimal Gbit/s. Needs root. Flags go before arguments. Examples:\n" +
			"  netprof bench --streams 8 --duration 20s --out /tmp/run1\n" +
			"  netprof bench --rtt 20ms --streams 16 --window 32MiB\n" +
			"  netprof bench --peer 10.0.0.5 --streams 16 --warmup 2s --bidir --congestion cubic\n\n" + probeGroupsHelp(),
		Flags:  append(flags, commonBenchFlags(def)...),
		Action: func(c *cli.Context) error { return runBench(c, log) },
	}
}

// commonBenchFlags are bench's flags that sweep shares.
func commonBenchFlags(def bench.Config) []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "duration", Value: def.Duration, Usage: "measured sending time, after all streams are connected and after --warmup", EnvVars: []string{"NETPROF_DURATION"}},
		&cli.DurationFlag{Name: "warmup", Usage: "sending time before --duration: recorded, marked warmup, excluded from the figures", EnvVars: []string{"NETPROF_WARMUP"}},
		&cli.DurationFlag{Name: "cooldown", Usage: "sending time after --duration: recorded, marked cooldown, excluded from the figures", EnvVars: []string{"NETPROF_COOLDOWN"}},
		&cli.DurationFlag{Name: "interval", Value: def.Interval, Usage: "sampling interval (one trace row set per interval)", EnvVars: []string{"NETPROF_INTERVAL"}},
		&cli.StringFlag{Name: "out", Usage: "run directory", DefaultText: "./runs/<UTC timestamp>", EnvVars: []string{"NETPROF_OUT"}},
		&cli.BoolFlag{Name: "no-bpf", Usage: "generator, netlink and /proc/stat figures only; no BPF probes", EnvVars: []string{"NETPROF_NO_BPF"}},
		&cli.BoolFlag{Name: "reverse", Usage: "the other end sends (iperf3 -R): the peer, or namespace B", EnvVars: []string{"NETPROF_REVERSE"}},
		&cli.BoolFlag{Name: "bidir", Usage: "both ends send at once, --streams each way", EnvVars: []string{"NETPROF_BIDIR"}},
		&cli.StringFlag{Name: "peer", Usage: fmt.Sprintf("HOST[:PORT] of a netprof traffic serve (PORT %d when omitted) instead of the local test bed", bench.DefaultPeerPort),
			EnvVars: []string{"NETPROF_PEER"}},
		&cli.DurationFlag{Name: "peer-timeout", Usage: "give up on a peer that sends no interval report for this long",
			DefaultText: fmt.Sprintf("the larger of %v and 2 x --interval + 1s", bench.DefaultPeerTimeout), EnvVars: []string{"NETPROF_PEER_TIMEOUT"}},
		&cli.DurationFlag{Name: "connect-timeout", Value: def.ConnectTimeout, Usage: "bound on each data stream's connect; blocked ports fail within it, named",
			DefaultText: traffic.DefaultConnectTimeout.String(), EnvVars: []string{"NETPROF_CONNECT_TIMEOUT"}},
		&cli.DurationFlag{Name: "rtt", Value: def.RTT, Usage: "round-trip time to add between the namespaces with the TUN delay line (D/2 each way)",
			DefaultText: "none: the veth pair", EnvVars: []string{"NETPROF_RTT"}},
		&cli.IntFlag{Name: "port", Value: def.Port, Usage: "receiver TCP port inside the test bed (with --peer the server's --ports apply)", EnvVars: []string{"NETPROF_PORT"}},
		&cli.StringFlag{Name: "ports", Usage: "receiver data ports FIRST-LAST inside the test bed, one per stream (instead of --port)", EnvVars: []string{"NETPROF_PORTS"}},
		&cli.StringFlag{Name: "congestion", Usage: "TCP_CONGESTION of the data sockets (cubic, bbr, reno, ...: see /proc/sys/net/ipv4/tcp_available_congestion_control)",
			DefaultText: "the kernel's, net.ipv4.tcp_congestion_control", EnvVars: []string{"NETPROF_CONGESTION"}},
		&cli.IntFlag{Name: "mss", Usage: "TCP_MAXSEG of the data sockets, bytes (88..32767)", DefaultText: "the kernel's, from the MTU", EnvVars: []string{"NETPROF_MSS"}},
		&cli.BoolFlag{Name: "nodelay", Value: true, Usage: "TCP_NODELAY on the data sockets (Go's default); --nodelay=false turns Nagle's algorithm on, as iperf3 without -N", EnvVars: []string{"NETPROF_NODELAY"}},
		&cli.StringFlag{Name: "bind-dev", Usage: "SO_BINDTODEVICE: send this host's data sockets through this interface only (local test bed: a device of namespace A)", EnvVars: []string{"NETPROF_BIND_DEV"}},
		&cli.StringFlag{Name: "pacing-rate", Usage: "SO_MAX_PACING_RATE per stream, paced by the kernel, e.g. 1Gbit (" + units.RateHelp + ")",
			DefaultText: "none", EnvVars: []string{"NETPROF_PACING_RATE"}},
		&cli.BoolFlag{Name: "ipv6", Usage: "IPv6 on the local test bed (2001:2::/64), or a peer name's IPv6 address", EnvVars: []string{"NETPROF_IPV6"}},
		&cli.BoolFlag{Name: "quiet", Usage: "no live line per interval on stderr", EnvVars: []string{"NETPROF_QUIET"}},
		&cli.BoolFlag{Name: "details", Aliases: []string{"full"}, Usage: "print the whole report (per-CPU and per-flow tables, every verdict with evidence and thresholds, notes, both ends' CPU) instead of one screen", EnvVars: []string{"NETPROF_DETAILS"}},
		&cli.StringFlag{Name: "prometheus", Usage: "serve the figures as Prometheus metrics at ADDR (host:port) during the run", EnvVars: []string{"NETPROF_PROMETHEUS"}},
		probesFlag("attach"),
		&cli.StringFlag{Name: "link-speed", Usage: "rated link speed with a unit, e.g. 10Gbit or 10000Mbit (a bare number is refused), for the wire-bound verdict; recorded in the manifest, where analyze takes it as its default", EnvVars: []string{"NETPROF_LINK_SPEED"}},
		&cli.DurationFlag{Name: "expect-rtt", Usage: "min RTT expected of the peer (hairpin verdict); recorded in the manifest, where analyze takes it as its default",
			DefaultText: fmt.Sprintf("--rtt when given, else %v", analysis.DefaultThresholds().HairpinExpectRTT), EnvVars: []string{"NETPROF_EXPECT_RTT"}},
		&cli.BoolFlag{Name: "bpf-stats", Value: true, Usage: "kernel BPF run-time stats for the probes table (run count, ns/event); --bpf-stats=false saves their two clock reads (~40 ns) per program run", EnvVars: []string{"NETPROF_BPF_STATS"}},
		&cli.BoolFlag{Name: "json", Usage: "print a JSON summary on stdout (decimal units, units in keys) instead of the text report", EnvVars: []string{"NETPROF_JSON"}},
		&cli.BoolFlag{Name: "json-stream", Usage: "print one JSON object per line on stdout as the run goes (like iperf3 --json-stream): " +
			`{"event":"interval",...,"data":{TABLE:[ROW...]}} per interval (the trace's table and column names), then {"event":"end","data":` +
			"the --json object}", EnvVars: []string{"NETPROF_JSON_STREAM"}},
		flowEntriesFlag(),
	}
}

func runBench(c *cli.Context, log *slog.Logger) error {
	if c.NArg() > 0 {
		return usageError{fmt.Errorf("bench takes no arguments (got %q); flags go before arguments", c.Args().Slice())}
	}
	cfg, err := benchConfig(c)
	if err != nil {
		return usageError{err}
	}
	if bs, err := sizeFlag(c, "block-size"); err != nil {
		return usageError{err}
	} else if bs > 0 {
		cfg.BlockSize = bs
	}
	if cfg.SockOpts.Window, err = sizeFlag(c, "window"); err != nil {
		return usageError{err}
	}
	cfg.Streams = c.Int("streams")
	if err := validate(cfg); err != nil {
		return err
	}
	if c.Bool("json-stream") {
		if c.Bool("json") {
			return usageError{errors.New("--json and --json-stream exclude each other (the stream ends with the --json object)")}
		}
		cfg.Stream = jsonstream.New(c.App.Writer)
	}
	var srv *metrics.Server
	if cfg.Metrics, srv, err = servePrometheus(c, c.App.ErrWriter, log); err != nil {
		return err
	}
	defer srv.Close()
	res, err := bench.Run(c.Context, cfg, version, log)
	if errors.Is(err, bench.ErrPrivilege) {
		return usageError{err}
	}
	// A failed run's report is printed when it recorded something.
	if res != nil && res.Report != nil && (err == nil || res.Report.Primary != nil) {
		if perr := printBench(c, res, cfg.Stream); perr != nil {
			return perr
		}
	}
	if res != nil && err != nil {
		fmt.Fprintf(c.App.ErrWriter, "netprof: trace with every completed interval kept in %s (status %q)\n", res.Dir, res.Status)
	}
	return err
}

// validate checks cfg; a problem is a usage error.
func validate(cfg bench.Config) error {
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	if cfg.SockOpts.Congestion != "" {
		if err := checkCongestion(cfg.SockOpts.Congestion); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// benchJSON is bench's --json output: the analysis report and what the run
// adds to it.
type benchJSON struct {
	Report analysis.JSONReport `json:"report"`
	Bench  *bench.Summary      `json:"bench"`
}

func printBench(c *cli.Context, res *bench.Result, s *jsonstream.Stream) error {
	if s != nil {
		return s.End(benchJSON{Report: res.Report.JSON(), Bench: res.Summary})
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(benchJSON{Report: res.Report.JSON(), Bench: res.Summary})
	}
	if !c.Bool("details") {
		return res.Report.WriteSummary(c.App.Writer)
	}
	if err := res.Report.WriteText(c.App.Writer); err != nil {
		return err
	}
	if res.Summary == nil {
		return nil
	}
	return res.Summary.WriteText(c.App.Writer)
}

// benchConfig reads the flags bench and sweep share into a Config.
func benchConfig(c *cli.Context) (bench.Config, error) {
	cfg := bench.DefaultConfig()
	cfg.Duration, cfg.Warmup, cfg.Cooldown = c.Duration("duration"), c.Duration("warmup"), c.Duration("cooldown")
	cfg.Interval = c.Duration("interval")
	cfg.Out = c.String("out")
	cfg.NoBPF = c.Bool("no-bpf")
	cfg.Port = c.Int("port")
	cfg.RTT = c.Duration("rtt")
	cfg.Peer, cfg.PeerTimeout, cfg.ConnectTimeout = c.String("peer"), c.Duration("peer-timeout"), c.Duration("connect-timeout")
	cfg.IPv6 = c.Bool("ipv6")
	cfg.BPFStats = c.Bool("bpf-stats")
	cfg.Argv = os.Args
	var err error
	if v := c.String("cpus"); v != "" {
		l, err := cpulist.Parse(v)
		if err != nil || len(l) == 0 {
			return cfg, fmt.Errorf("--cpus %q: want a CPU list such as 0-3,8 (%v)", v, err)
		}
		cfg.CPUs = l
	}
	if cfg.FlowEntries, err = flowEntries(c); err != nil {
		return cfg, err
	}
	if !c.Bool("quiet") {
		cfg.Live = c.App.ErrWriter
	}
	if cfg.Probes, err = probeset.Parse(c.String("probes")); err != nil {
		return cfg, fmt.Errorf("--probes: %w", err)
	}
	if cfg.Direction, err = direction(c); err != nil {
		return cfg, err
	}
	if cfg.Ports, err = benchPorts(c); err != nil {
		return cfg, err
	}
	if cfg.Duration <= 0 {
		return cfg, fmt.Errorf("--duration %v: must be positive", cfg.Duration)
	}
	if err := ratedFlags(c, &cfg); err != nil {
		return cfg, err
	}
	return cfg, sockOpts(c, &cfg)
}

// ratedFlags reads --link-speed and --expect-rtt.
func ratedFlags(c *cli.Context, cfg *bench.Config) error {
	if s := c.String("link-speed"); s != "" {
		bps, err := analysis.ParseRate(s)
		if err != nil {
			return fmt.Errorf("--link-speed: %w", err)
		}
		cfg.LinkSpeedBps = bps
	}
	if c.IsSet("expect-rtt") && c.Duration("expect-rtt") <= 0 {
		return fmt.Errorf("--expect-rtt %v: must be positive", c.Duration("expect-rtt"))
	}
	cfg.ExpectRTT = c.Duration("expect-rtt")
	return nil
}

// direction reads --reverse and --bidir.
func direction(c *cli.Context) (control.Direction, error) {
	switch {
	case c.Bool("reverse") && c.Bool("bidir"):
		return "", errors.New("give --reverse or --bidir, not both")
	case c.Bool("reverse"):
		return control.Reverse, nil
	case c.Bool("bidir"):
		return control.Bidir, nil
	}
	return control.Send, nil
}

// benchPorts reads --ports (the local test bed's receiver ports).
func benchPorts(c *cli.Context) ([]int, error) {
	if c.String("peer") != "" && (c.IsSet("port") || c.IsSet("ports")) {
		return nil, errors.New("with --peer the data ports are the server's (netprof traffic serve --ports); " +
			"--peer HOST:PORT sets the control port")
	}
	if !c.IsSet("ports") {
		return nil, nil
	}
	if c.IsSet("port") {
		return nil, errors.New("give --port or --ports, not both")
	}
	return parsePorts(c.String("ports"))
}

// sockOpts reads the socket option flags into cfg.SockOpts (but --window,
// which sweep takes as a list).
func sockOpts(c *cli.Context, cfg *bench.Config) error {
	o := &cfg.SockOpts
	o.Congestion, o.MSS, o.BindDev = c.String("congestion"), c.Int("mss"), c.String("bind-dev")
	if c.IsSet("nodelay") {
		v := c.Bool("nodelay")
		o.NoDelay = &v
	}
	if s := c.String("pacing-rate"); s != "" {
		r, err := units.ParseRate(s)
		if err != nil {
			return fmt.Errorf("--pacing-rate: %w", err)
		}
		if r <= 0 {
			return fmt.Errorf("--pacing-rate %q: must be positive", s)
		}
		o.PacingRate = r
	}
	return nil
}

// sizeFlag parses a size flag with internal/units; "" is 0.
func sizeFlag(c *cli.Context, name string) (int, error) {
	return parseSizeFlag(name, c.String(name))
}

func parseSizeFlag(name, s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	z, err := units.ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", name, err)
	}
	if z <= 0 || z > 1<<40 {
		return 0, fmt.Errorf("--%s %q: must be 1 byte to 1TiB", name, s)
	}
	return int(z), nil
}

// checkCongestion fails fast on an unknown congestion control.
var checkCongestion = traffic.CheckCongestion
