package analysis

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// FleetRow is one run of a fleet table: who ran what, when, and the
// report's headline figures. Rates are bit/s; a nil pointer is a figure the
// run does not give.
type FleetRow struct {
	// Run names the run directory (relative to the root it was found
	// under); Err is set, and every figure nil, when it could not be read.
	Run string `json:"run"`
	Err string `json:"error,omitempty"`

	Host    string    `json:"host"`
	Start   time.Time `json:"start"`
	Seconds float64   `json:"duration_s"`
	Status  string    `json:"status"`
	// Command and Streams come from the manifest's config.
	Command string `json:"command"`
	Streams int64  `json:"streams"`

	// Counter names Primary (e.g. "rx application"); PeakBps, SteadyBps
	// and WholeRunBps are its windows.
	Counter     string   `json:"counter"`
	PeakBps     *float64 `json:"peak_bps"`
	SteadyBps   *float64 `json:"steady_bps"`
	WholeRunBps *float64 `json:"whole_run_bps"`

	// BusiestCPU and BusiestShare (0..1) are the hot core over CPUWindow;
	// HotSource says what the share counts (NET_RX or every softirq).
	BusiestCPU   *int     `json:"busiest_cpu"`
	BusiestShare *float64 `json:"busiest_cpu_share"`
	HotSource    string   `json:"busiest_cpu_counts,omitempty"`
	CPUWindow    string   `json:"cpu_window,omitempty"`

	// RTTFloorUs is the lowest RTT seen (RTTSummary.FloorUs), µs.
	RTTFloorUs *uint32 `json:"rtt_floor_us"`
	// Retransmits are the sender's (Retx.Source), segments.
	Retransmits *uint64 `json:"retransmits"`

	// SentBytes and ReceivedBytes are what the run's sending and receiving
	// interfaces counted over the whole run (netlink, every interval, L2
	// headers included); nil when the run recorded no such interface.
	// SentCounter and ReceivedCounter name it.
	SentBytes       *uint64 `json:"sent_bytes"`
	SentCounter     string  `json:"sent_counter,omitempty"`
	ReceivedBytes   *uint64 `json:"received_bytes"`
	ReceivedCounter string  `json:"received_counter,omitempty"`
	// EgressCost is SentBytes / 10^9 × the egress price, for a run whose
	// traffic crossed an interface towards another host; nil without a
	// price, and then, with a price, EgressNA says why: traffic that
	// stayed on this host (NoEgress) or no sent bytes recorded here.
	EgressCost *float64 `json:"egress_cost"`
	EgressNA   string   `json:"egress_cost_na,omitempty"`

	// Verdicts are the rules that fired.
	Verdicts []string `json:"verdicts"`
}

// EgressPrice is a price per decimal GB (10^9 bytes) sent.
type EgressPrice struct {
	PerGB    float64
	Currency string
}

// ParseEgressPrice parses "0.087USD" or "0.087 EUR" (an amount per 10^9
// bytes, then a currency code of letters).
func ParseEgressPrice(s string) (EgressPrice, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimSuffix(s, "/GB"), "/gb")
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return EgressPrice{}, fmt.Errorf("egress price %q: want an amount per GB and a currency, e.g. 0.087USD", s)
	}
	var p EgressPrice
	if _, err := fmt.Sscan(s[:i], &p.PerGB); err != nil || p.PerGB < 0 || math.IsInf(p.PerGB, 0) {
		return EgressPrice{}, fmt.Errorf("egress price %q: amount: want a number >= 0", s)
	}
	p.Currency = strings.ToUpper(strings.TrimSpace(s[i:]))
	if p.Currency == "" || strings.IndexFunc(p.Currency, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
		return EgressPrice{}, fmt.Errorf("egress price %q: currency: want letters, e.g. USD", s)
	}
	return p, nil
}

// FleetRowOf condenses a report into its fleet row; price may be nil.
func FleetRowOf(run string, r *Report, price *EgressPrice) FleetRow {
	m := r.Manifest
	// The run's own start and end (the manifest's; the report's run
	// bounds are the measured window when a bench run had a warm-up).
	start, end := m.Start, m.End
	if start.IsZero() {
		start = r.RunStart
	}
	if end.IsZero() {
		end = r.RunEnd
	}
	row := FleetRow{Run: run, Host: m.Host, Start: start, Status: m.Status,
		Command: configString(m.Config, "command"), Streams: ConfigInt(m.Config, "streams"),
		Verdicts: r.FiredVerdicts()}
	if row.Verdicts == nil {
		row.Verdicts = []string{}
	}
	if !start.IsZero() && end.After(start) {
		row.Seconds = end.Sub(start).Seconds()
	}
	if p := r.Primary; p != nil && p.W != nil {
		row.Counter = r.PrimaryDir + " " + p.Counter
		row.PeakBps, row.WholeRunBps = fptr(p.W.PeakBps), fptr(p.W.WholeRunBps)
		if p.W.HasActive() {
			row.SteadyBps = fptr(p.W.SteadyBps)
		}
	}
	for _, c := range r.CPUs {
		if c.CPU == r.BusiestCPU {
			row.BusiestCPU, row.BusiestShare = fptr(c.CPU), fptr(r.HotShare(c))
			row.HotSource, row.CPUWindow = r.HotSource, r.CPUWindow
		}
	}
	if r.RTT != nil && r.RTT.FloorUs() > 0 {
		row.RTTFloorUs = fptr(r.RTT.FloorUs())
	}
	if r.Retx.Source != "" {
		row.Retransmits = fptr(r.Retx.Segments)
	}
	row.SentBytes, row.SentCounter = directionBytes(&r.Tx)
	row.ReceivedBytes, row.ReceivedCounter = directionBytes(&r.Rx)
	if price != nil {
		switch why := NoEgress(r); {
		case why != "":
			row.EgressNA = why
		case row.SentBytes == nil:
			row.EgressNA = "no sending interface recorded on this host"
		default:
			row.EgressCost = fptr(float64(*row.SentBytes) / 1e9 * price.PerGB)
		}
	}
	return row
}

