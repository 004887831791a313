package analysis

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SummaryWidth is the widest line WriteSummary prints, in characters.
const SummaryWidth = 100

// SummaryLines is the most lines WriteSummary prints.
const SummaryLines = 40

// WriteSummary writes the report's one screen (at most SummaryLines lines
// of at most SummaryWidth characters): the answer first (the ceiling and
// its evidence), then throughput (peak / steady state / whole run,
// application and wire), the hot core (one figure, its window named), the
// RTT floor, retransmits, what the probes cost and where the trace is.
// WriteText has everything else.
func (r *Report) WriteSummary(w io.Writer) error {
	s := &summary{w: w, color: r.Color}
	r.summaryHeader(s)
	r.summaryVerdict(s)
	r.summaryThroughput(s)
	r.summaryFigures(s)
	return s.flush()
}

// summary collects wrapped lines and writes them at most SummaryLines.
type summary struct {
	w     io.Writer
	color bool
	lines []string
}

// add appends prefix + text, the text wrapped at SummaryWidth with
// continuation lines indented to the end of prefix.
func (s *summary) add(prefix, text string) {
	pad := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	for i, l := range wrapText(text, SummaryWidth-utf8.RuneCountInString(prefix)) {
		if i == 0 {
			s.lines = append(s.lines, prefix+l)
		} else {
			s.lines = append(s.lines, pad+l)
		}
	}
}

// addJoined joins parts with sep into lines of at most SummaryWidth,
// breaking only between parts (a part longer than a line is wrapped at
// spaces); continuation lines are indented by two spaces.
func (s *summary) addJoined(parts []string, sep string) {
	line, indent := "", ""
	for _, p := range parts {
		switch {
		case line == "":
			line = indent + p
		case utf8.RuneCountInString(line+sep+p) <= SummaryWidth:
			line += sep + p
		default:
			s.add(indent, strings.TrimPrefix(line, indent))
			indent = "  "
			line = indent + p
		}
	}
	if line != "" {
		s.add(indent, strings.TrimPrefix(line, indent))
	}
}

func (s *summary) flush() error {
	lines := s.lines
	if len(lines) > SummaryLines {
		lines = append(lines[:SummaryLines-1], "... (netprof analyze --full for the rest)")
	}
	_, err := io.WriteString(s.w, strings.Join(lines, "\n")+"\n")
	return err
}

// wrapText breaks text into lines of at most width characters at spaces
// (a word longer than a line is cut).
func wrapText(text string, width int) []string {
	width = max(width, 20)
	var out []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
		for utf8.RuneCountInString(line) > width {
			cut := []rune(line)
			out = append(out, string(cut[:width]))
			line = string(cut[width:])
		}
	}
	return append(out, line)
}

// summaryHeader prints the run: command, direction and streams, the
// test bed's delay line or the peer, length, host and status, wrapped at
// the separators; then the rated link speed (with a warning when the
// steady state exceeds it).
func (r *Report) summaryHeader(s *summary) {
	m := r.Manifest
	parts := []string{"netprof " + orDash(configString(m.Config, "command"))}
	if t := runShape(m.Config); t != "" {
		parts = append(parts, t)
	}
	if d := ConfigInt(m.Config, "rtt_ns"); d > 0 {
		parts = append(parts, fmtNs(d)+" delay line (--rtt)")
	}
	if p := configString(m.Config, "peer"); p != "" {
		parts = append(parts, "--peer "+p)
	}
	if !r.RunStart.IsZero() && r.RunEnd.After(r.RunStart) {
		parts = append(parts, fmt.Sprintf("%.1f s from %s UTC", r.RunEnd.Sub(r.RunStart).Seconds(),
			r.RunStart.UTC().Format("2006-01-02 15:04:05")))
	}
	parts = append(parts, "host "+r.HostDesc(), "status "+orDash(m.Status))
	s.addJoined(parts, " · ")
	rated := na("unknown: give --link-speed")
	if r.RatedBps > 0 {
		rated = fmtRate(r.Units, r.RatedBps) + " (" + r.RatedSource + ")"
	}
	s.add("rated link speed ", rated)
	if l := r.RatedLow; l != nil {
		s.add("  warning: ", fmt.Sprintf("steady state (%s) %s is %s of it: the rated speed is too low", l.Counter,
			fmtRate(r.Units, l.SteadyBps), pct(l.SteadyBps/r.RatedBps)))
	}
}

