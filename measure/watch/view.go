package watch

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

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

// FlowRate is one TCP connection over one interval: both of its ends'
// rows merged when both are on this host (e.g. on lo), shown once.
type FlowRate struct {
	// Flow is "sender -> receiver" (addr:port) when the direction of the
	// data is known (one end sent more than it received), else "local ->
	// remote" as the row has it.
	Flow string
	// Ends says which ends of the connection this host has: EndsBoth
	// (their rows merged: the sending end's figures shown), EndsSending,
	// EndsReceiving, or "" when the direction is not known.
	Ends string
	Bps  float64 // rx + tx of one end, decimal bit/s (L2; payload when Payload)
	// RTTP50 is the p50 of the sending end's tcp_probe samples (Samples
	// of them), else its latest sample (socket iterator, Samples 1), µs;
	// 0 when none.
	RTTP50  uint32
	Samples uint64
	// Payload: Bps counts the socket iterator's payload bytes (acked +
	// received), the netdev probe not running.
	Payload bool
}

// Ends of a connection on this host (FlowRate.Ends).
const (
	EndsBoth      = "both ends"
	EndsSending   = "sending end"
	EndsReceiving = "receiving end"
)

// rttText is the flow's RTT — "rtt p50" of its tcp_probe samples, else
// "rtt" of the socket's latest sample (the header says so) — or n/a with
// why.
func (f FlowRate) rttText() string {
	switch {
	case f.RTTP50 > 0 && f.Samples > 1:
		return fmt.Sprintf("rtt p50 %d µs", f.RTTP50)
	case f.RTTP50 > 0:
		return fmt.Sprintf("rtt %d µs", f.RTTP50)
	case f.Ends == EndsReceiving:
		return "rtt n/a (receiving end: TCP samples RTT from ACKs of the data it sends)"
	}
	return "rtt n/a (no RTT sample this interval)"
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
	// RTTP50 is the median of the interval's tcp_probe RTT samples of the
	// connections' sending ends, approximated as the sample-weighted
	// median of per-flow medians; without tcp_probe, the median of their
	// latest RTT samples (socket iterator). Receiving ends are left out
	// (see connection).
	RTTP50 time.Duration
	RTTOK  bool
	Top    []FlowRate
	// Notes are interface changes seen in this interval.
	Notes []string
}

// summarise turns one recorded interval into the view's figures.
// bpfSoftirq says the softirq probe is loaded (its CPU rows count even at 0).
// hist remembers what each connection's ends sent (see connHistory).
func summarise(end time.Time, iv *trace.Interval, tr *ifaces.Tracker, bpfSoftirq bool, topN int, hist *connHistory) Summary {
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
	s.Top, s.RTTP50, s.RTTOK = flows(iv, sec, topN, hist)
	return s
}

// flowEnd is one end's view of a connection over the interval: its rows
// (one per interface) added up.
type flowEnd struct {
	src, dst   string    // "addr:port", local and remote
	sent, recv uint64    // bytes this end sent and received
	total      [2]uint64 // sent and received since watch first saw the end (connHistory)
	payload    bool
	rtt        uint32 // µs, 0 without a sample
	samples    uint64
}

// connHistory is what each end of the connections seen in the last
// interval sent and received since watch first saw it (bytes, by end key
// "proto src>dst"): the end that sent more is a connection's sender, so a
// bulk connection keeps its name and direction through intervals in which
// its receiver sends a reply and the sender nothing. Ends missing from an
// interval are forgotten.
type connHistory map[string][2]uint64 // sent, received

