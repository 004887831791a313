package watch

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/netprof/netprof/measure/ifaces"
	"github.com/netprof/netprof/trace"
)

// IfaceRate is one counted interface over one interval.
type IfaceRate struct {
	Name   string
	Index  int
	Driver string
	// RxBps and TxBps are decimal bit/s: the netlink counter's delta × 8
	// over the measured interval (not the nominal one).
	RxBps, TxBps float64
	// Util is the larger direction's share of the rated speed ("42%"), or
	// "n/a (reason)"; never above 100%.
	Util string
}

// FlowRate is one flow over one interval (BPF netdev probe).
type FlowRate struct {
	Flow    string  // "local -> remote"
	Bps     float64 // rx + tx, decimal bit/s (L2; payload when Payload)
	RTTP50  uint32  // µs, 0 when no RTT sample
	Samples uint64
	// Payload: Bps counts the socket iterator's payload bytes (acked +
	// received), the netdev probe not running.
	Payload bool
}

// Summary is what the live view prints for one interval.
type Summary struct {
	End      time.Time
	Interval time.Duration
	Ifaces   []IfaceRate
	// Busiest CPU's softirq share (0-1) and where it came from ("NET_RX,
	// bpf softirq probe" or "all softirqs, /proc/stat"); SoftirqOK false
	// when neither was available.
	CPU           int
	SoftirqRatio  float64
	SoftirqSource string
	SoftirqOK     bool
	// RTTP50 is the median of the interval's tcp_probe RTT samples,
	// approximated as the sample-weighted median of per-flow medians;
	// without tcp_probe, the median of the active flows' latest RTT
	// samples (socket iterator).
	RTTP50 time.Duration
	RTTOK  bool
	Top    []FlowRate
	// Notes are interface changes seen in this interval.
	Notes []string
}

// summarise turns one recorded interval into the view's figures.
// bpfSoftirq says the softirq probe is loaded (its CPU rows count even at 0).
func summarise(end time.Time, iv *trace.Interval, tr *ifaces.Tracker, bpfSoftirq bool, topN int) Summary {
	s := Summary{End: end}
	for _, r := range iv.Ifaces {
		if r.IntervalNs > 0 {
			s.Interval = time.Duration(r.IntervalNs)
			break
		}
	}
	sec := s.Interval.Seconds()
	for _, r := range iv.Ifaces {
		if r.Netns != tr.Netns() || sec <= 0 {
			continue
		}
		ir := IfaceRate{Name: r.Ifname, Index: int(r.Ifindex), Driver: r.Driver,
			RxBps: float64(r.RxBytes) * 8 / sec, TxBps: float64(r.TxBytes) * 8 / sec}
		ir.Util = "n/a (not a tracked interface)"
		if m, ok := tr.Member(ir.Index); ok {
			if pct, ok, why := ifaces.Utilisation(max(ir.RxBps, ir.TxBps), m); ok {
				ir.Util = fmt.Sprintf("%.0f%%", pct)
			} else {
				ir.Util = "n/a (" + why + ")"
			}
		}
		s.Ifaces = append(s.Ifaces, ir)
	}
	for _, c := range iv.CPUs {
		if c.IntervalNs <= 0 || !bpfSoftirq || c.NetRxSoftirqNs == nil {
			continue
		}
		r := float64(*c.NetRxSoftirqNs) / float64(c.IntervalNs)
		if !s.SoftirqOK || r > s.SoftirqRatio {
			s.CPU, s.SoftirqRatio, s.SoftirqOK = int(c.CPU), r, true
		}
	}
	if s.SoftirqOK {
		s.SoftirqSource = "NET_RX, bpf softirq probe"
	} else {
		// Without the probe: every vector's softirq time over the CPU's
		// accounted time (measure.ProcSampler's columns).
		for _, c := range iv.CPUs {
			if c.ProcSoftirqNs == nil || c.ProcTotalNs == nil || *c.ProcTotalNs == 0 {
				continue
			}
			r := min(float64(*c.ProcSoftirqNs)/float64(*c.ProcTotalNs), 1)
			if !s.SoftirqOK || r > s.SoftirqRatio {
				s.CPU, s.SoftirqRatio, s.SoftirqOK, s.SoftirqSource = int(c.CPU), r, true, "all softirqs, /proc/stat"
			}
		}
	}
	s.Top, s.RTTP50, s.RTTOK = flows(iv, sec, topN)
	return s
}

