package analysis

import "time"

// MaxPlausibleBps is the rate above which an interval's byte delta is taken
// for a counter that went backwards or wrapped when no rated link speed is
// known (10 Tbit/s). With a rated speed the limit is PlausibleFactor × it.
const MaxPlausibleBps = 10e12

// PlausibleFactor times the rated link speed is the largest rate an
// interval may show before its delta is flagged and excluded.
const PlausibleFactor = 10

// Options configures an analysis. The zero value is valid: decimal units,
// rated speed from the manifest, DefaultThresholds.
type Options struct {
	// Units selects decimal (Gbit/s) or binary (Gibit/s, GiB/s) output.
	Units Units
	// LinkSpeedBps is the rated link speed in bit/s; 0 takes the run's
	// own (manifest config ConfigLinkSpeed, from `bench --link-speed`),
	// else the manifest's rated_speed_mbps of the receiving (else
	// sending) interface. It overrides the manifest when set
	// (`analyze --link-speed`).
	LinkSpeedBps float64
	// TargetBps is the rate the streams-needed figure aims for, bit/s
	// (`--target`); 0 uses the rated link speed.
	TargetBps float64
	// Thresholds are the verdict rules' thresholds; zero fields take
	// DefaultThresholds' values.
	Thresholds Thresholds
}

// Thresholds are the numbers the verdict rules compare against. Each
// verdict prints the ones it used.
type Thresholds struct {
	// SoftirqShare: a CPU whose NET_RX softirq time is at least this
	// fraction of its steady-state time is saturated (0.90).
	SoftirqShare float64
	// NapiExhausted: a CPU whose napi_budget_exhausted / napi_polls over
	// the steady state is at least this keeps exhausting its budget (0.50).
	NapiExhausted float64
	// WireFraction: steady state at or above this fraction of the rated
	// speed is wire-bound; softirq-bound and rate-limited need the link
	// below it (0.90).
	WireFraction float64
	// FlatCV: steady-state interval rates whose coefficient of variation
	// is at most this are "flat" (0.05).
	FlatCV float64
	// RetxHigh: sender retransmitted segments / segments sent at or above
	// this is high (0.005 = 0.5%).
	RetxHigh float64
	// WindowRatio: a sending flow whose steady rate is at least this
	// fraction of snd_cwnd × mss / srtt is window-limited (0.80).
	WindowRatio float64
	// WindowRatioMax: a sending flow whose steady rate is above this
	// multiple of snd_cwnd × mss / srtt is not window-limited (1.3): it
	// moves more than that window allows, so the window evidently does not
	// bind (the window-limited rate is a steady-state average of
	// snd_cwnd × mss / srtt; cwnd and srtt wander around it by ~30%). Not
	// applied to a flow held by the --window socket buffer
	// (BDP.SocketWindow), which the kernel doubles for its overhead: up to
	// ~2x the buffer can be in flight.
	WindowRatioMax float64
	// ChronoLimited: the sending flows are window-limited when, in the
	// kernel's chrono accounting over the steady state, the receiver's
	// window (tcp_rwnd_limited_us) or their send buffer
	// (tcp_sndbuf_limited_us) held them for at least this share of their
	// sending time (0.20). A stream held by a window alternates between
	// held (until ACKs free a third of the buffer or open the window) and
	// busy, so the held share stays well below 100%: 28–44% measured over
	// a 10 ms delay line with a 64 KiB tcp_rmem or tcp_wmem
	// (TestVerdictWindowNamesTheWindow); an application-limited stream is
	// never held.
	ChronoLimited float64
	// RatedExcess: a steady state (wire estimate, else interface) above
	// (1 + this) × the rated speed cannot be: the rated speed looks too
	// low (a wrong --link-speed), and wire-bound and the report say so
	// (0.03).
	RatedExcess float64
	// WindowFlows: the run is window-limited when at least this fraction
	// of its sending flows are (0.50).
	WindowFlows float64
	// AppLimitedRatio: sending flows at or below this fraction of their
	// window-limited rate did not fill their window (0.50).
	AppLimitedRatio float64
	// HairpinExpectRTT is the min RTT expected of an on-link peer
	// (150 µs); HairpinFactor × it is the threshold (2). Left 0, a run
	// recorded with `bench --expect-rtt` (manifest config
	// ConfigExpectRTT) supplies it.
	HairpinExpectRTT time.Duration
	HairpinFactor    float64
	// MinRTTSamples is the fewest RTT samples a peer needs to be judged
	// (10).
	MinRTTSamples uint64
	// CompareFlat: in compare, throughput changed by at most this
	// fraction counts as flat (0.05); CompareRetxFactor: retransmits per
	// GB grew at least this many times (2).
	CompareFlat       float64
	CompareRetxFactor float64
	// HostBusy: the host is CPU-bound when its CPUs' /proc/stat busy time
	// (sum of cpus.proc_busy_ns over sum of proc_total_ns, every CPU, the
	// CPU window; steal not busy) is at least this fraction (0.90); the
	// sender/application-limited verdict then says the sender is CPU-bound,
	// and window/BDP-limited counts only flows held by the --window socket
	// buffer (a CPU-bound sender's snd_cwnd follows what it sends).
	HostBusy float64
}

