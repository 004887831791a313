package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/netprof/netprof/measure/bench"
	"github.com/netprof/netprof/probes/netdev"
)

// flowEntriesFlag is --flow-entries of bench, sweep, watch and blob: the
// size of the BPF flow table (netdev's np_nd_flows), in flows.
func flowEntriesFlag() cli.Flag {
	return &cli.Int64Flag{Name: "flow-entries", Value: netdev.DefaultFlowEntries,
		Usage: fmt.Sprintf("size of the BPF flow table, in flows (1..%d; about 185 bytes of kernel memory each (memlock), shared by all CPUs). "+
			"A flow that finds it full is not dropped silently: its bytes and packets are counted as lost "+
			"(the probes table's map_lost_bytes; the report says how much and suggests a size)", bench.MaxFlowEntries),
		EnvVars: []string{"NETPROF_FLOW_ENTRIES"}}
}

// flowEntries reads --flow-entries; a value outside 1..bench.MaxFlowEntries
// is an error naming the bounds (a usage error to the caller).
func flowEntries(c *cli.Context) (uint32, error) {
	n := c.Int64("flow-entries")
	if n < 1 || n > bench.MaxFlowEntries {
		return 0, fmt.Errorf("--flow-entries %d: must be 1..%d (flows the BPF flow table holds; default %d)",
			n, bench.MaxFlowEntries, netdev.DefaultFlowEntries)
	}
	return uint32(n), nil
}
