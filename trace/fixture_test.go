package trace_test

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/leakcheck"
	"github.com/netprof/netprof/trace"
)

// TestMain fails the package if a test leaks file descriptors or goroutines.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// zone is a non-UTC location: written times in it must come back in UTC.
var zone = time.FixedZone("UTC+1", 3600)

// base has nanosecond digits that the µs timestamp columns must drop.
var base = time.Date(2025, 3, 4, 5, 6, 7, 123456789, zone)

func ptr[T any](v T) *T { return &v }

// testManifest returns a manifest with every field set.
func testManifest() trace.Manifest {
	return trace.Manifest{
		ToolVersion:  "v0.0.0-test",
		Argv:         []string{"netprof", "record", "--interval=1s"},
		Start:        base,
		Host:         "testhost",
		Kernel:       "6.8.0-test",
		CPUCount:     4,
		CPUsOnline:   "0-3",
		CPUsPossible: "0-3,8-239",
		IntervalNs:   int64(time.Second),
		Config:       map[string]any{"interval": "1s", "bpf": true},
	}
}

// interval returns interval i with every column populated; optional columns
// are nil in odd intervals and set in even ones.
func interval(i int) trace.Interval {
	t := base.Add(time.Duration(i) * time.Second)
	ns := int64(time.Second) + int64(i)
	set := i%2 == 0
	return trace.Interval{
		Ifaces:  []trace.IfaceRow{ifaceRow(t, ns, i, set)},
		CPUs:    []trace.CPURow{cpuRow(t, ns, 0, i), cpuRow(t, ns, 3, i)},
		Flows:   []trace.FlowRow{flowRow(t, ns, i, set), flow4Row(t, ns, i)},
		Traffic: []trace.TrafficRow{trafficRow(t, ns, i, set)},
		Probes:  []trace.ProbeRow{probeRow(t, ns, i)},
	}
}

func opt[T any](set bool, v T) *T {
	if !set {
		return nil
	}
	return &v
}

func ifaceRow(t time.Time, ns int64, i int, set bool) trace.IfaceRow {
	u := uint64(i)
	return trace.IfaceRow{
		Time: t, IntervalNs: ns, Netns: 4026531840, Ifname: "veth-np0", Ifindex: 7,
		Driver: "veth", RxBytes: math.MaxUint64 - u, TxBytes: 2 + u, RxPackets: 3 + u,
		TxPackets: 4 + u, RxDropped: 5 + u, TxDropped: 6 + u,
		BpfRxBytes: opt(set, 7+u), BpfRxPackets: opt(set, 8+u), BpfRxSkbs: opt(set, 9+u),
		BpfTxBytes: opt(set, 10+u), BpfTxPackets: opt(set, uint64(0)), BpfTxSkbs: opt(set, uint64(math.MaxUint64)),
	}
}

func cpuRow(t time.Time, ns int64, cpu int32, i int) trace.CPURow {
	u := uint64(i)
	return trace.CPURow{
		Time: t, IntervalNs: ns, CPU: cpu, NetRxSoftirqNs: opt(i%3 != 1, 1000+u), NetRxSoftirqCount: opt(i%3 != 1, 11+u),
		NetTxSoftirqNs: opt(i%3 != 1, 12+u), NetTxSoftirqCount: opt(i%3 != 1, 13+u), RxPackets: opt(i%3 != 2, 14+u),
		RxBytes: opt(i%3 != 2, 15+u), NapiPolls: opt(i%3 == 0, u), NapiPackets: opt(i%3 == 0, 16+u),
		NapiBudgetExhausted: opt(i%3 == 0, uint64(0)),
		ProcSoftirqNs:       opt(i%2 == 0, 20_000_000+u), ProcBusyNs: opt(i%2 == 0, 990_000_000+u),
		ProcTotalNs: opt(i%2 == 0, uint64(ns)),
	}
}

