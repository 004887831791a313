package analysis

import (
	"fmt"
	"strings"
)

// VerdictStatus says whether a rule fired.
type VerdictStatus string

// Verdict statuses.
const (
	// Fired: the rule's conditions hold.
	Fired VerdictStatus = "yes"
	// NotFired: the rule was checked and its conditions do not hold.
	NotFired VerdictStatus = "no"
	// Skipped: the trace lacks what the rule needs (Summary says what).
	Skipped VerdictStatus = "skipped"
)

// Rule names (Verdict.Rule), in evaluation order.
const (
	RuleSoftirq      = "softirq-bound"
	RuleWire         = "wire-bound"
	RuleRateLimited  = "rate-limited path"
	RuleWindow       = "window/BDP-limited"
	RuleStorage      = "storage-throttled"
	RuleHairpin      = "hairpin suspected"
	RuleSender       = "sender/application-limited"
	RuleInconclusive = "inconclusive"
)

// Verdict is one rule's outcome with the evidence and thresholds behind it.
type Verdict struct {
	Rule   string
	Status VerdictStatus
	// Summary is one line: the finding (Fired), why not (NotFired), or
	// what is missing (Skipped).
	Summary string
	// Evidence are the figures the rule looked at, each with its window,
	// counter and unit; Thresholds the numbers it compared them against.
	Evidence   []string
	Thresholds []string
}

// Fired reports whether the verdict's rule fired.
func (v Verdict) Fired() bool { return v.Status == Fired }

// Verdict returns the verdict of the rule, or a zero Verdict.
func (r *Report) Verdict(rule string) Verdict {
	for _, v := range r.Verdicts {
		if v.Rule == rule {
			return v
		}
	}
	return Verdict{}
}

// FiredVerdicts returns the rules that fired (inconclusive included).
func (r *Report) FiredVerdicts() []string {
	var out []string
	for _, v := range r.Verdicts {
		if v.Fired() {
			out = append(out, v.Rule)
		}
	}
	return out
}

// facts are figures several rules share.
type facts struct {
	r  *Report
	th Thresholds
	// steady is Primary's windows (nil without an active window).
	steady *Windows
	// link is the steady rate compared with the rated speed (wire
	// estimate, else interface, else Primary) and linkLabel its counter.
	link      float64
	linkLabel string
	// linkShort names linkLabel's counter briefly: "rx wire estimate",
	// "rx interface" or Primary's direction and counter.
	linkShort string
	// sat: some CPU's NET_RX share (Report.HotShare: without the softirq
	// probe, its softirq share of every vector) or the per-interval
	// busiest NET_RX share's median reached SoftirqShare; hasCPU: cpus
	// rows exist.
	sat, hasCPU bool
	// cpuBound: the host's CPUs were at least HostBusy busy (/proc/stat).
	cpuBound bool
	// send are the sending flows with a window-limited and a steady rate.
	send []FlowSummary
}

// newFacts derives the shared figures.
func newFacts(r *Report, th Thresholds) *facts {
	f := &facts{r: r, th: th, steady: r.steady(), hasCPU: len(r.CPUs) > 0}
	if f.steady != nil {
		f.link, f.linkLabel = f.steady.SteadyBps, r.Primary.Label
		f.linkShort = counterShort(r.PrimaryDir, r.Primary.Counter)
		d := r.primaryDirection()
		for _, c := range []string{CounterWire, CounterNetlink} {
			if rt := d.Rate(c); rt != nil && rt.W != nil && rt.W.HasActive() {
				f.link, f.linkLabel = rt.W.SteadyBps, rt.Label
				f.linkShort = counterShort(d.Name, c)
				break
			}
		}
	}
	for _, c := range r.CPUs {
		f.sat = f.sat || r.HotShare(c) >= th.SoftirqShare
	}
	f.sat = f.sat || (f.hasCPU && r.BusiestMedianShare >= th.SoftirqShare)
	f.cpuBound = r.HostCPU != nil && r.HostCPU.Busy >= th.HostBusy
	for _, fl := range sendingFlows(r.Flows) {
		if fl.WindowBps > 0 && fl.SteadyBps > 0 {
			f.send = append(f.send, fl)
		}
	}
	return f
}

