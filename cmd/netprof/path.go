package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/cmd/netprof/internal/progress"
	"github.com/netprof/netprof/traffic/pathcheck"
)

func pathCommand() *cli.Command {
	return &cli.Command{
		Name:      "path",
		Usage:     "check the path to a peer before a run: route, TCP connect RTT, hairpin verdict",
		ArgsUsage: "PEER",
		Description: "Asks the kernel for the route to PEER (on-link or via a gateway, source address, interface,\n" +
			"public or private address), times --count TCP connects to PEER:--port (a refused port still\n" +
			"answers with a RST: one round trip), and prints min/p50/p90. \"hairpin suspected\" when the\n" +
			"RTT floor is above --expect-rtt (what a nearby peer shows) or a peer inside a connected\n" +
			"prefix is routed through a gateway. --compare measures a second peer side by side (e.g. the\n" +
			"same VM's public and private address). Example: netprof path --port 22 --compare 10.0.0.5 20.1.2.3",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "port", Value: 22, Usage: "TCP port to connect to (open or closed both answer; a filtered one times out)", EnvVars: []string{"NETPROF_PORT"}},
			&cli.StringFlag{Name: "compare", Usage: "second peer to measure side by side", EnvVars: []string{"NETPROF_COMPARE"}},
			&cli.IntFlag{Name: "count", Value: 20, Usage: "TCP connects per peer", EnvVars: []string{"NETPROF_COUNT"}},
			&cli.DurationFlag{Name: "expect-rtt", Value: pathcheck.DefaultExpectRTT, Usage: "RTT floor expected of a nearby peer; above it a hairpin is suspected", EnvVars: []string{"NETPROF_EXPECT_RTT"}},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Second, Usage: "per connect", EnvVars: []string{"NETPROF_TIMEOUT"}},
			&cli.BoolFlag{Name: "json", Usage: "print as JSON", EnvVars: []string{"NETPROF_JSON"}},
		},
		Action: runPath,
	}
}

func runPath(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError{fmt.Errorf("path needs exactly one PEER address (got %d arguments); flags go before it", c.NArg())}
	}
	peers := []string{c.Args().First()}
	if s := c.String("compare"); s != "" {
		peers = append(peers, s)
	}
	var addrs []netip.Addr
	for _, p := range peers {
		a, err := netip.ParseAddr(p)
		if err != nil {
			return usageError{fmt.Errorf("peer %q: want a literal IP address: %w", p, err)}
		}
		addrs = append(addrs, a.Unmap())
	}
	port, count := c.Int("port"), c.Int("count")
	if port < 1 || port > 65535 || count < 1 || count > 10000 {
		return usageError{fmt.Errorf("--port %d must be 1..65535 and --count %d 1..10000", port, count)}
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE) // routes only: no XFRM/NETFILTER sockets to fail
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	var checks []pathcheck.Check
	for _, a := range addrs {
		rt, err := pathcheck.Lookup(h, a)
		if err != nil {
			return err
		}
		ap := netip.AddrPortFrom(a, uint16(port))
		bar := progress.New("connecting to "+ap.String(), count, progress.StdoutIsTerminal(), os.Stderr)
		res, err := pathcheck.Measure(c.Context, nil, ap, pathcheck.Options{Count: count, Timeout: c.Duration("timeout"),
			Progress: func(done, _ int) { bar.Set(done) }})
		bar.Finish()
		if err != nil {
			return err
		}
		checks = append(checks, pathcheck.Check{Route: rt, RTT: res})
	}
	verdicts := make([]pathcheck.Verdict, len(checks))
	for i := range checks {
		var other *pathcheck.Check
		if len(checks) == 2 {
			other = &checks[1-i]
		}
		verdicts[i] = pathcheck.Judge(checks[i], c.Duration("expect-rtt"), other)
	}
	if c.Bool("json") {
		return writePathJSON(c.App.Writer, checks, verdicts, c.Duration("expect-rtt"))
	}
	return writePathText(c.App.Writer, checks, verdicts, c.Duration("expect-rtt"))
}

