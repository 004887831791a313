package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// costSet is one way of running the transfer: no probes, or some groups.
type costSet struct {
	name   string
	mode   costMode
	probes []string
}

// BenchmarkProbeCostSets prices the probe sets a user picks with --probes
// (the default set, and all of them) against no probes at all, at several
// stream counts, over the local veth bed (CPU-bound: every nanosecond the
// probes take is throughput lost). Each round runs the three sets back to
// back over fresh beds, in alternating order; BPF stats stay off (they
// add two clock reads per program run). It prints, per stream count, the
// median throughput of each set, the median of the rounds' own ratios
// set / no probes (the goal for the default set: >= 0.97), and the CPU
// time per MB received with its ratio (goal: <= 1.03).
//
//	go test -run '^$' -bench ProbeCostSets -benchtime 1x ./measure/bench/
//
// NETPROF_COST_STREAMS (default "1,4,16"), NETPROF_COST_ROUNDS (default
// 5) and NETPROF_COST_DURATION (default 3s) set the stream counts, rounds
// and send time; NETPROF_COST_SETS (--probes values separated by ";",
// e.g. "netdev;softirq;tcpsock,sockstate") prices other sets than default
// and all; a round during which the rest of the host was busy is
// run again, as in BenchmarkProbeCost.
func BenchmarkProbeCostSets(b *testing.B) {
	kerneltest.RequireRoot(b)
	testbedtest.Require(b)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(b, err.Error())
	}
	rounds, dur, _ := costSettings(b)
	if os.Getenv("NETPROF_COST_ROUNDS") == "" {
		rounds = 5
	}
	maxOthers := costMaxOthers(b)
	streams := []int{1, 4, 16}
	if v := os.Getenv("NETPROF_COST_STREAMS"); v != "" {
		streams = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("NETPROF_COST_STREAMS=%q: want positive integers, comma-separated", v)
			}
			streams = append(streams, n)
		}
	}
	sets := []costSet{{"no probes", modeNoProbes, nil}, {"default", modeProbes, probeset.Default}, {"all", modeProbes, nil}}
	if v := os.Getenv("NETPROF_COST_SETS"); v != "" {
		sets = sets[:1]
		for _, name := range strings.Split(v, ";") {
			probes, err := probeset.Parse(name)
			if err != nil {
				b.Fatalf("NETPROF_COST_SETS=%q: %v", v, err)
			}
			sets = append(sets, costSet{strings.TrimSpace(name), modeProbes, probes})
		}
	}
	for range b.N {
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "streams\tset\tGbit/s (median)\tratio to no probes\tratios per round\tCPU µs/MB\tCPU ratio\t\n")
		for _, n := range streams {
			res := make([][]costSample, len(sets))
			for r, discarded := 0, 0; r < rounds; {
				order := make([]int, len(sets))
				for i := range order {
					order[i] = i
				}
				if r%2 == 1 {
					slices.Reverse(order)
				}
				round := make([]costSample, len(sets))
				worst := 0.0
				for _, i := range order {
					round[i] = costRun(b, sets[i].mode, dur, n, sets[i].probes)
					worst = max(worst, round[i].steady.others)
				}
				if worst > maxOthers && discarded < 2*rounds {
					discarded++
					fmt.Printf("cost round discarded: other work used %.1f%% of the CPUs (limit %.1f%%)\n", 100*worst, 100*maxOthers)
					continue
				}
				for i := range sets {
					res[i] = append(res[i], round[i])
				}
				r++
			}
			for i, set := range sets {
				var ratios, cpuRatios, cpu []float64
				for r := range res[i] {
					off, on := res[0][r], res[i][r]
					if off.gbps > 0 {
						ratios = append(ratios, on.gbps/off.gbps)
					}
					if off.cpuPerMB() > 0 {
						cpuRatios = append(cpuRatios, on.cpuPerMB()/off.cpuPerMB())
					}
					cpu = append(cpu, on.cpuPerMB())
				}
				per := make([]string, len(ratios))
				for j, x := range ratios {
					per[j] = fmt.Sprintf("%.3f", x)
				}
				fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.3f\t%s\t%.1f\t%.3f\t\n", n, set.name, median(gbpsOf(res[i])),
					median(ratios), strings.Join(per, " "), median(cpu), median(cpuRatios))
			}
		}
		tw.Flush()
		fmt.Printf("default set: %s; all: every group (%d rounds of %v per stream count, BPF stats off)\n",
			strings.Join(probeset.Default, ","), rounds, dur)
	}
}