// counterShort names a direction's counter briefly: "rx interface",
// "tx wire estimate", "rx application".
func counterShort(dir, counter string) string {
	switch counter {
	case CounterWire:
		return dir + " wire estimate"
	case CounterBPF:
		return dir + " interface (bpf)"
	}
	return dir + " " + counter
}

// belowRated reports whether the link rate is below WireFraction × rated;
// known is false without a rated speed or a steady state.
// A rated speed the steady state exceeds (ratedTooLow) counts as unknown.
func (f *facts) belowRated() (below, known bool) {
	if f.r.RatedBps <= 0 || f.steady == nil || f.ratedTooLow() {
		return true, false
	}
	return f.link < f.th.WireFraction*f.r.RatedBps, true
}

// ratedTooLow reports whether the link's steady rate exceeds the rated
// speed by more than RatedExcess: the rated speed (often a guessed
// --link-speed) is then wrong.
func (f *facts) ratedTooLow() bool {
	return f.r.RatedBps > 0 && f.steady != nil && f.link > (1+f.th.RatedExcess)*f.r.RatedBps
}

// ratedWarning says the rated speed looks too low.
func (f *facts) ratedWarning() string {
	return fmt.Sprintf("the steady state (%s) %s is %.1f%% of the rated %s (%s), more than %s above it: "+
		"a link cannot carry more than its rated speed, so the rated speed looks wrong (too low); "+
		"check --link-speed or the interface's speed", f.linkLabel, fmtRate(f.r.Units, f.link), 100*f.link/f.r.RatedBps,
		fmtRate(f.r.Units, f.r.RatedBps), f.r.RatedSource, pct(f.th.RatedExcess))
}

// linkEvidence describes the link utilisation.
func (f *facts) linkEvidence() string {
	u := f.r.Units
	if f.steady == nil {
		return "no steady state: link utilisation unknown"
	}
	if f.r.RatedBps <= 0 {
		return fmt.Sprintf("steady state (%s) %s; rated speed unknown, utilisation not checked (give --link-speed)",
			f.linkLabel, fmtRate(u, f.link))
	}
	if f.ratedTooLow() {
		return fmt.Sprintf("steady state (%s) %s is above the rated %s (%s): the rated speed is too low, utilisation not checked",
			f.linkLabel, fmtRate(u, f.link), fmtRate(u, f.r.RatedBps), f.r.RatedSource)
	}
	return fmt.Sprintf("steady state (%s) %s = %.1f%% of the rated %s (%s)", f.linkLabel, fmtRate(u, f.link),
		100*f.link/f.r.RatedBps, fmtRate(u, f.r.RatedBps), f.r.RatedSource)
}

// evaluate runs every rule in order, then inconclusive.
func evaluate(f *facts) []Verdict {
	vs := []Verdict{ruleSoftirq(f), ruleWire(f)}
	vs = append(vs, ruleRateLimited(f), ruleWindow(f, vs[1].Fired()), ruleStorage(f), ruleHairpin(f))
	vs = append(vs, ruleSender(f, vs[1].Fired(), vs[2].Fired(), vs[3].Fired()))
	return append(vs, ruleInconclusive(f, vs))
}

