package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/measure/probeset"
)

// helpWidth is the width the commands' descriptions are wrapped to (the
// help indents them by 3 more).
const helpWidth = 100

// probesFlag is --probes of bench, sweep, watch and blob: a short usage;
// the groups are described by probeGroupsHelp in the command's
// description. verb is what the command does with them ("attach", "load").
func probesFlag(verb string) cli.Flag {
	return &cli.StringFlag{Name: "probes", Value: "default",
		Usage: "probe groups to " + verb + ": default (" + strings.Join(probeset.Default, ",") + ": no per-packet hook), " +
			"deep or all (every group; per-packet hooks, 10-25% of throughput on a CPU-bound path), " +
			"or groups, comma-separated (listed under DESCRIPTION)",
		EnvVars: []string{"NETPROF_PROBES"}}
}

// probeGroupsHelp describes --probes' presets and groups for a command's
// description, wrapped to helpWidth.
func probeGroupsHelp() string {
	var b strings.Builder
	b.WriteString(wrap("Probe groups (--probes): default = "+strings.Join(probeset.Default, ",")+", no per-packet hook (TCP flows "+
		"from the socket iterator once per interval, interfaces from netlink, softirq per CPU from /proc/stat, every vector). "+
		"deep = all = every group: exact NET_RX time per CPU, BPF interface and per-flow bytes, the per-ACK RTT histogram, "+
		"NAPI, drops; their per-packet hooks cost 10-25% of throughput on a CPU-bound path (maps: 19.5 MB memlock at 2 "+
		"possible CPUs, 15.1 MiB at 240 on 6.1; default 10.5 MB). Or groups, comma-separated:", "", ""))
	for _, g := range probeset.Groups {
		b.WriteString("\n")
		b.WriteString(wrap(g.Figures, "  "+g.Name+strings.Repeat(" ", max(1, 11-len(g.Name))), strings.Repeat(" ", 13)))
	}
	return b.String()
}

// wrap breaks text into lines of at most helpWidth columns at spaces, the
// first line starting with first and the others with rest.
func wrap(text, first, rest string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(w)) > helpWidth {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line)
	return b.String()
}
