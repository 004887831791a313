package bench

import (
	"log/slog"
	"net"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
)

// Summary is what a bench run adds to the analysis report, which reads
// only the trace's tables: both ends' CPU, the warm-up and cool-down, the
// peer, and the socket options as the kernel took them. It is recorded in
// the manifest's config as "summary" (with the per-interval CPU figures
// of both ends as "cpu_intervals"). Keys carry their units.
type Summary struct {
	// Mode is "local test bed" or "peer".
	Mode      string `json:"mode"`
	Direction string `json:"direction"`
	// WarmupNs and CooldownNs are the configured phases;
	// IntervalsByPhase counts the recorded local intervals per phase
	// ("warmup", "measure", "cooldown").
	WarmupNs         int64          `json:"warmup_ns"`
	CooldownNs       int64          `json:"cooldown_ns"`
	IntervalsByPhase map[string]int `json:"intervals_by_phase"`
	// CPU holds this host's figures first, then the peer's.
	CPU      []CPUFigures    `json:"cpu"`
	Peer     *PeerSummary    `json:"peer"`
	SockOpts *SockOptsReport `json:"socket_options"`
}

// PeerSummary describes the peer of a --peer run and what it reported.
type PeerSummary struct {
	Address   string `json:"address"`
	Software  string `json:"software"`
	DataPorts []int  `json:"data_ports"`
	// Intervals is the number of interval reports written to the trace;
	// ReceivedBytes and SentBytes the payload they add up to (every
	// interval, phases included).
	Intervals     int    `json:"interval_reports"`
	ReceivedBytes uint64 `json:"received_app_bytes"`
	SentBytes     uint64 `json:"sent_app_bytes"`
	// ResultOK is the peer's verdict on its side (null when no result
	// arrived: the peer was lost); ResultError says why not ok.
	ResultOK    *bool  `json:"result_ok"`
	ResultError string `json:"result_error,omitempty"`
}

// SockOptsReport is the socket options asked for and what the data
// sockets read back right after connecting.
type SockOptsReport struct {
	Requested map[string]any `json:"requested"`
	Ends      []SockEnd      `json:"ends"`
	// Notes name every option that did not take as asked (e.g. a window
	// capped by net.core.rmem_max).
	Notes []string `json:"notes"`
}

// SockEnd is one end's data socket options as read back (stream 0).
type SockEnd struct {
	End                string  `json:"end"`
	SndBufReported     int     `json:"so_sndbuf_reported_bytes"`
	RcvBufReported     int     `json:"so_rcvbuf_reported_bytes"`
	SndBufUsable       int     `json:"so_sndbuf_usable_bytes"`
	RcvBufUsable       int     `json:"so_rcvbuf_usable_bytes"`
	Congestion         string  `json:"tcp_congestion"`
	MaxSeg             int     `json:"tcp_maxseg_bytes"`
	SndMSS             uint32  `json:"tcpi_snd_mss_bytes"`
	NoDelay            bool    `json:"tcp_nodelay"`
	BindDev            string  `json:"so_bindtodevice"`
	MaxPacingRateBitPS *uint64 `json:"so_max_pacing_rate_bit_per_s"`
	Error              string  `json:"error,omitempty"`
}

func newSummary(cfg Config) *Summary {
	s := &Summary{Mode: "local test bed", Direction: string(cfg.dir()),
		WarmupNs: cfg.Warmup.Nanoseconds(), CooldownNs: cfg.Cooldown.Nanoseconds()}
	if cfg.Peer != "" {
		s.Mode = "peer"
	}
	return s
}

// addLocal adds the phase counts and this host's CPU figures (first).
func (s *Summary) addLocal(cfg Config, tl *timeline) {
	s.IntervalsByPhase = tl.phaseCounts()
	both := cfg.Peer == ""
	us, moved := localUsage(tl, both)
	f, ok := cpuFigures(us, moved)
	if !ok {
		return
	}
	f.End, f.Role, f.Source = "local", localRole(cfg.dir()), "this host's /proc/stat and this process's getrusage"
	if cfg.dir() == control.Bidir {
		f.Role = "both"
	}
	if both {
		f.End, f.Role, f.MovedBasis = "local test bed (both ends)", "both", MovedOnce
	}
	s.CPU = append([]CPUFigures{f}, s.CPU...)
}