// ruleInconclusive fires when no other rule did. Its first evidence is
// what the run shows (host CPU busy share, the busiest core, the steady
// state and whether it was flat, how much of their window the sending
// flows used, the delay line's late releases), its second (nextPrefix)
// the measurement that would tell the candidate causes apart; then what
// each rule lacked. When the host's CPUs were HostBusy busy it says they
// may be the ceiling; when neither they nor a core were, that the limit is
// outside this host.
func ruleInconclusive(f *facts, vs []Verdict) Verdict {
	v := Verdict{Rule: RuleInconclusive, Status: Fired,
		Summary: "no rule's conditions hold: the trace does not say where the ceiling is"}
	var why []string
	for _, x := range vs {
		switch x.Status {
		case Fired:
			v.Status, v.Summary = NotFired, "another rule fired"
		case Skipped:
			why = append(why, x.Rule+": skipped, "+x.Summary)
		case NotFired:
			why = append(why, x.Rule+": "+x.Summary)
		}
	}
	if v.Status != Fired {
		return v
	}
	r := f.r
	dl := delayLineOf(r.Manifest.Config)
	var last string
	switch {
	case f.cpuBound:
		v.Summary = fmt.Sprintf("no rule's conditions hold, but the host's CPUs were %s busy (/proc/stat, %s): "+
			"they may be the ceiling", pct(r.HostCPU.Busy), r.CPUWindow)
		if dl.late > 0 {
			v.Summary += fmt.Sprintf(", or the delay line (%s of packets released late)", pct(dl.lateShare()))
		}
		last = hostCPUEvidence(r) + ": the host's CPUs may be the ceiling"
	case f.notHostBound():
		// "Softirq or wire?" still gets an answer: not this host.
		hint := ""
		if below, known := f.belowRated(); !known {
			hint = "; give --link-speed to compare with the rated speed"
		} else if below {
			hint = fmt.Sprintf(" (the link ran at %s of its rated %s)", pct(f.link/r.RatedBps), fmtRate(r.Units, r.RatedBps))
		}
		v.Summary = fmt.Sprintf("not host-bound: busiest core %s, host CPUs %s busy, steady state %s (%s): the limit is "+
			"outside this host — the wire, the path or the peer%s", busiestShare(r), pct(r.HostCPU.Busy),
			fmtRate(r.Units, f.link), f.linkLabel, hint)
		last = hostCPUEvidence(r)
	}
	v.Evidence = append([]string{showsPrefix + f.runShows(dl), nextPrefix + f.nextMeasurement(vs, dl)}, why...)
	if last != "" {
		v.Evidence = append(v.Evidence, last)
	}
	return v
}

// showsPrefix and nextPrefix start the inconclusive verdict's first two
// evidence lines: what the run shows, and the measurement that would
// tell the candidate causes apart.
const (
	showsPrefix = "the run shows: "
	nextPrefix  = "next measurement: "
)

// notHostBound: the host's CPUs and every core had room (with /proc/stat
// and per-CPU figures over a steady state), so the limit is elsewhere.
func (f *facts) notHostBound() bool {
	return !f.cpuBound && f.r.HostCPU != nil && f.hasCPU && !f.sat && f.steady != nil
}

// runShows lists what the run shows when no rule fired, each figure with
// its window and source.
func (f *facts) runShows(dl delayLine) string {
	r := f.r
	var parts []string
	if h := r.HostCPU; h != nil {
		parts = append(parts, fmt.Sprintf("host CPUs %s busy (/proc/stat, %s)", pct(h.Busy), r.CPUWindow))
	} else {
		parts = append(parts, "host CPU busy "+na(r.reason(figProcStat, noProcColumns)))
	}
	c := busiestStat(r)
	switch {
	case c == nil || !f.hasCPU:
		parts = append(parts, "per-core softirq "+na(r.reason(figCPU, "no cpus rows")))
	case r.HotSource == HotAllSoftirq:
		parts = append(parts, fmt.Sprintf("busiest core CPU %d: %s in softirq, %s busy (/proc/stat)", c.CPU,
			pct(r.HotShare(*c)), pct(c.Proc.Busy)))
	case r.SoftirqOff != "":
		parts = append(parts, "per-core NET_RX softirq "+na("not recorded: "+r.SoftirqOff))
	case c.Proc != nil:
		parts = append(parts, fmt.Sprintf("busiest core CPU %d: %s in NET_RX softirq (BPF), %s busy (/proc/stat)", c.CPU,
			pct(c.Share), pct(c.Proc.Busy)))
	default:
		parts = append(parts, fmt.Sprintf("busiest core CPU %d: %s in NET_RX softirq (BPF)", c.CPU, pct(c.Share)))
	}
	if f.steady == nil {
		parts = append(parts, "no steady state (no interval moved bytes)")
	} else {
		fr, fw := flatnessCounter(r, f.steady)
		rate := fmt.Sprintf("steady state %s (%s)", fmtRate(r.Units, fw.SteadyBps), counterShort(r.PrimaryDir, fr.Counter))
		switch {
		case fw.SteadyIntervals < 2:
			rate += fmt.Sprintf(", flatness n/a (%s)", intervals(fw.SteadyIntervals))
		case fw.SteadyCV <= f.th.FlatCV:
			rate += fmt.Sprintf(" flat: CV %s <= %s over %s", pct(fw.SteadyCV), pct(f.th.FlatCV), intervals(fw.SteadyIntervals))
		default:
			rate += fmt.Sprintf(" not flat: CV %s > %s over %s", pct(fw.SteadyCV), pct(f.th.FlatCV), intervals(fw.SteadyIntervals))
		}
		parts = append(parts, rate)
	}
	if len(f.send) > 0 {
		ratios := make([]float64, 0, len(f.send))
		for _, fl := range f.send {
			ratios = append(ratios, r.BDP.windowRatio(fl))
		}
		parts = append(parts, fmt.Sprintf("sending flows at a median %s of window / srtt", pct(median(ratios))))
	}
	if dl.late > 0 {
		parts = append(parts, fmt.Sprintf("delay line: %s of %d packets released late, up to %s", pct(dl.lateShare()),
			dl.packets, fmtUs(float64(dl.maxLateNs)/1e3)))
	}
	return strings.Join(parts, "; ")
}