// flows merges the interval's flows rows into connections (both ends'
// rows when both are on this host, e.g. over lo), returns the topN by
// rate and the median RTT over every connection's sending end's samples
// (a receiving end alone has none: see connection).
// hist (nil: none) is updated with the interval's bytes.
func flows(iv *trace.Interval, sec float64, topN int, hist *connHistory) ([]FlowRate, time.Duration, bool) {
	type p50 struct {
		us uint32
		n  uint64
	}
	var rtts []p50
	var total uint64
	ends := map[string]*flowEnd{}
	var order []string
	for _, f := range iv.Flows {
		src, dst := net.JoinHostPort(f.SrcAddr, fmt.Sprint(f.SrcPort)), net.JoinHostPort(f.DstAddr, fmt.Sprint(f.DstPort))
		k := fmt.Sprintf("%d %s>%s", f.Proto, src, dst)
		e := ends[k]
		if e == nil {
			e = &flowEnd{src: src, dst: dst}
			ends[k] = e
			order = append(order, k)
		}
		sent, recv := f.TxBytes, f.RxBytes
		if sent+recv == 0 && f.TCPBytesAcked != nil && f.TCPBytesReceived != nil {
			// no netdev probe: the socket iterator's payload bytes
			sent, recv, e.payload = *f.TCPBytesAcked, *f.TCPBytesReceived, true
		}
		e.sent += sent
		e.recv += recv
		switch {
		case f.RTTP50Us != nil && f.RTTSamples > 0:
			if f.RTTSamples > e.samples {
				e.rtt, e.samples = *f.RTTP50Us, f.RTTSamples
			}
		case f.TCPLastRttUs != nil && *f.TCPLastRttUs > 0 && sent+recv > 0 && e.samples == 0:
			// no tcp_probe: the socket's latest RTT sample at the read
			e.rtt, e.samples = *f.TCPLastRttUs, 1
		}
	}
	next := connHistory{}
	for _, k := range order {
		e := ends[k]
		if hist != nil {
			e.total = (*hist)[k]
		}
		e.total[0] += e.sent
		e.total[1] += e.recv
		next[k] = e.total
	}
	if hist != nil {
		*hist = next
	}
	var all []FlowRate
	done := map[string]bool{}
	for _, k := range order {
		if done[k] {
			continue
		}
		done[k] = true
		e := ends[k]
		proto, _, _ := strings.Cut(k, " ")
		other := ends[proto+" "+e.dst+">"+e.src]
		if other != nil {
			done[proto+" "+e.dst+">"+e.src] = true
		}
		fr := connection(e, other)
		if fr.Samples > 0 {
			rtts = append(rtts, p50{fr.RTTP50, fr.Samples})
			total += fr.Samples
		}
		if sec > 0 {
			fr.Bps = fr.Bps * 8 / sec
		}
		if fr.Bps > 0 || fr.Samples > 0 {
			all = append(all, fr)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Bps > all[j].Bps })
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

// connection is one connection from its ends on this host (other nil
// when only e is here), named sender -> receiver (the end that sent more
// since watch saw it, connHistory), with the sending end's
// bytes (Bps holds bytes: the caller divides by the interval) and RTT. A
// receiving end's RTT is left out: TCP samples RTT when the data it sent
// is acknowledged, so a pure receiver's latest sample is of its handshake
// or last small reply, not of the data's path.
func connection(e, other *flowEnd) FlowRate {
	if other != nil && (other.total[0] > e.total[0] || (other.total[0] == e.total[0] && other.samples > e.samples)) {
		e, other = other, e
	}
	fr := FlowRate{Flow: e.src + " -> " + e.dst, Bps: float64(e.sent + e.recv), RTTP50: e.rtt, Samples: e.samples, Payload: e.payload}
	switch {
	case other != nil:
		fr.Ends = EndsBoth
		if e.sent+e.recv == 0 {
			fr.Bps, fr.Payload = float64(other.sent+other.recv), other.payload
		}
	case e.total[0] > e.total[1]:
		fr.Ends = EndsSending
	case e.total[1] > e.total[0]:
		fr.Flow, fr.Ends, fr.RTTP50, fr.Samples = e.dst+" -> "+e.src, EndsReceiving, 0, 0
	}
	return fr
}

// gbps formats decimal bit/s as Gbit/s.
func gbps(bps float64) string { return fmt.Sprintf("%.2f", bps/1e9) }

// ViewWidth is the widest line the live view prints, in characters.
const ViewWidth = 100

// Indents of the live view's continuation and flow lines.
const (
	indentCont = "         "      // under the interval line, after its time
	indentFlow = "              " // under a flow line, after "flow "
)

// write prints the interval: its interface rates and summary figures,
// wrapped at ViewWidth, then the top flows (one line per connection) and
// any notes, indented. elapsed and total (0 = until Ctrl-C) give the
// progress.
func (s Summary) write(w io.Writer, elapsed, total time.Duration) {
	head := s.End.Local().Format("15:04:05")
	if total > 0 {
		head += fmt.Sprintf(" [%s elapsed, %s left]", elapsed.Round(time.Second), max(total-elapsed, 0).Round(time.Second))
	}
	segs := []string{head}
	if len(s.Ifaces) == 0 {
		segs = append(segs, "no counted interface left (see notes)")
	}
	for _, r := range s.Ifaces {
		segs = append(segs, fmt.Sprintf("%s rx %s tx %s Gbit/s", r.Name, gbps(r.RxBps), gbps(r.TxBps)), "util "+r.Util)
	}
	if s.SoftirqOK {
		segs = append(segs, fmt.Sprintf("busiest cpu%d softirq %.0f%% (%s)", s.CPU, 100*s.SoftirqRatio, s.SoftirqSource))
	} else {
		segs = append(segs, "softirq n/a (no softirq probe or /proc/stat figures)")
	}
	if s.RTTOK {
		segs = append(segs, fmt.Sprintf("rtt p50 %d µs", s.RTTP50.Microseconds()))
	} else {
		segs = append(segs, "rtt n/a (no sending end with an RTT sample)")
	}
	writeWrapped(w, "", indentCont, segs)
	for _, f := range s.Top {
		rate := gbps(f.Bps) + " Gbit/s"
		if f.Payload {
			rate += " payload"
		}
		flow := "flow " + f.Flow
		if f.Ends != "" {
			flow += " (" + f.Ends + ")"
		}
		writeWrapped(w, indentCont, indentFlow, []string{flow, rate, f.rttText()})
	}
	for _, n := range s.Notes {
		writeWrapped(w, indentCont, indentFlow, []string{"note: " + n})
	}
}

// writeWrapped prints segs after first, two spaces apart, in lines of at
// most ViewWidth characters: a segment that does not fit starts a line
// indented by cont, and one longer than a line breaks at its spaces and
// ends its last line.
func writeWrapped(w io.Writer, first, cont string, segs []string) {
	line, fresh, broken := first, true, false
	for _, seg := range segs {
		switch {
		case fresh:
			line += seg
		case !broken && utf8.RuneCountInString(line)+2+utf8.RuneCountInString(seg) <= ViewWidth:
			line += "  " + seg
		default:
			fmt.Fprintln(w, line)
			line = cont + seg
		}
		fresh, broken = false, false
		for utf8.RuneCountInString(line) > ViewWidth {
			broken = true
			r := []rune(line)
			cut := strings.LastIndex(string(r[:ViewWidth+1]), " ")
			if cut <= len(cont) {
				break // one word longer than a line
			}
			fmt.Fprintln(w, strings.TrimRight(line[:cut], " "))
			line = cont + strings.TrimLeft(line[cut+1:], " ")
		}
	}
	fmt.Fprintln(w, line)
}