// Reasons a run's sent bytes are not egress (NoEgress).
const (
	NoEgressTestBed  = "local test bed: no egress"
	NoEgressLoopback = "loopback: no egress"
	NoEgressBlob     = "blob endpoint on this host: no egress"
)

// NoEgress says why the run's sent bytes are not egress — its traffic never
// left this host — or returns "" when they may be priced (bench --peer,
// blob to a remote endpoint, watch and blob on a real interface):
//   - a bench (or sweep) run without a peer ran on the local test bed: a
//     veth pair or netprof's delay line between two namespaces of one host;
//   - the sending interface is the loopback device (a peer or endpoint at
//     one of this host's addresses is routed over it);
//   - a blob run whose every endpoint is this host (localhost, 127.0.0.0/8,
//     ::1: an emulator), whatever interface it counted.
//
// The DuckDB query of docs/fleet.md applies the same rules.
func NoEgress(r *Report) string {
	cfg := r.Manifest.Config
	cmd := configString(cfg, "command")
	switch {
	case cmd == "bench" && configString(cfg, "peer") == "":
		return NoEgressTestBed
	case r.Tx.Loopback || r.Tx.Iface == "lo":
		return NoEgressLoopback
	case strings.HasPrefix(cmd, "blob") && blobHostsLocal(cfg):
		return NoEgressBlob
	}
	return ""
}

// blobHostsLocal reports whether a blob run's config lists targets and
// every target's host (host:port) is this host: localhost, an IPv4
// loopback address or ::1.
func blobHostsLocal(cfg map[string]any) bool {
	var hosts []string
	switch ts := cfg["targets"].(type) {
	case []map[string]any:
		for _, t := range ts {
			h, _ := t["host"].(string)
			hosts = append(hosts, h)
		}
	case []any:
		for _, t := range ts {
			m, _ := t.(map[string]any)
			h, _ := m["host"].(string)
			hosts = append(hosts, h)
		}
	}
	for _, h := range hosts {
		if !localHost(h) {
			return false
		}
	}
	return len(hosts) > 0
}

// localHost reports whether hostport (host[:port]) names this host by a
// loopback name or address.
func localHost(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback() && (a.Is4() || a == netip.IPv6Loopback())
}

// directionBytes returns what a direction's interface counted over the
// whole run (Direction.IfaceBytes); nil when the run recorded no interface
// for it (a two-machine run's other end: not this host's bytes).
func directionBytes(d *Direction) (*uint64, string) {
	if d.IfaceBytes == nil {
		return nil, ""
	}
	return d.IfaceBytes, "interface " + d.Iface + " (netlink, every interval)"
}

func fptr[T any](v T) *T { return &v }

// Fleet is a table of runs, oldest first, and their totals.
type Fleet struct {
	Rows  []FleetRow
	Price *EgressPrice
	Units Units
}

// FleetJSON is the fleet as --json prints it.
type FleetJSON struct {
	Runs   []FleetRow  `json:"runs"`
	Totals FleetTotals `json:"totals"`
}

// FleetTotals adds the runs up (runs that could not be read count in
// Failed only).
type FleetTotals struct {
	Runs          int    `json:"runs"`
	Failed        int    `json:"failed"`
	SentBytes     uint64 `json:"sent_bytes"`
	ReceivedBytes uint64 `json:"received_bytes"`
	// With a price: EgressCost adds up the priced runs' costs,
	// EgressBytes their sent bytes (EgressCost = EgressBytes / 10^9 ×
	// price), EgressRuns counts them and NotEgressRuns the runs left
	// unpriced (EgressNA set).
	EgressCost    *float64 `json:"egress_cost"`
	EgressBytes   *uint64  `json:"egress_bytes,omitempty"`
	EgressRuns    *int     `json:"egress_runs,omitempty"`
	NotEgressRuns *int     `json:"not_egress_runs,omitempty"`
	// PricePerGB and Currency are the price given (per 10^9 bytes sent).
	PricePerGB *float64 `json:"egress_price_per_gb"`
	Currency   string   `json:"currency,omitempty"`
}

