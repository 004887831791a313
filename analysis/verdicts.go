package analysis

import (
	"fmt"
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

// ruleInconclusive fires when no other rule did, listing what was missing
// and, when the host's CPUs were busy, that they may be the ceiling.
func ruleInconclusive(f *facts, vs []Verdict) Verdict {
	v := Verdict{Rule: RuleInconclusive, Status: Fired,
		Summary: "no rule's conditions hold: the trace does not say where the ceiling is"}
	for _, x := range vs {
		switch x.Status {
		case Fired:
			v.Status, v.Summary = NotFired, "another rule fired"
		case Skipped:
			v.Evidence = append(v.Evidence, x.Rule+": skipped, "+x.Summary)
		case NotFired:
			v.Evidence = append(v.Evidence, x.Rule+": "+x.Summary)
		}
	}
	switch {
	case v.Status != Fired:
		v.Evidence = nil
	case f.cpuBound:
		v.Evidence = append(v.Evidence, hostCPUEvidence(f.r)+": the host's CPUs may be the ceiling")
	case f.r.HostCPU != nil && f.hasCPU && !f.sat && f.steady != nil:
		// "Softirq or wire?" still gets an answer: not this host.
		r := f.r
		hint := ""
		if below, known := f.belowRated(); !known {
			hint = "; give --link-speed to compare with the rated speed"
		} else if below {
			hint = fmt.Sprintf(" (the link ran at %s of its rated %s)", pct(f.link/r.RatedBps), fmtRate(r.Units, r.RatedBps))
		}
		v.Summary = fmt.Sprintf("not host-bound: busiest core %s, host CPUs %s busy, steady state %s (%s): the limit is "+
			"outside this host — the wire, the path or the peer%s", busiestShare(r), pct(r.HostCPU.Busy),
			fmtRate(r.Units, f.link), f.linkLabel, hint)
		v.Evidence = append(v.Evidence, hostCPUEvidence(r))
	}
	return v
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