// fmtNs formats a duration given in ns with a space before its unit and
// no trailing zeros: "5 ms", "2.5 ms", "150 µs", "2 s".
func fmtNs(ns int64) string {
	v, unit := float64(ns)/1e3, "µs"
	switch {
	case ns >= 1e9:
		v, unit = float64(ns)/1e9, "s"
	case ns >= 1e6:
		v, unit = float64(ns)/1e6, "ms"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
}

// runShape names a run's direction and streams from its manifest config:
// "4 streams", "reverse (the far end sends), 1 stream", "bidir, 4 streams
// each way (8 in all)"; "" without streams or a direction.
func runShape(c map[string]any) string {
	n := ConfigInt(c, "streams")
	streams := ""
	if n > 0 {
		streams = plural(n, "stream")
	}
	switch configString(c, "direction") {
	case "bidir":
		if n > 0 {
			streams = fmt.Sprintf("%s each way (%d in all)", streams, 2*n)
		}
		return strings.TrimSuffix("bidir, "+streams, ", ")
	case "reverse":
		return strings.TrimSuffix("reverse (the far end sends), "+streams, ", ")
	}
	return streams
}

// plural formats n with word, adding "s" unless n is 1: "1 note", "2 notes".
func plural[T int | int64 | uint64](n T, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// summaryVerdict prints the ceiling: the first fired rule (inconclusive
// last), its one-line finding and first evidence (for inconclusive, what
// the run shows and the measurement that would tell the causes apart),
// and the other rules that fired.
func (r *Report) summaryVerdict(s *summary) {
	s.lines = append(s.lines, "")
	var main *Verdict
	var others []string
	for i := range r.Verdicts {
		v := &r.Verdicts[i]
		if !v.Fired() {
			continue
		}
		if main == nil || (main.Rule == RuleInconclusive && v.Rule != RuleInconclusive) {
			if main != nil {
				others = append(others, main.Rule)
			}
			main = v
			continue
		}
		others = append(others, v.Rule)
	}
	if main == nil {
		s.add("ceiling: ", "none of the rules could be evaluated")
		return
	}
	name := main.Rule
	if s.color {
		name = "\x1b[1m" + name + "\x1b[0m"
	}
	s.add("ceiling: ", name+" — "+main.Summary)
	if len(main.Evidence) > 0 {
		s.add("  evidence: ", strings.TrimPrefix(main.Evidence[0], showsPrefix))
	}
	if len(main.Evidence) > 1 && strings.HasPrefix(main.Evidence[1], nextPrefix) {
		s.add("  next: ", strings.TrimPrefix(main.Evidence[1], nextPrefix))
	}
	if len(others) > 0 {
		s.add("  also fired: ", strings.Join(others, ", "))
	}
}

// summaryThroughput prints peak / steady / whole run of each direction's
// application and wire (else interface) rate.
func (r *Report) summaryThroughput(s *summary) {
	u := r.Units
	s.lines = append(s.lines, "")
	rows := [][]string{{"throughput, " + u.RateUnitLong(), "peak", "steady", "whole run"}}
	for _, d := range []*Direction{&r.Rx, &r.Tx} {
		var app, link *Rate
		for i := range d.Rates {
			switch rt := &d.Rates[i]; rt.Counter {
			case CounterApp:
				app = rt
			case CounterWire:
				if rt.W != nil {
					link = rt
				}
			case CounterNetlink:
				if link == nil && rt.W != nil {
					link = rt
				}
			}
		}
		for _, rt := range []*Rate{app, link} {
			if rt == nil || rt.W == nil {
				continue
			}
			label := d.Name + " " + rt.Label
			if rt.Counter != CounterApp {
				label = d.Name + " " + strings.TrimPrefix(strings.TrimPrefix(rt.Label, "interface "+d.Name+" "), "wire estimate "+d.Name+" ")
				label = strings.Replace(label, d.Name+" (", d.Name+" "+strings.Fields(rt.Label)[0]+" (", 1)
				label = strings.NewReplacer("IP packets: TUN device, no L2 header", "TUN: no L2 header",
					"loopback: IP packets, no L2 header", "loopback: no L2 header").Replace(label)
			}
			steady := "n/a"
			if rt.W.HasActive() {
				steady = u.FormatRate(rt.W.SteadyBps)
				if rt.W.SteadyApprox {
					steady += "~"
				}
			}
			rows = append(rows, []string{"  " + label, u.FormatRate(rt.W.PeakBps), steady, u.FormatRate(rt.W.WholeRunBps)})
		}
	}
	if len(rows) == 1 {
		s.add("throughput: ", "n/a (no traffic or interface rows)")
		return
	}
	s.lines = append(s.lines, alignRows(rows, SummaryWidth)...)
	if b := r.bidirText(); b != "" {
		s.add("  bidir: ", strings.TrimPrefix(b, "bidir: "))
	}
	if w := r.steady(); w != nil {
		cv := "CV n/a"
		if w.SteadyIntervals > 1 {
			cv = "CV " + pct(w.SteadyCV)
		}
		s.add("  steady state: ", fmt.Sprintf("%s of %s (%s, %s); whole run %.1f s", intervals(w.SteadyIntervals),
			r.PrimaryDir+" "+r.Primary.Counter, r.steadyWindowText(w), cv, r.RunEnd.Sub(r.RunStart).Seconds()))
	}
}

// steadyWindowText says how the steady state was chosen, briefly.
func (r *Report) steadyWindowText(w *Windows) string {
	if w.SteadyApprox {
		return "approximate: run too short to drop ramp-up"
	}
	return "first and last dropped"
}

// alignRows aligns cells in columns (first left, the rest right) and cuts
// each line at width.
func alignRows(rows [][]string, width int) []string {
	var widths []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	// Shrink the first column so lines fit.
	total := 0
	for _, w := range widths {
		total += w + 2
	}
	if over := total - 2 - width; over > 0 {
		widths[0] = max(widths[0]-over, 10)
	}
	var out []string
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			rc := []rune(c)
			if len(rc) > widths[i] {
				rc = append(rc[:widths[i]-1], '…')
			}
			c = string(rc)
			padn := widths[i] - utf8.RuneCountInString(c)
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", padn))
			} else {
				b.WriteString("  " + strings.Repeat(" ", padn) + c)
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

// summaryFigures prints the hot core, RTT floor, retransmits, probe cost
// and the trace's location.
func (r *Report) summaryFigures(s *summary) {
	s.lines = append(s.lines, "")
	s.add("hot core     ", r.hotCoreText())
	s.add("RTT floor    ", r.rttFloorText())
	s.add("retransmits  ", r.retxText())
	s.add("drops        ", r.DropsLine())
	if len(r.NICLoss) > 0 {
		s.add("NIC loss     ", r.NICLossLine())
	}
	cost := r.ProbeCostLine()
	if r.ProbeCost != nil {
		cost = "over the " + orDash(r.CPUWindow) + ": " + cost
	}
	s.add("probe cost   ", cost)
	s.add("trace        ", orDash(r.Dir))
	dir := "RUN_DIR"
	if r.Dir != "" {
		dir = shellQuote(r.Dir)
	}
	s.add("details      ", fmt.Sprintf("netprof analyze --full %s: per-CPU and per-flow tables, every verdict's evidence, %s",
		dir, plural(len(r.Notes), "note")))
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=+,@%.
func shellQuote(s string) string {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=+,@%", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

func (r *Report) hotCoreText() string {
	for _, c := range r.CPUs {
		if c.CPU != r.BusiestCPU {
			continue
		}
		what := "NET_RX softirq time (BPF)"
		if r.HotSource == HotAllSoftirq {
			what = "softirq time of every vector (/proc/stat, tick-sampled)"
		}
		s := fmt.Sprintf("cpu%d: %s %s over the %s (%s; %s online)", c.CPU, pct(r.HotShare(c)), what,
			orDash(r.CPUWindow), intervals(r.CPUIntervals), plural(len(r.CPUs), "CPU"))
		if f := r.hotFeedsText(c.CPU); f != "" {
			s += "; " + f
		}
		return s
	}
	return na(r.reason(figCPU, "no cpus rows"))
}

// rttFloorText labels the RTT floor with the source FloorUs took it from:
// the kernel's min_rtt_us, or the lowest sample (tcp_probe, or the socket
// iterator's last RTT per flow-interval); p50 is always of the samples.
func (r *Report) rttFloorText() string {
	t := r.RTT
	if t == nil || t.FloorUs() == 0 {
		return na(r.reason(figRTT, "no RTT samples"))
	}
	samples := "tcp_probe samples, all flows"
	if t.FromIterator {
		samples = "socket iterator's last RTT per flow-interval"
	}
	if t.FloorFromKernel() {
		s := fmt.Sprintf("%s (kernel min_rtt_us, flows.min_rtt_us: its minimum over every ACK, whole run); p50 %s (%s",
			fmtUs(float64(t.FloorUs())), fmtUs(float64(t.P50Us)), samples)
		if t.MinUs > 0 {
			s += "; their lowest " + fmtUs(float64(t.MinUs))
		}
		return s + ")"
	}
	same := ""
	if t.KernelMinUs == t.MinUs {
		same = "; kernel min_rtt_us the same"
	}
	return fmt.Sprintf("%s (lowest sample: %s, whole run%s); p50 %s", fmtUs(float64(t.FloorUs())), samples, same,
		fmtUs(float64(t.P50Us)))
}

func (r *Report) retxText() string {
	x := r.Retx
	if x.Source == "" {
		return na(r.reason(figSndRetx, "not recorded"))
	}
	s := fmt.Sprintf("%s sent again (%s, whole run)", plural(x.Segments, "segment"), x.Source)
	if x.SegmentsSent > 0 {
		s += fmt.Sprintf(": %.3f%% of %d segments sent", 100*x.Fraction, x.SegmentsSent)
	}
	if x.SentBytes > 0 {
		s += fmt.Sprintf("; %.1f per GB sent", x.PerGB)
	}
	if path := r.hostLocalPath(); path != "" && x.Segments > 0 && r.Drops != nil {
		if lost, _ := r.DropTotals(); lost == 0 {
			s += "; no packet lost on this " + path + " path (skb:kfree_skb): the retransmits were spurious (e.g. reordering)"
		}
	}
	return s
}

// hostLocalPath names the path when the run's interfaces never leave the
// host — "veth" when the receiving and sending interfaces (manifest
// drivers) are veths, "loopback" when lo — else "" (a wire, or not known).
func (r *Report) hostLocalPath() string {
	kinds := map[string]bool{}
	for _, d := range []*Direction{&r.Rx, &r.Tx} {
		switch {
		case d.Iface == "":
			continue
		case d.Loopback:
			kinds["loopback"] = true
		case r.ifaceDriver(d) == "veth":
			kinds["veth"] = true
		default:
			return ""
		}
	}
	if len(kinds) != 1 {
		return ""
	}
	for k := range kinds {
		return k
	}
	return ""
}

// ifaceDriver is the manifest's driver of d's interface, or "".
func (r *Report) ifaceDriver(d *Direction) string {
	for _, mi := range r.Manifest.Interfaces {
		if mi.Name == d.Iface && (d.IfaceNetns == 0 || mi.Netns == 0 || mi.Netns == d.IfaceNetns) {
			return mi.Driver
		}
	}
	return ""
}
