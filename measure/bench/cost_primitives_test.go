package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"text/tabwriter"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/measure/probeset"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// primitiveSpecs are the empty program and bpf/primitives.bpf.c, all on
// net:netif_receive_skb.
func primitiveSpecs(b testing.TB) []loader.Spec {
	b.Helper()
	empty := emptySpec(b, []string{"netdev"})
	empty.Skip[bpf.EmptyProgNpE_tx] = probeset.NotSelected
	cs, err := bpf.LoadPrimitives()
	if err != nil {
		b.Fatal(err)
	}
	const hook = "net:netif_receive_skb"
	return []loader.Spec{empty, {Probe: "primitives", Collection: cs, Programs: []loader.Program{
		{Name: bpf.PrimitivesProgNpP_array, Hook: hook},
		{Name: bpf.PrimitivesProgNpP_clock, Hook: hook},
		{Name: bpf.PrimitivesProgNpP_skb, Hook: hook},
		{Name: bpf.PrimitivesProgNpP_hashAdd, Hook: hook},
	}}}
}

// BenchmarkProbePrimitives prices single BPF operations per event: during
// one TCP transfer over the test bed (no probes), an empty program and one
// program per operation (bpf/primitives.bpf.c) run on every
// net:netif_receive_skb, with kernel BPF stats on. It prints each
// program's ns/event (run_time_ns / run_cnt), its ratio to the empty
// program (the floor of BenchmarkProbeCost's ≤ 1.3× goal) and the ns it
// adds to the floor. Run with
//
//	go test -run '^$' -bench ProbePrimitives -benchtime 1x ./measure/bench/
func BenchmarkProbePrimitives(b *testing.B) {
	kerneltest.RequireRoot(b)
	testbedtest.Require(b)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(b, err.Error())
	}
	for range b.N {
		stats, err := loader.EnableStats()
		if err != nil {
			b.Fatal(err)
		}
		var loaded []*loader.Loaded
		for _, spec := range primitiveSpecs(b) {
			l, err := loader.Load(spec, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			loaded = append(loaded, l)
		}
		before := primitiveStats(b, loaded)
		bed, err := testbed.New(context.Background(), testbed.Options{})
		if err != nil {
			b.Fatalf("test bed: %v", err)
		}
		cfg := DefaultConfig()
		cfg.Duration, cfg.Interval, cfg.NoBPF = costDefaultDuration, costInterval, true
		mustRun(b, cfg, bed, "")
		if err := bed.Close(); err != nil {
			b.Errorf("close test bed: %v", err)
		}
		after := primitiveStats(b, loaded)
		stats.Close()
		printPrimitives(before, after)
	}
}

func primitiveStats(b testing.TB, loaded []*loader.Loaded) []loader.ProgramStats {
	b.Helper()
	var out []loader.ProgramStats
	for _, l := range loaded {
		st, err := l.Stats()
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, st...)
	}
	if len(out) != 5 {
		b.Fatalf("%d programs attached, want the empty program and 4 primitives", len(out))
	}
	return out
}

func printPrimitives(before, after []loader.ProgramStats) {
	nsPer := func(i int) float64 {
		runs := after[i].RunCount - before[i].RunCount
		if runs == 0 {
			return 0
		}
		return float64(after[i].RunTimeNs-before[i].RunTimeNs) / float64(runs)
	}
	floor := nsPer(0)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nBPF primitives on net:netif_receive_skb (tp_btf, BPF stats on)\nprogram\tevents\tns/event\t× empty\tns added")
	for i, a := range after {
		fmt.Fprintf(w, "%s\t%d\t%.1f\t%.2f\t%.1f\n", a.Name, a.RunCount-before[i].RunCount, nsPer(i), nsPer(i)/floor, nsPer(i)-floor)
	}
	w.Flush()
}
