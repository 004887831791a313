package bench

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/control"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// shortConfig is a short local-bed run without probes.
func shortConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.NoBPF, cfg.Streams = true, 2
	cfg.Duration, cfg.Interval = time.Second, 250*time.Millisecond
	cfg.Out = filepath.Join(t.TempDir(), "run")
	return cfg
}

// Reverse and bidir on the local bed: each direction's receiver read
// exactly what its sender wrote, reverse streams are numbered after the
// forward ones, and the interface roles follow the direction.
func TestBedDirections(t *testing.T) {
	requireBench(t, false)
	for _, dir := range []control.Direction{control.Reverse, control.Bidir} {
		t.Run(string(dir), func(t *testing.T) {
			bed := testbedtest.New(t, testbed.Options{})
			cfg := shortConfig(t)
			cfg.Direction, cfg.Ports = dir, []int{5001, 5002, 5003}
			res, err := runOnBed(context.Background(), cfg, "test", bed, nil)
			if err != nil {
				t.Fatal(err)
			}
			run, err := trace.Open(res.Dir)
			if err != nil {
				t.Fatal(err)
			}
			checkTraffic(t, run, res)
			rows, _ := run.Traffic()
			streams := map[string]map[int32]string{"sender": {}, "receiver": {}}
			for _, r := range rows {
				streams[r.Role][r.Stream] = r.LocalAddr
			}
			fwd, rev := cfg.streamCounts()
			if len(streams["sender"]) != fwd+rev || len(streams["receiver"]) != fwd+rev {
				t.Errorf("streams %v, want %d per role", streams, fwd+rev)
			}
			// Reverse stream 0 is sent by B, numbered after the forward streams.
			if a := streams["sender"][int32(fwd)]; !strings.HasPrefix(a, bed.B().Addr.String()+":") {
				t.Errorf("reverse stream %d sent from %s, want B", fwd, a)
			}
			role := map[string]string{}
			for _, i := range run.Manifest.Interfaces {
				role[i.Name] = i.Role
			}
			wantA := map[control.Direction]string{control.Reverse: trace.RoleReceiver, control.Bidir: trace.RoleSender}[dir]
			if role[bed.A().Link] != wantA {
				t.Errorf("A's interface role %q, want %q", role[bed.A().Link], wantA)
			}
		})
	}
}

