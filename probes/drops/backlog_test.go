package drops_test

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/safchain/ethtool"
	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/softnet"
	"github.com/netprof/netprof/probes/drops"
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic/testbed"
	"github.com/netprof/netprof/traffic/testbed/testbedtest"
)

const backlogSysctl = "/proc/sys/net/core/netdev_max_backlog"

// With net.core.netdev_max_backlog at 8 and UDP GSO sends of 64
// segments that A's veth segments in software (tx-udp-segmentation off),
// 64 packets enter B's per-CPU backlog before its softirq runs: the rest
// are dropped there. The drops probe's CPU_BACKLOG count equals the
// kernel's own backlog drop counter, /proc/net/softnet_stat's dropped
// column, over the same window, and B's netlink rx_dropped (the kernel
// counts each backlog drop on the receiving device) moves by as many.
// netdev_max_backlog is global: it is set for the ~0.2 s of sending and
// restored (also when the test fails).
func TestBacklogDropsMatchSoftnet(t *testing.T) {
	const sends, segs, segSize = 40, 64, 1000
	bed := testbedtest.New(t, testbed.Options{})
	r := load(t)
	a, b := bed.A(), bed.B()
	if err := a.Do(func() error {
		e, err := ethtool.NewEthtool()
		if err != nil {
			return err
		}
		defer e.Close()
		return e.Change(a.Link, map[string]bool{"tx-udp-segmentation": false})
	}); err != nil {
		t.Fatalf("turn off UDP segmentation offload on %s: %v", a.Link, err)
	}
	old, err := os.ReadFile(backlogSysctl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(backlogSysctl, old, 0o644); err != nil {
			t.Errorf("restore netdev_max_backlog %s: %v", strings.TrimSpace(string(old)), err)
		}
	})
	var sink net.PacketConn
	if err := b.Do(func() (err error) {
		sink, err = net.ListenPacket("udp", net.JoinHostPort(b.Addr.String(), "7001"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	c, err := a.Dial(context.Background(), "udp", net.JoinHostPort(b.Addr.String(), "7001"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT, segSize) }); err != nil || serr != nil {
		t.Fatalf("UDP_SEGMENT: %v %v", err, serr)
	}

	if err := os.WriteFile(backlogSysctl, []byte("8"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := drops.NewSampler(r)
	linkB0 := testbedtest.LinkStats(t, b)
	sn0, err := softnet.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, segs*segSize)
	for range sends {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	var iv trace.Interval
	if err := s.Sample(&iv, 1e9); err != nil {
		t.Fatal(err)
	}
	sn1, err := softnet.Read()
	if err != nil {
		t.Fatal(err)
	}
	linkB1 := testbedtest.LinkStats(t, b)
	if err := os.WriteFile(backlogSysctl, old, 0o644); err != nil {
		t.Fatal(err)
	}
	byReason := map[string]uint64{}
	for _, d := range iv.Drops {
		byReason[d.Reason] += d.Packets
	}
	var softnetDropped uint64
	for cpu, x := range sn1 {
		softnetDropped += uint64(x.Sub(sn0[cpu]).Dropped)
	}
	rxDropped := linkB1.RxDropped - linkB0.RxDropped
	t.Logf("%d sends of %d segments: softnet_stat dropped %d; probe by reason %v; %s rx_dropped %d, rx_packets %d",
		sends, segs, softnetDropped, byReason, b.Link, rxDropped, linkB1.RxPackets-linkB0.RxPackets)
	if softnetDropped == 0 {
		t.Fatalf("no backlog drops with netdev_max_backlog 8: the test did not overflow the backlog")
	}
	if got := byReason["CPU_BACKLOG"]; got != softnetDropped {
		t.Errorf("drops probe CPU_BACKLOG %d, softnet_stat dropped %d over the same window", got, softnetDropped)
	}
	if rxDropped != softnetDropped {
		t.Errorf("%s rx_dropped grew by %d, the backlog dropped %d", b.Link, rxDropped, softnetDropped)
	}
	// Every segment sent was delivered to B or dropped in its backlog
	// (B's rx_packets also count the odd neighbour discovery packet).
	if sent, got := uint64(sends*segs), linkB1.RxPackets-linkB0.RxPackets+softnetDropped; got < sent || got > sent+10 {
		t.Errorf("%s rx_packets %d + backlog drops %d = %d, want the %d segments sent (+ <= 10 others)",
			b.Link, linkB1.RxPackets-linkB0.RxPackets, softnetDropped, got, sent)
	}
}
