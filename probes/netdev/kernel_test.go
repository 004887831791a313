package netdev

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// load loads the probe and its reader; with cache false the programs'
// per-CPU cache is left off (they count in the hash maps directly).
func load(t testing.TB, cache bool) *Reader {
	t.Helper()
	return loadSized(t, cache, 4096)
}

func loadSized(t testing.TB, cache bool, flowEntries uint32) *Reader {
	t.Helper()
	spec, err := Spec(Options{FlowEntries: flowEntries})
	l := kerneltest.Load(t, spec, err)
	if l.Attached() != 3 {
		t.Fatalf("attached %d of 3 programs: %+v", l.Attached(), l.Status)
	}
	if !cache {
		// What NewReader does when np_nd_flush cannot run.
		r := &Reader{ifaces: l.Maps[bpf.NetdevMapNpNdIfaces], flows: l.Maps[bpf.NetdevMapNpNdFlows],
			cpus: l.Maps[bpf.NetdevMapNpNdCpus]}
		r.init()
		return r
	}
	r, err := NewReader(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CacheErr(); err != nil {
		kerneltest.Skip(t, fmt.Sprintf("per-CPU cache off: %v", err))
	}
	return r
}

// Many more UDP flows than the cache has ways (64 flow slots per CPU),
// sent round robin so that sets overflow, slots are written back and
// replaced and some packets are counted in the hash directly: every flow's
// counts must still be exact, with the cache on and off, and the
// interfaces' must match netlink.
func TestKernelCountsExactManyFlows(t *testing.T) {
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			kerneltest.Retry(t, func(t *testing.T) { testManyFlows(t, cache) })
		})
	}
}

