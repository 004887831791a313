package sockstate_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/netprof/netprof/bpf"
	"github.com/netprof/netprof/probes/sockstate"
	"github.com/netprof/netprof/trace"
)

func record(t *testing.T, ev bpf.SockstateNpSockEvent) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := binary.Write(&b, binary.NativeEndian, ev); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEventSize(t *testing.T) {
	// struct np_sock_event: 64-byte connection + 40 bytes of counters.
	if sockstate.EventSize != 104 {
		t.Fatalf("EventSize %d, want 104 (layout of struct np_sock_event changed?)", sockstate.EventSize)
	}
}

func TestDecode(t *testing.T) {
	var v4 bpf.SockstateNpSockEvent
	v4.Conn = bpf.SockstateNpSockConn{Netns: 7, Cookie: 99, OpenNs: 1000, Lport: 40000, Rport: 5001, Family: 4, Active: 1}
	copy(v4.Conn.Laddr[:], []byte{198, 18, 0, 1})
	copy(v4.Conn.Raddr[:], []byte{198, 18, 0, 2})
	v4.CloseNs, v4.BytesAcked, v4.BytesReceived, v4.TotalRetrans = 5000, 1<<33, 24, 3
	v4.SegsOut, v4.SegsIn, v4.Kind, v4.FromState, v4.Flags = 10, 11, 2, 5, 1
	e, err := sockstate.Decode(record(t, v4))
	if err != nil {
		t.Fatal(err)
	}
	want := sockstate.Event{
		Kind: sockstate.Close, Netns: 7, Cookie: 99, Family: 4,
		Local: netip.MustParseAddrPort("198.18.0.1:40000"), Remote: netip.MustParseAddrPort("198.18.0.2:5001"),
		Active: true, OpenNs: 1000, CloseNs: 5000, BytesAcked: 1 << 33, BytesReceived: 24, TotalRetrans: 3,
		SegsOut: 10, SegsIn: 11, HaveSegs: true, FromState: 5,
	}
	if e != want {
		t.Errorf("decoded\n %+v\nwant\n %+v", e, want)
	}
	if e.DurationNs() != 4000 || e.TimeNs() != 5000 || e.FromState.String() != "FIN_WAIT2" {
		t.Errorf("duration %d time %d from %v", e.DurationNs(), e.TimeNs(), e.FromState)
	}

	v6 := v4
	v6.Conn.Family, v6.Kind, v6.Flags, v6.Conn.Active = 6, 1, 0, 0
	v6.Conn.Laddr = netip.MustParseAddr("2001:2::1").As16()
	v6.Conn.Raddr = netip.MustParseAddr("2001:2::2").As16()
	e, err = sockstate.Decode(record(t, v6))
	if err != nil {
		t.Fatal(err)
	}
	if e.Local.String() != "[2001:2::1]:40000" || e.Remote.Addr().String() != "2001:2::2" || e.HaveSegs || e.Active || e.Kind != sockstate.Open {
		t.Errorf("v6 open decoded %+v", e)
	}
	if e.DurationNs() != 0 || e.TimeNs() != 1000 {
		t.Errorf("open: duration %d time %d, want 0 and OpenNs", e.DurationNs(), e.TimeNs())
	}
}

func TestDecodeRejects(t *testing.T) {
	var ev bpf.SockstateNpSockEvent
	ev.Kind = 9
	if _, err := sockstate.Decode(record(t, ev)); err == nil {
		t.Error("unknown kind decoded")
	}
	ev.Kind = 1
	if _, err := sockstate.Decode(record(t, ev)[:50]); err == nil {
		t.Error("short record decoded")
	}
}

func TestNames(t *testing.T) {
	if sockstate.Open.String() != trace.SocketOpen || sockstate.Close.String() != trace.SocketClose {
		t.Errorf("kinds %q %q, want the trace's %q %q", sockstate.Open, sockstate.Close, trace.SocketOpen, trace.SocketClose)
	}
	for s, want := range map[sockstate.State]string{1: "ESTABLISHED", 4: "FIN_WAIT1", 9: "LAST_ACK", 7: "CLOSE", 0: "STATE_0", 200: "STATE_200"} {
		if s.String() != want {
			t.Errorf("state %d: %q, want %q", uint8(s), s.String(), want)
		}
	}
}

func TestClockTime(t *testing.T) {
	wall := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	c := sockstate.Clock{Mono: 10_000_000_000, Wall: wall}
	got := c.Time(9_000_000_500)
	if !got.Equal(wall.Add(-999_999_500)) || got.Location() != time.UTC {
		t.Errorf("Time = %v, want %v in UTC", got, wall.Add(-999_999_500))
	}
}