// cpuInterval is one interval's CPU figures in the manifest.
type cpuInterval struct {
	End   time.Time `json:"end"`
	Phase string    `json:"phase"`
	CPU   any       `json:"cpu"`
}

// recordSummary writes the summary and both ends' per-interval CPU
// figures into the manifest's config.
func recordSummary(w *trace.Writer, s *Summary, tl *timeline, d driver, log *slog.Logger) {
	local := []cpuInterval{}
	for _, li := range tl.ivs {
		if li.cpuOK {
			local = append(local, cpuInterval{li.end.UTC(), li.phase, li.cpu})
		}
	}
	intervals := map[string]any{"local": local}
	if pd, ok := d.(*peerDriver); ok {
		peer := []cpuInterval{}
		for _, pu := range pd.rows.usage {
			peer = append(peer, cpuInterval{pu.end.UTC(), pu.phase, pu.cpu})
		}
		intervals["peer"] = peer
	}
	err := w.UpdateManifest(func(m *trace.Manifest) {
		if m.Config == nil {
			m.Config = map[string]any{}
		}
		m.Config["summary"] = s
		m.Config["cpu_intervals"] = intervals
	})
	if err != nil {
		log.Error("record the run's summary in the manifest", "err", err)
	}
}

// readSockets reads the data sockets' options back right after connect;
// nil when no option was asked for.
func readSockets(o traffic.SockOpts, d driver, log *slog.Logger) *SockOptsReport {
	if o.IsZero() {
		return nil
	}
	rep := &SockOptsReport{Requested: sockOptsConfig(o), Notes: []string{}}
	dialed, accepted := d.sockets()
	for _, e := range []struct {
		name  string
		c     net.Conn
		bound bool
	}{{"dialing (this host, or namespace A)", dialed, true}, {"accepting (namespace B)", accepted, false}} {
		if e.c == nil {
			continue
		}
		st, err := traffic.ReadSockState(e.c)
		se := sockEnd(e.name, st)
		if err != nil {
			se.Error = err.Error()
		}
		rep.Ends = append(rep.Ends, se)
		for _, n := range o.Check(st, e.bound) {
			rep.Notes = append(rep.Notes, e.name+": "+n)
			log.Warn("socket option did not take as asked", "end", e.name, "note", n)
		}
	}
	return rep
}

func sockEnd(name string, st traffic.SockState) SockEnd {
	se := SockEnd{End: name, SndBufReported: st.SndBuf, RcvBufReported: st.RcvBuf, SndBufUsable: st.SndBuf / 2,
		RcvBufUsable: st.RcvBuf / 2, Congestion: st.Congestion, MaxSeg: st.MaxSeg, SndMSS: st.SndMSS,
		NoDelay: st.NoDelay, BindDev: st.BindDev}
	if st.MaxPacingRate != ^uint64(0) {
		v := st.MaxPacingRate * 8
		se.MaxPacingRateBitPS = &v
	}
	return se
}

// sockOptsConfig is the options asked for, as recorded in the manifest.
func sockOptsConfig(o traffic.SockOpts) map[string]any {
	m := map[string]any{}
	if o.Window > 0 {
		m["window_bytes"] = o.Window
	}
	if o.Congestion != "" {
		m["congestion"] = o.Congestion
	}
	if o.MSS > 0 {
		m["mss_bytes"] = o.MSS
	}
	if o.NoDelay != nil {
		m["nodelay"] = *o.NoDelay
	}
	if o.BindDev != "" {
		m["bind_dev"] = o.BindDev
	}
	if o.PacingRate > 0 {
		m["pacing_rate_bit_per_s"] = int64(o.PacingRate)
	}
	return m
}