// nextMeasurement names what would tell the candidate causes apart when
// no rule fired.
func (f *facts) nextMeasurement(vs []Verdict, dl delayLine) string {
	r := f.r
	const twice = "twice the streams, then netprof analyze --compare of both runs: "
	var parts []string
	switch {
	case f.cpuBound:
		parts = append(parts, twice+"a window limit grows with the streams, a CPU limit stays flat")
		if dl.present {
			parts = append(parts, "a run without --rtt: a much faster veth pair on the same CPUs means the "+
				"user-space delay line is the ceiling")
		}
	case f.notHostBound():
		if _, known := f.belowRated(); !known {
			parts = append(parts, "--link-speed: at >= "+pct(f.th.WireFraction)+" of it the wire is the ceiling")
		}
		parts = append(parts, twice+"a limiter on the path stays flat as retransmits grow, a window limit grows "+
			"with the streams")
		if configString(r.Manifest.Config, "peer") != "" {
			parts = append(parts, "the peer's CPU: --full's cpu table")
		}
	default:
		if !f.hasCPU || r.HostCPU == nil {
			parts = append(parts, "per-CPU and host CPU figures (bench records /proc/stat; --probes softirq times "+
				"NET_RX) to tell a busy core or host from the rest")
		}
		if _, known := f.belowRated(); !known {
			parts = append(parts, "--link-speed to judge the wire")
		}
		parts = append(parts, twice+"a window limit grows with the streams")
	}
	for _, x := range vs {
		if x.Rule == RuleRateLimited && x.Status == Skipped && f.steady != nil && f.steady.SteadyIntervals < 3 {
			parts = append(parts, ">= 5 intervals let the rate-limited rule judge flatness")
		}
	}
	return strings.Join(parts, "; ")
}

// delayLine is a bench --rtt run's delay line counters over both
// directions (manifest config delay_line).
type delayLine struct {
	present                  bool
	packets, late, maxLateNs int64
}

// delayLineOf reads the delay line's counters from a manifest config;
// present is false without one.
func delayLineOf(c map[string]any) delayLine {
	var d delayLine
	d.present = ConfigInt(c, "rtt_ns") > 0
	dl, ok := c["delay_line"].(map[string]any)
	if !ok {
		return d
	}
	d.present = true
	for _, dir := range []string{"a_to_b", "b_to_a"} {
		x, _ := dl[dir].(map[string]any)
		d.packets, d.late = d.packets+ConfigInt(x, "packets"), d.late+ConfigInt(x, "late_packets")
		d.maxLateNs = max(d.maxLateNs, ConfigInt(x, "max_late_ns"))
	}
	return d
}

// lateShare is the share of the delay line's packets released late.
func (d delayLine) lateShare() float64 {
	if d.packets == 0 {
		return 0
	}
	return float64(d.late) / float64(d.packets)
}

// pct formats a fraction as a percentage with one decimal.
func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// fmtUs formats µs as "85 µs" or "2.05 ms".
func fmtUs(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.2f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