func TestStatsSubAndLost(t *testing.T) {
	a := sockstate.Stats{Opens: 10, Closes: 8, RingFull: 3, ConnTableFull: 2, Untracked: 5, ReaderDropped: 1}
	b := sockstate.Stats{Opens: 4, Closes: 9, RingFull: 1, ConnTableFull: 2}
	d := a.Sub(b)
	if d != (sockstate.Stats{Opens: 6, Closes: 0, RingFull: 2, Untracked: 5, ReaderDropped: 1}) {
		t.Errorf("Sub = %+v", d)
	}
	if d.Lost() != 3 {
		t.Errorf("Lost = %d, want ring 2 + table 0 + reader 1", d.Lost())
	}
}

// fakeSource hands out fixed events and counters.
type fakeSource struct {
	evs   []sockstate.Event
	clk   sockstate.Clock
	stats []sockstate.Stats
	err   error
}

func (f *fakeSource) Drain() ([]sockstate.Event, sockstate.Clock, error) {
	evs := f.evs
	f.evs = nil
	return evs, f.clk, f.err
}

func (f *fakeSource) Stats() (sockstate.Stats, error) {
	s := f.stats[0]
	if len(f.stats) > 1 {
		f.stats = f.stats[1:]
	}
	return s, nil
}

func TestSampler(t *testing.T) {
	wall := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := sockstate.Clock{Mono: 50e9, Wall: wall}
	ap := netip.MustParseAddrPort
	open := sockstate.Event{Kind: sockstate.Open, Netns: 1, Cookie: 5, Family: 4,
		Local: ap("198.18.0.1:40000"), Remote: ap("198.18.0.2:5001"), Active: true, OpenNs: 49e9, BytesAcked: 1}
	closed := sockstate.Event{Kind: sockstate.Close, Netns: 1, Cookie: 4, Family: 4,
		Local: ap("198.18.0.1:39999"), Remote: ap("198.18.0.2:5001"), Active: true, OpenNs: 47e9, CloseNs: 49.5e9,
		BytesAcked: 1000, BytesReceived: 25, TotalRetrans: 2, SegsOut: 9, SegsIn: 8, HaveSegs: true, FromState: 5}
	other := open
	other.Netns = 2
	src := &fakeSource{evs: []sockstate.Event{open, closed, other}, clk: clk,
		stats: []sockstate.Stats{{RingFull: 5}, {RingFull: 7, ConnTableFull: 1, Untracked: 9}}}
	s := sockstate.NewSampler(src, func(ns uint64) bool { return ns == 1 })
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	var iv trace.Interval
	if err := s.Sample(&iv, 1e9); err != nil {
		t.Fatal(err)
	}
	if len(iv.Sockets) != 2 {
		t.Fatalf("rows %+v, want 2 (netns 2 out of scope)", iv.Sockets)
	}
	o, c := iv.Sockets[0], iv.Sockets[1]
	if o.Event != "open" || o.CloseTime != nil || o.DurationNs != nil || o.CloseFromState != nil || o.SegsOut != nil {
		t.Errorf("open row %+v: close columns and segs must be null", o)
	}
	if !o.OpenTime.Equal(wall.Add(-time.Second)) || !o.Time.Equal(wall) || o.IntervalNs != 1e9 || o.SrcPort != 40000 || o.DstAddr != "198.18.0.2" {
		t.Errorf("open row %+v", o)
	}
	if c.Event != "close" || c.CloseTime == nil || !c.CloseTime.Equal(wall.Add(-500*time.Millisecond)) ||
		*c.DurationNs != 2.5e9 || *c.CloseFromState != "FIN_WAIT2" || *c.SegsOut != 9 || c.BytesAcked != 1000 || c.TotalRetrans != 2 {
		t.Errorf("close row %+v", c)
	}
	if len(iv.Probes) != 1 || iv.Probes[0].Hook != "map:sockstate" || iv.Probes[0].MapUpdateFailures != 3 {
		t.Errorf("probes rows %+v, want one map:sockstate row with 3 lost", iv.Probes)
	}
	// A drain error is returned; the counters row is still written.
	src.err = errors.New("boom")
	iv = trace.Interval{}
	if err := s.Sample(&iv, 1e9); err == nil || len(iv.Probes) != 1 || iv.Probes[0].MapUpdateFailures != 0 {
		t.Errorf("Sample with a failing source: %v, probes %+v", err, iv.Probes)
	}
}
