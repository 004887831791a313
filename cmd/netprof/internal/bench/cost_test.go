package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/loader"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// Goals of the self-cost benchmark (from the issue).
const (
	costMaxThroughputLoss = 0.02 // probes may cost at most 2% of throughput
	costMaxFloorRatio     = 1.3  // and at most 1.3× an empty program per event
)

// emptySpec is bpf/empty.bpf.c as a loader spec: one empty tp_btf program
// on each hook the probes use, with the probes' hook names.
func emptySpec(b testing.TB) loader.Spec {
	b.Helper()
	cs, err := bpf.LoadEmpty()
	if err != nil {
		b.Fatal(err)
	}
	return loader.Spec{Probe: "empty", Collection: cs, Programs: []loader.Program{
		{Name: bpf.EmptyProgNpE_rx, Hook: "net:netif_receive_skb"},
		{Name: bpf.EmptyProgNpE_tx, Hook: "net:net_dev_start_xmit"},
		{Name: bpf.EmptyProgNpE_napi, Hook: "napi:napi_poll"},
		{Name: bpf.EmptyProgNpE_siEntry, Hook: "irq:softirq_entry"},
		{Name: bpf.EmptyProgNpE_siExit, Hook: "irq:softirq_exit"},
		{Name: bpf.EmptyProgNpE_tcpProbe, Hook: "tcp:tcp_probe"},
		{Name: bpf.EmptyProgNpE_retrans, Hook: "tcp:tcp_retransmit_skb"},
	}}
}

// progCost is one program's run statistics summed over runs.
type progCost struct {
	name, hook                 string
	runs, runNs, recursionMiss uint64
}

func (c progCost) nsPerEvent() float64 {
	if c.runs == 0 {
		return 0
	}
	return float64(c.runNs) / float64(c.runs)
}

// costMode is one way of running the same transfer.
type costMode int

const (
	modeNoProbes costMode = iota // --no-bpf
	modeProbes                   // every netprof probe, BPF stats on
	modeEmpty                    // --no-bpf plus the empty programs, BPF stats on
)

var costModeNames = [...]string{"no probes", "probes", "empty programs"}

// costSample is what one run measured.
type costSample struct {
	gbps  float64
	progs map[string]*progCost // by program name
	cpuNs uint64               // BPF run time of every program
}

// BenchmarkProbeCost measures, in one invocation, what the probes cost:
// TCP throughput over the test bed without probes, with every probe, and
// with empty programs on the same hooks (runs alternate so drift hits all
// modes alike), and each program's ns/event (run_time_ns / run_cnt, BPF
// stats on) beside the empty program's on its hook, the floor any program
// there pays. Run with
//
//	go test -run '^$' -bench ProbeCost -benchtime 1x ./cmd/netprof/internal/bench/
//
// NETPROF_COST_ROUNDS (default 3) and NETPROF_COST_DURATION (default 3s)
// set how many rounds of the three runs and how long each sends. Throughput
// on veth varies ±15% run to run and with whatever else the host does, so
// the ratio is only as good as the rounds behind it; ns/event is stable.
func BenchmarkProbeCost(b *testing.B) {
	kerneltest.RequireRoot(b)
	testbedtest.Require(b)
	if err := loader.Check(nil); err != nil {
		kerneltest.Skip(b, err.Error())
	}
	rounds, dur := costSettings(b)
	for range b.N {
		var samples [3][]costSample
		for r := range rounds {
			order := []costMode{modeNoProbes, modeProbes, modeEmpty}
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, m := range order {
				samples[m] = append(samples[m], costRun(b, m, dur))
			}
		}
		reportCost(b, samples, dur)
	}
}

func costSettings(b *testing.B) (int, time.Duration) {
	rounds, dur := 3, 3*time.Second
	if v := os.Getenv("NETPROF_COST_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("NETPROF_COST_ROUNDS=%q: want a positive integer", v)
		}
		rounds = n
	}
	if v := os.Getenv("NETPROF_COST_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			b.Fatalf("NETPROF_COST_DURATION=%q: want a duration of at least 1s", v)
		}
		dur = d
	}
	return rounds, dur
}

