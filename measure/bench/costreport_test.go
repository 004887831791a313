package bench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// Aggregation and the printed table of BenchmarkProbeCost (cost_test.go).

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
	if len(xs) == 0 {
		return 0
	}
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

// roundRatios returns, per round, f(mode a) / f(mode b) (0 where b is 0).
func roundRatios(samples [numCostModes][]costSample, a, b costMode, f func(costSample) float64) []float64 {
	out := make([]float64, min(len(samples[a]), len(samples[b])))
	for r := range out {
		if d := f(samples[b][r]); d != 0 {
			out[r] = f(samples[a][r]) / d
		}
	}
	return out
}

// reportCost reports the medians and the per-program table.
func reportCost(b *testing.B, samples [numCostModes][]costSample, dur time.Duration) {
	var med [numCostModes]float64
	var cpuMed [numCostModes]float64
	for m := range numCostModes {
		med[m] = median(gbpsOf(samples[m]))
		cpus := make([]float64, len(samples[m]))
		for i, s := range samples[m] {
			cpus[i] = s.cpuPerMB()
		}
		cpuMed[m] = median(cpus)
	}
	gbps := func(s costSample) float64 { return s.gbps }
	cpu := func(s costSample) float64 { return s.cpuPerMB() }
	// Ratios are medians of each round's own ratio: rounds run back to
	// back, so drift in what else the host does cancels within a round.
	ratios := roundRatios(samples, modeProbes, modeNoProbes, gbps)
	statsRatios := roundRatios(samples, modeProbesStats, modeNoProbes, gbps)
	emptyRatios := roundRatios(samples, modeEmpty, modeNoProbes, gbps)
	emptyOffRatios := roundRatios(samples, modeEmptyNoStats, modeNoProbes, gbps)
	cpuRatios := roundRatios(samples, modeProbes, modeNoProbes, cpu)
	ratio := median(ratios)
	b.ReportMetric(med[modeNoProbes], "gbit/s-noprobes")
	b.ReportMetric(med[modeProbes], "gbit/s-probes")
	b.ReportMetric(med[modeProbesStats], "gbit/s-probes+stats")
	b.ReportMetric(med[modeEmpty], "gbit/s-empty")
	b.ReportMetric(med[modeEmptyNoStats], "gbit/s-empty-nostats")
	b.ReportMetric(ratio, "throughput-ratio")
	b.ReportMetric(median(cpuRatios), "cpu-per-byte-ratio")
	progs, hooks, cpuNs := merge(samples[modeProbesStats])
	floors, _, _ := merge(samples[modeEmpty])
	ncpu := float64(len(samples[modeProbesStats])) * dur.Seconds() * 1e9
	bpfShare := "n/a (no probes+stats run)"
	if ncpu > 0 {
		b.ReportMetric(100*float64(cpuNs)/ncpu, "bpf-cpu-%-of-one-cpu")
		bpfShare = fmt.Sprintf("%.2f%% of one CPU", 100*float64(cpuNs)/ncpu)
	}

	rounds := 0
	for _, ss := range samples {
		rounds = max(rounds, len(ss))
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	verdict := "ok"
	if ratio < 1-costMaxThroughputLoss {
		verdict = "below"
	}
	fmt.Fprintf(w, "TCP throughput, app bytes, Gbit/s\tno probes\tprobes\tprobes+stats\tempty programs\tempty (stats off)\tprobes/no probes\tprobes+stats/no probes\tempty/no probes\tempty (stats off)/no probes\tgoal probes/no probes ≥ %.2f\n", 1-costMaxThroughputLoss)
	fmt.Fprintf(w, "median of %d rounds\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n", rounds,
		med[modeNoProbes], med[modeProbes], med[modeProbesStats], med[modeEmpty], med[modeEmptyNoStats], ratio, median(statsRatios),
		median(emptyRatios), median(emptyOffRatios), verdict)
	at := func(xs []float64, r int) float64 {
		if r < len(xs) {
			return xs[r]
		}
		return 0
	}
	for r := range rounds {
		fmt.Fprintf(w, "round %d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", r+1,
			at(gbpsOf(samples[modeNoProbes]), r), at(gbpsOf(samples[modeProbes]), r),
			at(gbpsOf(samples[modeProbesStats]), r), at(gbpsOf(samples[modeEmpty]), r), at(gbpsOf(samples[modeEmptyNoStats]), r),
			at(ratios, r), at(statsRatios, r), at(emptyRatios, r), at(emptyOffRatios, r))
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "CPU µs per MB received (this process + ksoftirqd, steady intervals)\tno probes\tprobes\tprobes+stats\tempty programs\tprobes/no probes\n")
	fmt.Fprintf(w, "median of %d rounds\t%.1f\t%.1f\t%.1f\t%.1f\t%.3f\n", rounds,
		cpuMed[modeNoProbes], cpuMed[modeProbes], cpuMed[modeProbesStats], cpuMed[modeEmpty], median(cpuRatios))
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
	fmt.Printf("\nprobe self-cost (with stats on, BPF programs used %s)\n%s\n", bpfShare, sb.String())
}
