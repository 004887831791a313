package netdev

import (
	"fmt"
	"testing"
	"time"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

// A flow table far smaller than the flows sent (221 UDP flows, 64 entries,
// as in the report that 55% of bytes vanished with a small LRU table): the
// bytes of the flows that found the table full are counted as lost, so the
// flows that fit plus the lost bytes add up to the frames the test sent
// (and the interface's bytes match netlink). Transmits on other interfaces
// of the host in the same window (not this test's) are the only allowed
// difference.
func TestKernelFullFlowTableLosesNothing(t *testing.T) {
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			kerneltest.Retry(t, func(t *testing.T) { testFullTable(t, cache) })
		})
	}
}

func testFullTable(t *testing.T, cache bool) {
	const flows, entries, rounds, payload = 221, 64, 10, 200
	r := loadSized(t, cache, entries)
	bed := testbedtest.New(t, testbed.Options{})
	a, b := bed.A(), bed.B()
	conns := udpFlows(t, a, b, 21000, flows)
	_, linkBefore := quietRead(t, r, a)
	sendRounds(t, conns, rounds, payload)
	time.Sleep(50 * time.Millisecond)
	d, linkAfter := quietRead(t, r, a)
	// Lost counts are added at once, an interface's cached counts at the
	// next flush: a packet between the flush and the read of the lost
	// counters shows in one and not yet the other. Compare when the next
	// read moves no interface and no lost byte.
	for i := 0; i < 20; i++ {
		next := mustRead(t, r)
		d = addDeltas(d, next)
		if settled(next) {
			break
		}
		time.Sleep(20 * time.Millisecond)
		var more Delta
		more, linkAfter = quietRead(t, r, a)
		d = addDeltas(d, more)
	}
	aKey := IfaceKey{Netns: a.NetnsInode(), Ifindex: uint32(a.Ifindex())}
	var inFlows, lost, others uint64
	for _, f := range d.Flows {
		if f.Key.IfaceKey == aKey {
			inFlows += f.Tx.Bytes
		}
	}
	for _, c := range d.CPUs {
		lost += c.FlowLost.Tx.Bytes
	}
	for k, c := range d.Ifaces {
		if k != aKey {
			others += c.Tx.Bytes
		}
	}
	ia := d.Ifaces[aKey].Tx.Bytes
	if nl := linkAfter.TxBytes - linkBefore.TxBytes; ia != nl {
		t.Errorf("interface A tx bytes: bpf %d, netlink %d", ia, nl)
	}
	sent := uint64(flows * rounds * (14 + 20 + 8 + payload))
	t.Logf("A tx %d B (sent %d): in flow rows %d, lost (table full) %d; other interfaces' tx %d B", ia, sent, inFlows, lost, others)
	if lost == 0 || inFlows >= ia {
		t.Fatalf("the %d-entry table did not overflow: in flows %d of %d B, lost %d", entries, inFlows, ia, lost)
	}
	// Lost bytes are host-wide: A's own other frames (IPv6 neighbour
	// discovery, MLD: ia - sent) and other interfaces' refused flows may
	// add to them, never take away. A frame processed between a read's
	// flush and its read of the lost counters is in one window's lost
	// bytes and the next window's interface bytes: up to 1 KB of such
	// frames is allowed beside them (seen: one 90 B MLD frame).
	extra := ia - min(ia, sent) + others + 1024
	if got := inFlows + lost; got < sent || got > sent+extra {
		t.Errorf("flows %d + lost %d = %d B, sent %d B (+ at most %d B of other frames)", inFlows, lost, got, sent, extra)
	}
}

// settled reports whether next (one read's change) moved no interface
// byte and no lost byte.
func settled(next Delta) bool {
	for _, c := range next.Ifaces {
		if c != (Counts{}) {
			return false
		}
	}
	for _, c := range next.CPUs {
		if c.FlowLost != (Counts{}) {
			return false
		}
	}
	return true
}