// mustRun records cfg over bed into a temporary directory and opens the
// trace, failing the test unless the run is ok and, when progs is not
// empty, every program whose name starts with progs attached (at least
// one).
func mustRun(t testing.TB, cfg Config, bed *testbed.Bed, progs string) (*Result, *trace.Run) {
	t.Helper()
	cfg.Out = filepath.Join(t.TempDir(), "run")
	res, err := runOnBed(context.Background(), cfg, "test", bed, nil)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	run, err := trace.Open(cfg.Out)
	if err != nil || res.Status != "ok" {
		t.Fatalf("bench status %q, trace: %v", res.Status, err)
	}
	n := 0
	for _, p := range run.Manifest.Probes {
		if progs != "" && strings.HasPrefix(p.Name, progs) {
			if n++; !p.Attached {
				t.Fatalf("probe %s (%s) not attached: %s", p.Name, p.Hook, p.Reason)
			}
		}
	}
	if n == 0 && progs != "" {
		t.Fatalf("no program %s* in the manifest", progs)
	}
	return res, run
}

// costRun runs one transfer over a fresh test bed in mode m.
func costRun(b *testing.B, m costMode, dur time.Duration) costSample {
	b.Helper()
	bed, err := testbed.New(context.Background(), testbed.Options{})
	if err != nil {
		b.Fatalf("test bed: %v", err)
	}
	defer func() {
		if err := bed.Close(); err != nil {
			b.Errorf("close test bed: %v", err)
		}
	}()
	cfg := DefaultConfig()
	cfg.Duration = dur
	cfg.NoBPF = m != modeProbes
	s := costSample{progs: map[string]*progCost{}}
	var empty *loader.Loaded
	var before []loader.ProgramStats
	if m == modeEmpty {
		stats, err := loader.EnableStats()
		if err != nil {
			b.Fatal(err)
		}
		defer stats.Close()
		if empty, err = loader.Load(emptySpec(b), nil); err != nil {
			b.Fatal(err)
		}
		defer empty.Close()
		if empty.Attached() != len(empty.Status) {
			b.Fatalf("empty programs not all attached: %+v", empty.Status)
		}
		if before, err = empty.Stats(); err != nil {
			b.Fatal(err)
		}
	}
	progs := ""
	if m == modeProbes {
		progs = "np_"
	}
	res, run := mustRun(b, cfg, bed, progs)
	s.gbps = float64(sumApp(res.Received)) * 8 / dur.Seconds() / 1e9
	switch m {
	case modeEmpty:
		after, err := empty.Stats()
		if err != nil {
			b.Fatal(err)
		}
		for i, a := range after {
			s.add(a.Name, a.Hook, a.RunCount-before[i].RunCount, a.RunTimeNs-before[i].RunTimeNs, a.RecursionMisses-before[i].RecursionMisses)
		}
	case modeProbes:
		rows, err := run.Probes()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			if !strings.HasPrefix(r.Hook, "map:") {
				s.add(r.Program, r.Hook, r.RunCount, r.RunTimeNs, r.RecursionMisses)
			}
		}
	}
	b.Logf("%-14s %6.2f Gbit/s", costModeNames[m], s.gbps)
	return s
}

func (s *costSample) add(name, hook string, runs, ns, miss uint64) {
	c := s.progs[name]
	if c == nil {
		c = &progCost{name: name, hook: hook}
		s.progs[name] = c
	}
	c.runs += runs
	c.runNs += ns
	c.recursionMiss += miss
	s.cpuNs += ns
}