// Warm-up and cool-down: the intervals are in the trace, marked, and the
// report's figures cover exactly the measured ones.
func TestBedWarmupCooldown(t *testing.T) {
	requireBench(t, false)
	bed := testbedtest.New(t, testbed.Options{})
	cfg := shortConfig(t)
	cfg.Warmup, cfg.Cooldown, cfg.Duration = 500*time.Millisecond, 500*time.Millisecond, 1500*time.Millisecond
	res, err := runOnBed(context.Background(), cfg, "test", bed, nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := run.Traffic()
	var measured, all uint64
	ends := map[string]map[int64]bool{}
	var mStart, mEnd time.Time
	for _, r := range rows {
		if r.Role != trace.RoleReceiver {
			continue
		}
		all += r.AppBytes
		if ends[*r.Phase] == nil {
			ends[*r.Phase] = map[int64]bool{}
		}
		ends[*r.Phase][r.Time.UnixNano()] = true
		if *r.Phase == trace.PhaseMeasure {
			measured += r.AppBytes
			if s := r.Time.Add(-time.Duration(r.IntervalNs)); mStart.IsZero() || s.Before(mStart) {
				mStart = s
			}
			mEnd = maxTime(mEnd, r.Time)
		}
	}
	if len(ends["warmup"]) != 2 || len(ends["measure"]) < 6 || len(ends["cooldown"]) < 2 {
		t.Errorf("intervals per phase: warmup %d, measure %d, cooldown %d; want 2, >= 6, >= 2",
			len(ends["warmup"]), len(ends["measure"]), len(ends["cooldown"]))
	}
	w := res.Report.Rx.Rate("application").W
	whole := float64(measured) * 8 / mEnd.Sub(mStart).Seconds()
	t.Logf("measured %d of %d bytes; whole run %.3f Gbit/s", measured, all, w.WholeRunBps/1e9)
	if w.TotalBytes != measured || measured == 0 || measured >= all || math.Abs(w.WholeRunBps-whole) > 1e-6*whole {
		t.Errorf("report rx application: %d bytes, whole run %.6g; want the measured %d bytes (of %d), %.6g",
			w.TotalBytes, w.WholeRunBps, measured, all, whole)
	}
	if !res.Report.RunStart.Equal(mStart) || !res.Report.RunEnd.Equal(mEnd) {
		t.Errorf("report run %v..%v, want the measured window %v..%v", res.Report.RunStart, res.Report.RunEnd, mStart, mEnd)
	}
	if n := res.Summary.IntervalsByPhase; n["warmup"] != 2 || res.Summary.CPU[0].Intervals != n["measure"] {
		t.Errorf("summary %v, CPU over %d intervals", n, res.Summary.CPU[0].Intervals)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Every socket option reaches both ends' sockets over IPv6 (read back
// right after connect), and kernel pacing caps each stream at the rate
// asked (1 Gbit/s per stream gives at most ~1.05).
func TestBedSocketOptionsIPv6(t *testing.T) {
	requireBench(t, false)
	cfg := shortConfig(t)
	cfg.IPv6, cfg.Duration = true, 2*time.Second
	bed := testbedtest.New(t, cfg.bedOptions())
	off := false
	cfg.SockOpts.Window, cfg.SockOpts.Congestion, cfg.SockOpts.MSS = 1<<20, "cubic", 1000
	cfg.SockOpts.NoDelay, cfg.SockOpts.BindDev, cfg.SockOpts.PacingRate = &off, bed.A().Link, units.Gbps
	res, err := runOnBed(context.Background(), cfg, "test", bed, nil)
	if err != nil {
		t.Fatal(err)
	}
	so := res.Summary.SockOpts
	if so == nil || len(so.Ends) != 2 || len(so.Notes) != 0 {
		t.Fatalf("socket options %+v", so)
	}
	for i, e := range so.Ends {
		t.Logf("%+v", e)
		bind := map[int]string{0: bed.A().Link, 1: ""}[i]
		if e.SndBufUsable != 1<<20 || e.RcvBufUsable != 1<<20 || e.Congestion != "cubic" || e.SndMSS == 0 || e.SndMSS > 1000 ||
			e.NoDelay || e.BindDev != bind || e.MaxPacingRateBitPS == nil || *e.MaxPacingRateBitPS != 1e9 {
			t.Errorf("%s end: %+v", e.End, e)
		}
	}
	run, err := trace.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := run.Traffic()
	perStream := map[int32]uint64{}
	var span time.Duration
	for _, r := range rows {
		if !strings.HasPrefix(r.LocalAddr, "[2001:2::") {
			t.Fatalf("row over %s, want the IPv6 bed", r.LocalAddr)
		}
		if r.Role == trace.RoleReceiver && *r.Phase == trace.PhaseMeasure {
			perStream[r.Stream] += r.AppBytes
		}
	}
	span = res.Report.RunEnd.Sub(res.Report.RunStart)
	for s, n := range perStream {
		g := float64(n) * 8 / span.Seconds() / 1e9
		t.Logf("stream %d: %.3f Gbit/s", s, g)
		if g > 1.05 || g < 0.5 {
			t.Errorf("stream %d: %.3f Gbit/s with 1 Gbit/s pacing, want 0.5..1.05", s, g)
		}
	}
}

// A sweep over two configurations keeps two traces and prints one table.
func TestSweep(t *testing.T) {
	requireBench(t, false)
	base := shortConfig(t)
	out := t.TempDir()
	var done []string
	rows, err := Sweep(context.Background(), SweepConfig{Base: base, Out: out, Streams: []int{1, 2}}, "test", nil,
		func(i, n int, row SweepRow) { done = append(done, row.Status) })
	if err != nil || len(rows) != 2 || len(done) != 2 {
		t.Fatalf("sweep: %d rows, progress %v, %v", len(rows), done, err)
	}
	for _, name := range []string{"streams1-block128KiB", "streams2-block128KiB"} {
		if _, err := trace.Open(filepath.Join(out, name)); err != nil {
			t.Errorf("trace %s: %v", name, err)
		}
	}
	tab := NewSweepTable(rows)
	var b strings.Builder
	if err := tab.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	// --no-bpf: no softirq probe, so the busiest CPU is /proc/stat's
	// softirq of every vector and says so.
	for _, want := range []string{"peak", "steady state", "whole run", "sender retx", "busiest CPU all-vector softirq %",
		"busiest CPU %: all-vector softirq = " + SweepAllSoftirq, "streams1-block128KiB  1 ", "streams2-block128KiB  2 "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "NET_RX %") {
		t.Error("table labels /proc/stat's softirq as NET_RX")
	}
	js, err := json.Marshal(tab)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(js, &back); err != nil || len(back.Runs) != 2 {
		t.Fatalf("json %s: %v", js, err)
	}
	for _, r := range back.Runs {
		if g, ok := r["steady_state_gbit_per_s"].(float64); !ok || g <= 0 || r["status"] != "ok" {
			t.Errorf("json run %v", r)
		}
	}
}