func testManyFlows(t *testing.T, cache bool) {
	const flows, rounds, payload = 300, 20, 100
	r := load(t, cache)
	bed := testbedtest.New(t, testbed.Options{})
	a, b := bed.A(), bed.B()
	conns := udpFlows(t, a, b, 20000, flows)
	_, linkBefore := quietRead(t, r, a)
	sendRounds(t, conns, rounds, payload)
	time.Sleep(50 * time.Millisecond)
	d, linkAfter := quietRead(t, r, a)
	byKey := d.FlowMap()
	frame := uint64(14 + 20 + 8 + payload)
	var bad int
	for _, c := range conns {
		local, remote := c.LocalAddr().(*net.UDPAddr).AddrPort(), c.RemoteAddr().(*net.UDPAddr).AddrPort()
		tx := byKey[FlowKey{IfaceKey: IfaceKey{Netns: a.NetnsInode(), Ifindex: uint32(a.Ifindex())},
			Family: 4, Proto: 17, Local: addrPort4(local), Remote: addrPort4(remote)}].Tx
		rx := byKey[FlowKey{IfaceKey: IfaceKey{Netns: b.NetnsInode(), Ifindex: uint32(b.Ifindex())},
			Family: 4, Proto: 17, Local: addrPort4(remote), Remote: addrPort4(local)}].Rx
		want := DirCounts{Bytes: rounds * frame, Packets: rounds, Skbs: rounds, WireBytes: rounds * frame}
		if tx != want || rx != want {
			if bad++; bad <= 5 {
				t.Errorf("flow %v -> %v: tx %+v, rx %+v, want %+v each", local, remote, tx, rx, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d flows miscounted", bad, flows)
	}
	ia := d.Ifaces[IfaceKey{Netns: a.NetnsInode(), Ifindex: uint32(a.Ifindex())}]
	if got, want := ia.Tx.Bytes, linkAfter.TxBytes-linkBefore.TxBytes; got != want {
		t.Errorf("interface A tx bytes: bpf %d, netlink %d", got, want)
	}
	if got, want := ia.Tx.Skbs, linkAfter.TxPackets-linkBefore.TxPackets; got != want {
		t.Errorf("interface A tx skbs: bpf %d, netlink %d", got, want)
	}
	var lost Counts
	for _, c := range d.CPUs {
		lost = lost.plus(c.FlowLost).plus(c.IfaceLost)
	}
	// Deleting idle flows is the reader's garbage collection (after
	// IdleReads reads without change, their totals already read): a
	// quiet read that took several reads deletes the bed's setup flows
	// (neighbour discovery) that way. That lost nothing is what the exact
	// per-flow counts above and the kernel's lost counters show.
	if lost != (Counts{}) {
		t.Errorf("lost %+v", lost)
	}
	t.Logf("%d idle flows deleted by the reads after sending", d.FlowsDeleted)
}

// udpFlows opens n UDP flows from a to b's ports first..first+n-1, with a
// receiver on each.
func udpFlows(t *testing.T, a, b *testbed.Host, first, n int) []net.Conn {
	t.Helper()
	udpSinks(t, b, first, n)
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, err := a.Dial(context.Background(), "udp", netip.AddrPortFrom(b.Addr, uint16(first+i)).String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns
}

// sendRounds sends one payload-byte datagram on every conn, rounds times,
// pausing between rounds to stay far below the receive backlog.
func sendRounds(t *testing.T, conns []net.Conn, rounds, payload int) {
	t.Helper()
	msg := make([]byte, payload)
	for range rounds {
		for _, c := range conns {
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// udpSinks opens n UDP receivers on h from port first on, so that h answers
// no packet with ICMP port unreachable.
func udpSinks(t *testing.T, h *testbed.Host, first, n int) {
	t.Helper()
	err := h.Do(func() error {
		for i := range n {
			pc, err := net.ListenPacket("udp", netip.AddrPortFrom(h.Addr, uint16(first+i)).String())
			if err != nil {
				return err
			}
			t.Cleanup(func() { pc.Close() })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// quietRead reads the probe between two reads of h's netlink counters
// that agree, so that no packet (neighbour discovery, ...) slipped between
// the two sources. It returns the sum of the reads it made (it may retry):
// what the probe counted since the read before it.
func quietRead(t *testing.T, r *Reader, h *testbed.Host) (Delta, linkstats.Stats) {
	t.Helper()
	var sum Delta
	for range 50 {
		n1 := testbedtest.LinkStats(t, h)
		sum = addDeltas(sum, mustRead(t, r))
		if n2 := testbedtest.LinkStats(t, h); n2 == n1 {
			return sum, n1
		}
		time.Sleep(10 * time.Millisecond)
	}
	kerneltest.Disturbed(t, "%s in %s never quiet between two netlink reads in 50 tries 10 ms apart", h.Link, h.Name)
	return Delta{}, linkstats.Stats{}
}

func mustRead(t *testing.T, r *Reader) Delta {
	t.Helper()
	d, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// addDeltas returns the change over two consecutive reads' windows, a then
// b (with a copy of their flows: a Read reuses them).
func addDeltas(a, b Delta) Delta {
	out := Delta{Ifaces: map[IfaceKey]Counts{}, FlowsDeleted: a.FlowsDeleted + b.FlowsDeleted, FlowEntries: b.FlowEntries}
	flows := a.FlowMap()
	for _, f := range b.Flows {
		flows[f.Key] = flows[f.Key].plus(f.Counts)
	}
	for k, c := range flows {
		out.Flows = append(out.Flows, FlowDelta{Key: k, Counts: c})
	}
	for _, m := range []map[IfaceKey]Counts{a.Ifaces, b.Ifaces} {
		for k, c := range m {
			out.Ifaces[k] = out.Ifaces[k].plus(c)
		}
	}
	out.CPUs = make([]CPUCounts, max(len(a.CPUs), len(b.CPUs)))
	for _, cs := range [][]CPUCounts{a.CPUs, b.CPUs} {
		for i, c := range cs {
			o := &out.CPUs[i]
			o.RxBytes, o.RxPackets, o.RxSkbs = o.RxBytes+c.RxBytes, o.RxPackets+c.RxPackets, o.RxSkbs+c.RxSkbs
			o.NapiPolls, o.NapiPackets = o.NapiPolls+c.NapiPolls, o.NapiPackets+c.NapiPackets
			o.NapiBudgetExhausted += c.NapiBudgetExhausted
			o.FlowLost, o.IfaceLost = o.FlowLost.plus(c.FlowLost), o.IfaceLost.plus(c.IfaceLost)
		}
	}
	return out
}

func addrPort4(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
