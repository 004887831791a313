package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// envRequireNetem makes a kernel without sch_netem fail
// TestProbeRTTThroughNetem instead of skipping it: make test-kernels sets
// it for Debian's kernels, which have netem (this development machine's
// kernel does not).
const envRequireNetem = "NETPROF_REQUIRE_NETEM"

// Ground truth for the tcp probe's RTT from a delay source independent of
// netprof's own delay line: the kernel's netem qdisc, 5 ms on each end's
// egress (RTT 10 ms, kept by hrtimers in the kernel, so it holds under
// QEMU's emulation too, where the user-space line cannot keep time). The
// smallest RTT the probe saw on the sender's flows is at least 10 ms and
// at most 10% above it, within 10% of `ss -ti`'s min_rtt on the sender
// during the run, and at most 10% above the TCP connect time through the
// same path.
func TestProbeRTTThroughNetem(t *testing.T) {
	requireBench(t, true)
	const oneWay = 5 * time.Millisecond
	bed := testbedtest.New(t, testbed.Options{Sysctls: RTTSysctls})
	for _, h := range []*testbed.Host{bed.A(), bed.B()} {
		out, err := h.Exec(context.Background(), "tc", "qdisc", "add", "dev", h.Link, "root", "netem",
			"delay", oneWay.String(), "limit", "100000").CombinedOutput()
		if err != nil {
			if os.Getenv(envRequireNetem) == "1" {
				t.Fatalf("netem on %s: %v: %s", h.Name, err, out)
			}
			t.Skipf("no sch_netem on this kernel (%v: %s); make test-kernels runs this on Debian's kernels, which have it", err, out)
		}
	}
	cfg := DefaultConfig()
	cfg.Duration, cfg.Streams = 3*time.Second, 2
	cfg.Out = filepath.Join(t.TempDir(), "run")
	before := dialTimes(t, bed, 10)
	ss, ssErr := ssDuring(t, bed, cfg, func() {
		if _, err := runOnBed(context.Background(), cfg, "test", bed, nil); err != nil {
			t.Fatalf("bench: %v", err)
		}
	})
	ct := slices.Sorted(slices.Values(append(before, dialTimes(t, bed, 10)...)))
	ctMin := float64(ct[0].Microseconds())
	run, err := trace.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	probeMin, samples := probeMinRTT(t, run, bed.A().NetnsInode())
	nominal := float64((2 * oneWay).Microseconds())
	t.Logf("netem %v each way: nominal RTT %.0f µs; probe min RTT %d µs (%d samples); TCP connect min %.0f µs; ss minrtt %v ms (err %v)",
		oneWay, nominal, probeMin, samples, ctMin, ss, ssErr)
	if p := float64(probeMin); p < nominal || p > 1.10*nominal {
		t.Errorf("probe min RTT %d µs: want 2×delay %.0f µs to 10%% above it", probeMin, nominal)
	}
	if float64(probeMin) > 1.10*ctMin {
		t.Errorf("probe min RTT %d µs is more than 10%% above the connect time %.0f µs", probeMin, ctMin)
	}
	if ssErr != nil || len(ss) == 0 {
		t.Fatalf("ss -ti found no connection: %v", ssErr)
	}
	if m := slices.Min(ss); offBy(float64(probeMin), m*1000) > 0.10 {
		t.Errorf("probe min RTT %d µs is %.1f%% from ss's smallest minrtt %.3f ms (want ≤ 10%%)", probeMin, 100*offBy(float64(probeMin), m*1000), m)
	}
}

// ssDuring runs run while polling `ss -ti` on the sender every 500 ms, and
// returns the last answer that found the run's streams. The poller stops
// also when run ends the test (t.Fatal).
func ssDuring(t *testing.T, bed *testbed.Bed, cfg Config, run func()) (ss []float64, ssErr error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			v, err := ssMinRTTs(ctx, bed.A(), bed.B().Addr.String(), cfg.Port)
			if len(v) > 0 || ss == nil {
				ss, ssErr = v, err
			}
		}
	})
	run()
	cancel()
	wg.Wait()
	return ss, ssErr
}