// DefaultThresholds returns the thresholds documented on Thresholds.
func DefaultThresholds() Thresholds {
	return Thresholds{
		SoftirqShare: 0.90, NapiExhausted: 0.50, WireFraction: 0.90, RatedExcess: 0.03, FlatCV: 0.05,
		RetxHigh: 0.005, WindowRatio: 0.80, WindowRatioMax: 1.3, WindowFlows: 0.50, AppLimitedRatio: 0.50,
		HairpinExpectRTT: 150 * time.Microsecond, HairpinFactor: 2, MinRTTSamples: 10,
		CompareFlat: 0.05, CompareRetxFactor: 2, HostBusy: 0.90, ChronoLimited: 0.20,
	}
}

// withDefaults returns t with zero fields replaced by the defaults.
func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds()
	fill := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&t.SoftirqShare, d.SoftirqShare)
	fill(&t.NapiExhausted, d.NapiExhausted)
	fill(&t.WireFraction, d.WireFraction)
	fill(&t.RatedExcess, d.RatedExcess)
	fill(&t.FlatCV, d.FlatCV)
	fill(&t.RetxHigh, d.RetxHigh)
	fill(&t.WindowRatio, d.WindowRatio)
	fill(&t.WindowRatioMax, d.WindowRatioMax)
	fill(&t.WindowFlows, d.WindowFlows)
	fill(&t.AppLimitedRatio, d.AppLimitedRatio)
	fill(&t.HairpinFactor, d.HairpinFactor)
	fill(&t.CompareFlat, d.CompareFlat)
	fill(&t.CompareRetxFactor, d.CompareRetxFactor)
	fill(&t.HostBusy, d.HostBusy)
	fill(&t.ChronoLimited, d.ChronoLimited)
	if t.HairpinExpectRTT == 0 {
		t.HairpinExpectRTT = d.HairpinExpectRTT
	}
	if t.MinRTTSamples == 0 {
		t.MinRTTSamples = d.MinRTTSamples
	}
	return t
}

// Manifest config keys of what `netprof bench --link-speed` and
// `--expect-rtt` recorded: the analysis's defaults for LinkSpeedBps and
// Thresholds.HairpinExpectRTT, which Options override.
const (
	ConfigLinkSpeed = "link_speed_bps"
	ConfigExpectRTT = "expect_rtt_ns"
)

// withManifest returns t with HairpinExpectRTT taken from the run's
// manifest config when t leaves it 0: bench --expect-rtt
// (ConfigExpectRTT), else the RTT a bench --rtt run injected (rtt_ns).
func (t Thresholds) withManifest(cfg map[string]any) Thresholds {
	if t.HairpinExpectRTT != 0 {
		return t
	}
	if ns := ConfigInt(cfg, ConfigExpectRTT); ns > 0 {
		t.HairpinExpectRTT = time.Duration(ns)
	} else if ns := ConfigInt(cfg, "rtt_ns"); ns > 0 {
		// A run over netprof's own delay line (bench --rtt) expects the
		// RTT it asked for.
		t.HairpinExpectRTT = time.Duration(ns)
	}
	return t
}
