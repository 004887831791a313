package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netprof/netprof/analysis"
	"github.com/netprof/netprof/internal/units"
)

// WriteText writes the summary as the report's last sections: both ends'
// CPU, the peer, the phases and the socket options.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("\n")
	s.writeCPU(&b)
	s.writePeer(&b)
	s.writePhases(&b)
	s.writeSockOpts(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (s *Summary) writeCPU(b *strings.Builder) {
	if len(s.CPU) == 0 {
		b.WriteString("cpu: n/a (/proc/stat unreadable or no measured interval)\n")
		return
	}
	b.WriteString("cpu over the measured intervals (host: % of all CPUs, /proc/stat; process: netprof's own, getrusage;\n" +
		"per GB: CPU seconds per 10^9 payload bytes " + movedBases(s.CPU) + ")\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "end\trole\tuser %\tsystem %\tsoftirq %\tbusy %\tbusiest CPU softirq % (median)\tprocess CPU s\thost CPU s/GB\tprocess CPU s/GB")
	for _, f := range s.CPU {
		cpu := "n/a"
		if f.BusiestSoftIRQCPU >= 0 {
			cpu = fmt.Sprintf("%.1f (CPU %d)", f.BusiestSoftIRQPct, f.BusiestSoftIRQCPU)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%.2f (%.0f%% of a CPU)\t%s\t%s\n", f.End, f.Role, f.UserPct, f.SystemPct,
			f.SoftIRQPct, f.BusyPct, cpu, f.ProcessCPUSeconds, f.ProcessCPUPct, perGB(f.HostCPUSecondsPerGB), perGB(f.ProcessCPUSecondsPerGB))
	}
	_ = tw.Flush()
	for _, f := range s.CPU {
		if f.Note != "" {
			fmt.Fprintf(b, "  note (%s): %s\n", f.End, f.Note)
		}
	}
}

// movedBases says what the per-GB figures divide by, per end when the
// ends differ.
func movedBases(fs []CPUFigures) string {
	var out []string
	for _, f := range fs {
		if b := movedBasis(f); !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.End+": "+movedBasis(f))
	}
	return strings.Join(parts, "; ")
}

// movedBasis returns f's MovedBasis; a summary recorded before it was
// (read back by analyze) divided by each byte once on the local test bed
// (role both, no peer) and by sent plus received otherwise.
func movedBasis(f CPUFigures) string {
	switch {
	case f.MovedBasis != "":
		return f.MovedBasis
	case f.Role == "both" && strings.HasPrefix(f.End, "local test bed"):
		return MovedOnce
	}
	return MovedSentReceived
}

func perGB(v *float64) string {
	if v == nil {
		return "n/a (no payload)"
	}
	return fmt.Sprintf("%.3f", *v)
}

func (s *Summary) writePeer(b *strings.Builder) {
	p := s.Peer
	if p == nil {
		return
	}
	result := "no result (peer lost)"
	if p.ResultOK != nil && *p.ResultOK {
		result = "result ok"
	} else if p.ResultOK != nil {
		result = "result failed: " + p.ResultError
	}
	fmt.Fprintf(b, "peer %s (%s), data ports %s: %d interval reports in the trace (role %s rows), received %s, sent %s; %s\n",
		p.Address, orNA(p.Software), portList(p.DataPorts), p.Intervals, peerRowsRole(s.Direction),
		units.FormatBytes(p.ReceivedBytes), units.FormatBytes(p.SentBytes), result)
}

func peerRowsRole(dir string) string {
	switch dir {
	case "reverse":
		return "sender"
	case "bidir":
		return "receiver and sender"
	}
	return "receiver"
}

func (s *Summary) writePhases(b *strings.Builder) {
	if s.WarmupNs == 0 && s.CooldownNs == 0 {
		return
	}
	n := s.IntervalsByPhase
	fmt.Fprintf(b, "phases: warm-up %v (%d intervals) and cool-down %v (%d intervals) are in the trace (traffic.phase) "+
		"and excluded from every figure; %d measured intervals\n", time.Duration(s.WarmupNs), n["warmup"],
		time.Duration(s.CooldownNs), n["cooldown"], n["measure"])
}

func (s *Summary) writeSockOpts(b *strings.Builder) {
	r := s.SockOpts
	if r == nil {
		return
	}
	fmt.Fprintf(b, "socket options asked: %s\n", requested(r.Requested))
	for _, e := range r.Ends {
		pacing := "unlimited"
		if e.MaxPacingRateBitPS != nil {
			pacing = units.Rate(*e.MaxPacingRateBitPS).String()
		}
		fmt.Fprintf(b, "  %s end: SO_SNDBUF %d / SO_RCVBUF %d (reported; usable %v / %v), TCP_CONGESTION %s, "+
			"TCP_MAXSEG %d, tcpi_snd_mss %d, TCP_NODELAY %t, SO_BINDTODEVICE %s, SO_MAX_PACING_RATE %s\n",
			e.End, e.SndBufReported, e.RcvBufReported, units.Size(e.SndBufUsable), units.Size(e.RcvBufUsable),
			e.Congestion, e.MaxSeg, e.SndMSS, e.NoDelay, orNA(e.BindDev), pacing)
	}
	for _, n := range r.Notes {
		b.WriteString("  not as asked: " + n + "\n")
	}
}

// requested formats the asked socket options with units (numbers are
// float64 once the summary was read back from manifest.json).
func requested(m map[string]any) string { return analysis.SocketOptionsText(m) }

func orNA(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func portList(ps []int) string {
	var out []string
	for _, p := range ps {
		out = append(out, strconv.Itoa(p))
	}
	if len(out) > 8 {
		return out[0] + "-" + out[len(out)-1]
	}
	return strings.Join(out, ",")
}