func writePathText(w io.Writer, checks []pathcheck.Check, vs []pathcheck.Verdict, expect time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label string, f func(pathcheck.Check, pathcheck.Verdict) string) {
		cells := []string{label}
		for i, ch := range checks {
			cells = append(cells, f(ch, vs[i]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	row("peer", func(ch pathcheck.Check, _ pathcheck.Verdict) string { return ch.RTT.Addr.String() })
	row("address", func(ch pathcheck.Check, _ pathcheck.Verdict) string { return ch.Route.Class })
	row("route", func(ch pathcheck.Check, _ pathcheck.Verdict) string {
		if ch.Route.Local {
			return "local"
		}
		if ch.Route.OnLink() {
			return "on-link dev " + ch.Route.Dev
		}
		return "via " + ch.Route.Gateway.String() + " dev " + ch.Route.Dev
	})
	row("source", func(ch pathcheck.Check, _ pathcheck.Verdict) string { return addrOrDash(ch.Route.Src) })
	row("connected prefix", func(ch pathcheck.Check, _ pathcheck.Verdict) string {
		if !ch.Route.Connected.IsValid() {
			return "-"
		}
		return ch.Route.Connected.String() + " on " + ch.Route.ConnectedDev
	})
	row("TCP connect RTT min/p50/p90 (ms)", func(ch pathcheck.Check, _ pathcheck.Verdict) string {
		if ch.RTT.Samples == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.3f / %.3f / %.3f", pathcheck.Ms(ch.RTT.Min), pathcheck.Ms(ch.RTT.P50), pathcheck.Ms(ch.RTT.P90))
	})
	row("samples", func(ch pathcheck.Check, _ pathcheck.Verdict) string {
		return fmt.Sprintf("%d of %d", ch.RTT.Samples, len(ch.RTT.Attempts))
	})
	row("verdict", func(_ pathcheck.Check, v pathcheck.Verdict) string { return v.Status })
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nexpected RTT floor of a nearby peer: %.3f ms (--expect-rtt)\n", pathcheck.Ms(expect))
	for i, ch := range checks {
		fmt.Fprintf(w, "%s: %s; samples: %s\n", ch.RTT.Addr, vs[i].Status, ch.RTT.Kind())
		for _, e := range vs[i].Evidence {
			fmt.Fprintf(w, "  - %s\n", e)
		}
	}
	return nil
}

func addrOrDash(a netip.Addr) string {
	if !a.IsValid() {
		return "-"
	}
	return a.String()
}

func writePathJSON(w io.Writer, checks []pathcheck.Check, vs []pathcheck.Verdict, expect time.Duration) error {
	type peerJSON struct {
		Peer          string   `json:"peer"`
		Port          uint16   `json:"port"`
		Class         string   `json:"address_class"`
		Public        bool     `json:"public"`
		OnLink        bool     `json:"on_link"`
		Gateway       string   `json:"gateway,omitempty"`
		Dev           string   `json:"dev"`
		Src           string   `json:"src,omitempty"`
		Connected     string   `json:"connected_prefix,omitempty"`
		Samples       int      `json:"rtt_samples"`
		Connects      int      `json:"connected"`
		Refused       int      `json:"refused"`
		Timeouts      int      `json:"timeouts"`
		Failures      int      `json:"failures"`
		MinMs         *float64 `json:"rtt_min_ms"`
		P50Ms         *float64 `json:"rtt_p50_ms"`
		P90Ms         *float64 `json:"rtt_p90_ms"`
		Verdict       string   `json:"verdict"`
		Evidence      []string `json:"evidence"`
		ExpectRTTMs   float64  `json:"expect_rtt_ms"`
		RTTMeasuredBy string   `json:"rtt_source"`
	}
	var out []peerJSON
	for i, ch := range checks {
		p := peerJSON{Peer: ch.Route.Peer.String(), Port: ch.RTT.Addr.Port(), Class: ch.Route.Class, Public: pathcheck.Public(ch.Route.Peer),
			OnLink: ch.Route.OnLink(), Dev: ch.Route.Dev, Samples: ch.RTT.Samples, Connects: ch.RTT.Connected,
			Refused: ch.RTT.Refused, Timeouts: ch.RTT.Timeouts, Failures: ch.RTT.Fails, Verdict: vs[i].Status,
			Evidence: vs[i].Evidence, ExpectRTTMs: pathcheck.Ms(expect), RTTMeasuredBy: "blocking TCP connect(2), SYN to SYN-ACK or RST"}
		if ch.Route.Gateway.IsValid() {
			p.Gateway = ch.Route.Gateway.String()
		}
		if ch.Route.Src.IsValid() {
			p.Src = ch.Route.Src.String()
		}
		if ch.Route.Connected.IsValid() {
			p.Connected = ch.Route.Connected.String()
		}
		if ch.RTT.Samples > 0 {
			mn, p50, p90 := pathcheck.Ms(ch.RTT.Min), pathcheck.Ms(ch.RTT.P50), pathcheck.Ms(ch.RTT.P90)
			p.MinMs, p.P50Ms, p.P90Ms = &mn, &p50, &p90
		}
		out = append(out, p)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"peers": out})
}
