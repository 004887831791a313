package softnet

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"
)

// Datagrams sent over loopback are each one skb through the receive path
// (netif_rx, the backlog, __netif_receive_skb): the CPUs' processed
// counters grow by at least lo's netlink rx_packets, and by no more than
// every interface's rx_packets together (other traffic of this namespace)
// plus a small margin for packets of other namespaces. CPUs listed are
// online.
func TestProcessedMatchesLoopback(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c, err := net.Dial("udp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rx := func() (lo, all uint64) {
		links, err := netlink.LinkList()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if st := l.Attrs().Statistics; st != nil {
				all += st.RxPackets
				if l.Attrs().Flags&net.FlagLoopback != 0 {
					lo += st.RxPackets
				}
			}
		}
		return lo, all
	}
	lo0, all0 := rx()
	a, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	buf := make([]byte, 64)
	go func() {
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	for range n {
		if _, err := c.Write(buf[:32]); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	lo1, all1 := rx()
	var processed uint64
	for cpu, cb := range b {
		ca, ok := a[cpu]
		if !ok {
			continue // came online in between
		}
		processed += uint64(cb.Sub(ca).Processed)
	}
	lo, all := lo1-lo0, all1-all0
	t.Logf("%d datagrams: lo rx_packets +%d, all interfaces +%d, softnet processed +%d (%d CPUs)", n, lo, all, processed, len(b))
	if lo < n {
		t.Fatalf("lo counted %d packets of the %d sent", lo, n)
	}
	if processed < lo || processed > all+all/100+100 {
		t.Errorf("softnet processed %d, want between lo's %d and all interfaces' %d (+1%% +100)", processed, lo, all)
	}
}

// Counters wrap at 32 bits; Sub gives the growth across one wrap.
func TestSubWraps(t *testing.T) {
	p := Counters{Processed: 1<<32 - 10, TimeSqueezed: 5}
	c := Counters{Processed: 20, TimeSqueezed: 7}
	if d := c.Sub(p); d.Processed != 30 || d.TimeSqueezed != 2 {
		t.Fatalf("Sub = %+v, want processed 30, time squeezed 2", d)
	}
}