func flowRow(t time.Time, ns int64, i int, set bool) trace.FlowRow {
	u := uint64(i)
	return trace.FlowRow{
		Time: t, IntervalNs: ns, Netns: 4026532000, Ifindex: 2, Ifname: "eth0",
		Family: 6, Proto: 6, SrcAddr: "2001:db8::1", SrcPort: 65535,
		DstAddr: "fe80::1ff:fe23:4567:890a", DstPort: uint16(40000 + i),
		RxBytes: 1 + u, RxPackets: 2 + u, RxSkbs: 3 + u, TxBytes: 4 + u, TxPackets: 5 + u,
		TxSkbs: 6 + u, Retransmits: 7 + u, RTTSamples: 8 + u,
		RTTMinUs: opt(set, uint32(10)), RTTP50Us: opt(set, uint32(20)), RTTP99Us: opt(set, uint32(99)),
		RTTMaxUs: opt(set, uint32(math.MaxUint32)), SrttUs: opt(set, uint32(25)), SndCwnd: opt(set, uint32(0)),
	}
}

func flow4Row(t time.Time, ns int64, i int) trace.FlowRow {
	return trace.FlowRow{
		Time: t, IntervalNs: ns, Ifindex: 1, Ifname: "lo", Family: 4, Proto: 17,
		SrcAddr: "127.0.0.1", SrcPort: 0, DstAddr: "127.0.0.2", DstPort: 53,
		RxBytes: uint64(i), RTTMinUs: ptr(uint32(i)),
	}
}

func trafficRow(t time.Time, ns int64, i int, set bool) trace.TrafficRow {
	role := trace.RoleSender
	if !set {
		role = trace.RoleReceiver
	}
	return trace.TrafficRow{
		Time: t, IntervalNs: ns, Stream: int32(i), Role: role, LocalAddr: "[2001:db8::2]:5201",
		RemoteAddr: "[2001:db8::3]:41000", AppBytes: 1 << 40,
		TCPRetransmits: opt(set, uint64(i)), TCPRttUs: opt(set, uint32(123)), TCPCwnd: opt(set, uint32(10)),
	}
}

func probeRow(t time.Time, ns int64, i int) trace.ProbeRow {
	return trace.ProbeRow{
		Time: t, IntervalNs: ns, Program: "np_softirq_entry", Hook: "irq/softirq_entry",
		RunCount: uint64(i) * 1000, RunTimeNs: 12345, RecursionMisses: uint64(i % 3),
	}
}

// recordRun writes n intervals to a new run in a temporary directory,
// closes it and returns the directory and what was written.
func recordRun(t *testing.T, n int, opts ...trace.Option) (string, []trace.Interval) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	// One part whatever the machine's speed, unless opts say otherwise.
	opts = append([]trace.Option{trace.WithPartSpan(time.Hour)}, opts...)
	w, err := trace.Create(dir, testManifest(), opts...)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	var ivs []trace.Interval
	for i := range n {
		iv := interval(i)
		ivs = append(ivs, iv)
		if err := w.WriteInterval(iv); err != nil {
			t.Fatalf("WriteInterval %d: %v", i, err)
		}
	}
	if err := w.Close(base.Add(time.Duration(n)*time.Second), trace.StatusOK); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return dir, ivs
}

// want concatenates one table of the intervals, with times as the µs UTC
// timestamps a reader must return.
func want[T any](ivs []trace.Interval, pick func(trace.Interval) []T, setTime func(*T)) []T {
	var out []T
	for _, iv := range ivs {
		for _, r := range pick(iv) {
			setTime(&r)
			out = append(out, r)
		}
	}
	return out
}

func us(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// onePart returns the path of table file's only part file in run dir.
func onePart(t *testing.T, dir, file string) string {
	t.Helper()
	paths, err := trace.TablePaths(dir, file)
	if err != nil || len(paths) != 1 {
		t.Fatalf("%s: parts %v, %v; want one", file, paths, err)
	}
	return paths[0]
}