// merge sums every run's program statistics of one mode, by hook.
func merge(samples []costSample) (byHook map[string]*progCost, names []string, cpuNs uint64) {
	byHook = map[string]*progCost{}
	for _, s := range samples {
		for _, c := range s.progs {
			m := byHook[c.hook]
			if m == nil {
				m = &progCost{name: c.name, hook: c.hook}
				byHook[c.hook] = m
				names = append(names, c.hook)
			}
			m.runs += c.runs
			m.runNs += c.runNs
			m.recursionMiss += c.recursionMiss
		}
		cpuNs += s.cpuNs
	}
	slices.Sort(names)
	return byHook, names, cpuNs
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func gbpsOf(samples []costSample) []float64 {
	out := make([]float64, len(samples))
	for i, s := range samples {
		out[i] = s.gbps
	}
	return out
}

// reportCost reports the medians and the per-program table.
func reportCost(b *testing.B, samples [3][]costSample, dur time.Duration) {
	noProbes, probes, empty := median(gbpsOf(samples[modeNoProbes])), median(gbpsOf(samples[modeProbes])), median(gbpsOf(samples[modeEmpty]))
	// The ratio is the median of each round's own ratio: rounds run back to
	// back, so drift in what else the host does cancels within a round.
	ratios := make([]float64, len(samples[modeProbes]))
	for r := range ratios {
		ratios[r] = samples[modeProbes][r].gbps / samples[modeNoProbes][r].gbps
	}
	ratio := median(ratios)
	b.ReportMetric(noProbes, "gbit/s-noprobes")
	b.ReportMetric(probes, "gbit/s-probes")
	b.ReportMetric(empty, "gbit/s-empty")
	b.ReportMetric(ratio, "throughput-ratio")
	progs, hooks, cpuNs := merge(samples[modeProbes])
	floors, _, _ := merge(samples[modeEmpty])
	ncpu := float64(len(samples[modeProbes])) * dur.Seconds() * 1e9
	b.ReportMetric(100*float64(cpuNs)/ncpu, "bpf-cpu-%-of-one-cpu")

	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	verdict := "ok"
	if ratio < 1-costMaxThroughputLoss {
		verdict = "below"
	}
	fmt.Fprintf(w, "TCP throughput, app bytes, Gbit/s\tno probes\tprobes\tempty programs\tprobes/no probes\tgoal ≥ %.2f\n", 1-costMaxThroughputLoss)
	fmt.Fprintf(w, "median of %d rounds\t%.2f\t%.2f\t%.2f\t%.3f\t%s\n", len(ratios), noProbes, probes, empty, ratio, verdict)
	for r := range ratios {
		fmt.Fprintf(w, "round %d\t%.2f\t%.2f\t%.2f\t%.3f\t\n", r+1, samples[modeNoProbes][r].gbps,
			samples[modeProbes][r].gbps, samples[modeEmpty][r].gbps, ratios[r])
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "program\thook\tevents\tns/event\tfloor ns/event\t× floor\trecursion misses\tgoal ≤ %.1f× floor\n", costMaxFloorRatio)
	for _, h := range hooks {
		p := progs[h]
		ns := p.nsPerEvent()
		b.ReportMetric(ns, "ns/event-"+p.name)
		floor, times, verdict := "-", "-", "no floor"
		if f := floors[h]; f != nil && f.runs > 0 {
			b.ReportMetric(f.nsPerEvent(), "floor-ns/event-"+p.name)
			floor, times = fmt.Sprintf("%.1f", f.nsPerEvent()), fmt.Sprintf("%.2f", ns/f.nsPerEvent())
			verdict = "ok"
			if ns > costMaxFloorRatio*f.nsPerEvent() {
				verdict = "over"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.1f\t%s\t%s\t%d\t%s\n", p.name, h, p.runs, ns, floor, times, p.recursionMiss, verdict)
	}
	_ = w.Flush()
	b.Logf("probe self-cost (BPF programs used %.2f%% of one CPU during the probes runs)\n%s", 100*float64(cpuNs)/ncpu, sb.String())
}