func flows(iv *trace.Interval, sec float64, topN int) ([]FlowRate, time.Duration, bool) {
	var all []FlowRate
	type p50 struct {
		us uint32
		n  uint64
	}
	var rtts []p50
	var total uint64
	for _, f := range iv.Flows {
		fr := FlowRate{Flow: fmt.Sprintf("%s:%d -> %s:%d", f.SrcAddr, f.SrcPort, f.DstAddr, f.DstPort), Samples: f.RTTSamples}
		bytes := f.RxBytes + f.TxBytes
		if bytes == 0 && f.TCPBytesAcked != nil && f.TCPBytesReceived != nil {
			// no netdev probe: the socket iterator's payload bytes
			bytes, fr.Payload = *f.TCPBytesAcked+*f.TCPBytesReceived, true
		}
		if sec > 0 {
			fr.Bps = float64(bytes) * 8 / sec
		}
		switch {
		case f.RTTP50Us != nil && f.RTTSamples > 0:
			fr.RTTP50 = *f.RTTP50Us
			rtts = append(rtts, p50{*f.RTTP50Us, f.RTTSamples})
			total += f.RTTSamples
		case f.TCPLastRttUs != nil && bytes > 0:
			// no tcp_probe: the socket's latest RTT sample at the read
			fr.RTTP50, fr.Samples = *f.TCPLastRttUs, 1
			rtts = append(rtts, p50{*f.TCPLastRttUs, 1})
			total++
		}
		if fr.Bps > 0 || fr.Samples > 0 {
			all = append(all, fr)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Bps > all[j].Bps })
	if len(all) > topN {
		all = all[:topN]
	}
	if total == 0 {
		return all, 0, false
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i].us < rtts[j].us })
	var acc uint64
	for _, r := range rtts {
		acc += r.n
		if 2*acc >= total {
			return all, time.Duration(r.us) * time.Microsecond, true
		}
	}
	return all, 0, false
}

// gbps formats decimal bit/s as Gbit/s.
func gbps(bps float64) string { return fmt.Sprintf("%.2f", bps/1e9) }

// write prints the interval: one line of interface rates and summary
// figures, then the top flows and any notes, indented. elapsed and total
// (0 = until Ctrl-C) give the progress.
func (s Summary) write(w io.Writer, elapsed, total time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", s.End.Local().Format("15:04:05"))
	if total > 0 {
		fmt.Fprintf(&b, " [%s elapsed, %s left]", elapsed.Round(time.Second), max(total-elapsed, 0).Round(time.Second))
	}
	if len(s.Ifaces) == 0 {
		b.WriteString("  no counted interface left (see notes)")
	}
	for _, r := range s.Ifaces {
		fmt.Fprintf(&b, "  %s rx %s tx %s Gbit/s util %s", r.Name, gbps(r.RxBps), gbps(r.TxBps), r.Util)
	}
	if s.SoftirqOK {
		fmt.Fprintf(&b, "  | busiest cpu%d softirq %.0f%% (%s)", s.CPU, 100*s.SoftirqRatio, s.SoftirqSource)
	} else {
		b.WriteString("  | softirq n/a")
	}
	if s.RTTOK {
		fmt.Fprintf(&b, "  | rtt p50 %d µs", s.RTTP50.Microseconds())
	} else {
		b.WriteString("  | rtt n/a (no RTT sample)")
	}
	fmt.Fprintln(w, b.String())
	for _, f := range s.Top {
		rtt := "rtt n/a"
		switch {
		case f.RTTP50 > 0 && f.Payload:
			rtt = fmt.Sprintf("rtt %d µs (latest sample)", f.RTTP50)
		case f.RTTP50 > 0:
			rtt = fmt.Sprintf("rtt p50 %d µs", f.RTTP50)
		}
		payload := ""
		if f.Payload {
			payload = " payload"
		}
		fmt.Fprintf(w, "         flow %s  %s Gbit/s%s  %s\n", f.Flow, gbps(f.Bps), payload, rtt)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "         note: %s\n", n)
	}
}