// NewFleet sorts rows by start (then run name).
func NewFleet(rows []FleetRow, price *EgressPrice, u Units) *Fleet {
	sort.SliceStable(rows, func(i, j int) bool {
		if !rows[i].Start.Equal(rows[j].Start) {
			return rows[i].Start.Before(rows[j].Start)
		}
		return rows[i].Run < rows[j].Run
	})
	return &Fleet{Rows: rows, Price: price, Units: u}
}

// Totals adds the rows up.
func (f *Fleet) Totals() FleetTotals {
	t := FleetTotals{Runs: len(f.Rows)}
	var cost float64
	var egress uint64
	var priced, unpriced int
	for _, r := range f.Rows {
		if r.Err != "" {
			t.Failed++
			continue
		}
		if r.SentBytes != nil {
			t.SentBytes += *r.SentBytes
		}
		if r.ReceivedBytes != nil {
			t.ReceivedBytes += *r.ReceivedBytes
		}
		switch {
		case r.EgressCost != nil:
			cost += *r.EgressCost
			egress += *r.SentBytes
			priced++
		case r.EgressNA != "":
			unpriced++
		}
	}
	if f.Price != nil {
		t.EgressCost, t.PricePerGB, t.Currency = fptr(cost), fptr(f.Price.PerGB), f.Price.Currency
		t.EgressBytes, t.EgressRuns, t.NotEgressRuns = fptr(egress), fptr(priced), fptr(unpriced)
	}
	return t
}

// JSON returns the fleet for --json.
func (f *Fleet) JSON() FleetJSON { return FleetJSON{Runs: f.Rows, Totals: f.Totals()} }

// WriteText prints one line per run and the totals.
func (f *Fleet) WriteText(w io.Writer) error {
	u := f.Units
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	cost := ""
	if f.Price != nil {
		cost = "\tegress " + f.Price.Currency
	}
	fmt.Fprintf(tw, "run\thost\tstart (UTC)\ts\tpeak\tsteady\twhole\thot core\tRTT floor\tretx\tsent\treceived%s\tverdict\n", cost)
	for _, r := range f.Rows {
		if r.Err != "" {
			fmt.Fprintf(tw, "%s\terror: %s\n", r.Run, r.Err)
			continue
		}
		c := ""
		if f.Price != nil {
			c = "\t" + fleetOpt(r.EgressCost, func(v float64) string { return fmt.Sprintf("%.4f", v) })
			if r.EgressCost == nil && r.EgressNA != "" {
				c = "\tn/a (" + r.EgressNA + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t%s\n",
			r.Run, r.Host, r.Start.UTC().Format("2006-01-02 15:04:05"), r.Seconds,
			optRate(u, r.PeakBps), optRate(u, r.SteadyBps), optRate(u, r.WholeRunBps), hotText(r),
			fleetOpt(r.RTTFloorUs, func(v uint32) string { return fmt.Sprint(v, " µs") }), fleetOpt(r.Retransmits, func(v uint64) string { return fmt.Sprint(v) }), optBytes(u, r.SentBytes), optBytes(u, r.ReceivedBytes),
			c, strings.Join(r.Verdicts, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t := f.Totals()
	fmt.Fprintf(w, "\n%d runs (%d unreadable); rates in %s of each run's primary counter (peak interval, steady-state median, whole run); "+
		"hot core = busiest CPU's softirq share over the CPU window (NET_RX time from the softirq probe, else every vector from /proc/stat); sent/received = the sending/receiving interface's bytes over every interval (netlink, L2 headers included)\n",
		t.Runs, t.Failed, u.RateUnitLong())
	fmt.Fprintf(w, "total sent %s, received %s", u.FormatBytes(float64(t.SentBytes)), u.FormatBytes(float64(t.ReceivedBytes)))
	if t.EgressCost != nil {
		fmt.Fprintf(w, "; egress cost %.2f %s (%s sent by the %s whose traffic left this host, / 10^9 × %g %s per GB",
			*t.EgressCost, t.Currency, u.FormatBytes(float64(*t.EgressBytes)), runsText(*t.EgressRuns), *t.PricePerGB, t.Currency)
		if *t.NotEgressRuns > 0 {
			fmt.Fprintf(w, "; %s not priced, n/a: traffic that stayed on this host, or none sent from it", runsText(*t.NotEgressRuns))
		}
		fmt.Fprint(w, ")")
	}
	_, err := fmt.Fprintln(w)
	return err
}

// runsText is "1 run" or "n runs".
func runsText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

func hotText(r FleetRow) string {
	if r.BusiestCPU == nil || r.BusiestShare == nil {
		return "n/a"
	}
	return fmt.Sprintf("cpu%d %.0f%% %s", *r.BusiestCPU, 100**r.BusiestShare, HotSourceShort(r.HotSource))
}

func optRate(u Units, v *float64) string { return fleetOpt(v, u.FormatRate) }

func optBytes(u Units, v *uint64) string {
	return fleetOpt(v, func(b uint64) string { return u.FormatBytes(float64(b)) })
}

// fleetOpt formats *v, or "n/a" for nil.
func fleetOpt[T any](v *T, f func(T) string) string {
	if v == nil {
		return "n/a"
	}
	return f(*v)
}
