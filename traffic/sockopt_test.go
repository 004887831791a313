package traffic_test

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/kerneltest"
	"github.com/netprof/netprof/internal/units"
	"github.com/netprof/netprof/traffic"
)

// connectPair dials a listener on loopback with the given options on each
// end and returns both ends (closed when the test ends).
func connectPair(t *testing.T, dialOpts, listenOpts traffic.SockOpts) (dialed, accepted net.Conn) {
	t.Helper()
	ln, err := listenOpts.Listen(nil, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		got <- c
	}()
	dialed, err = dialOpts.Dial(nil)(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		<-got
		t.Fatal(err)
	}
	t.Cleanup(func() { dialed.Close() })
	if accepted = <-got; accepted == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { accepted.Close() })
	return dialed, accepted
}

func readState(t *testing.T, c net.Conn) traffic.SockState {
	t.Helper()
	st, err := traffic.ReadSockState(c)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func sysctlInt(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/core/" + name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Every option reads back from both ends (the accepting end inherits from
// the listener), and Check finds nothing to report.
func TestSockOptsReadBack(t *testing.T) {
	kerneltest.RequireRoot(t) // SO_BINDTODEVICE needs CAP_NET_RAW
	window := 256 << 10
	if lim := min(sysctlInt(t, "rmem_max"), sysctlInt(t, "wmem_max")); lim < window {
		window = lim
	}
	off := false
	o := traffic.SockOpts{Window: window, Congestion: "reno", MSS: 1000, NoDelay: &off, BindDev: "lo", PacingRate: units.Gbps}
	dialed, accepted := connectPair(t, o, o)
	for _, end := range []struct {
		name  string
		c     net.Conn
		bound bool
	}{{"dialing", dialed, true}, {"accepting", accepted, false}} {
		st := readState(t, end.c)
		t.Logf("%s end: %+v", end.name, st)
		if st.SndBuf != 2*window || st.RcvBuf != 2*window {
			t.Errorf("%s: SO_SNDBUF %d, SO_RCVBUF %d; want %d each (twice %d)", end.name, st.SndBuf, st.RcvBuf, 2*window, window)
		}
		if st.Congestion != "reno" {
			t.Errorf("%s: TCP_CONGESTION %q, want reno", end.name, st.Congestion)
		}
		if st.SndMSS == 0 || st.SndMSS > 1000 || st.MaxSeg > 1000 {
			t.Errorf("%s: tcpi_snd_mss %d, TCP_MAXSEG %d; want (0, 1000]", end.name, st.SndMSS, st.MaxSeg)
		}
		if st.NoDelay {
			t.Errorf("%s: TCP_NODELAY on, want off", end.name)
		}
		if st.MaxPacingRate != 125_000_000 {
			t.Errorf("%s: SO_MAX_PACING_RATE %d bytes/s, want 125000000 (1 Gbit/s)", end.name, st.MaxPacingRate)
		}
		if want := map[bool]string{true: "lo", false: ""}[end.bound]; st.BindDev != want {
			t.Errorf("%s: SO_BINDTODEVICE %q, want %q", end.name, st.BindDev, want)
		}
		if notes := o.Check(st, end.bound); len(notes) > 0 {
			t.Errorf("%s: Check reports %q, want nothing", end.name, notes)
		}
	}
}

// Without options a connection keeps the kernel's and Go's defaults
// (TCP_NODELAY on, no pacing limit, no device).
func TestSockOptsDefaults(t *testing.T) {
	dialed, _ := connectPair(t, traffic.SockOpts{}, traffic.SockOpts{})
	st := readState(t, dialed)
	if !st.NoDelay || st.BindDev != "" || st.MaxPacingRate != ^uint64(0) || st.Congestion == "" {
		t.Errorf("defaults: %+v", st)
	}
	if notes := (traffic.SockOpts{}).Check(st, true); len(notes) > 0 {
		t.Errorf("Check of no options: %q", notes)
	}
}

// A window above net.core.rmem_max/wmem_max is capped by the kernel, and
// Check says so, with the usable size (half of what getsockopt reports).
func TestSockOptsWindowClamped(t *testing.T) {
	rmax, wmax := sysctlInt(t, "rmem_max"), sysctlInt(t, "wmem_max")
	o := traffic.SockOpts{Window: 2*max(rmax, wmax) + 4096}
	dialed, _ := connectPair(t, o, traffic.SockOpts{})
	st := readState(t, dialed)
	if st.RcvBuf != 2*rmax || st.SndBuf != 2*wmax {
		t.Errorf("SO_RCVBUF %d, SO_SNDBUF %d; want 2 x rmem_max %d, 2 x wmem_max %d", st.RcvBuf, st.SndBuf, rmax, wmax)
	}
	notes := strings.Join(o.Check(st, true), "\n")
	t.Log(notes)
	for _, want := range []string{
		"SO_RCVBUF clamped: asked " + strconv.Itoa(o.Window) + " bytes",
		"kernel gave " + strconv.Itoa(rmax) + " ",
		"net.core.rmem_max = " + strconv.Itoa(rmax),
		"SO_SNDBUF clamped", "net.core.wmem_max",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("Check notes lack %q", want)
		}
	}
}

// An unknown congestion control fails before any connection, listing the
// available ones; so does a dial with it.
func TestCongestionUnknown(t *testing.T) {
	avail, err := traffic.AvailableCongestion()
	if err != nil || len(avail) == 0 {
		t.Fatalf("available: %v, %v", avail, err)
	}
	if err := traffic.CheckCongestion(avail[0]); err != nil {
		t.Errorf("CheckCongestion(%q): %v", avail[0], err)
	}
	err = traffic.CheckCongestion("nosuchcc")
	if err == nil || !strings.Contains(err.Error(), `unknown congestion control "nosuchcc": available: `+strings.Join(avail, ", ")) {
		t.Errorf("CheckCongestion(nosuchcc) = %v", err)
	}
	// The errno is explained, not appended ("...: no such file or
	// directory"), and still matches.
	if err == nil || strings.Contains(err.Error(), "no such file") || !errors.Is(err, unix.ENOENT) {
		t.Errorf("CheckCongestion(nosuchcc) = %v: want ENOENT without its text", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = traffic.SockOpts{Congestion: "nosuchcc"}.Dial(nil)(t.Context(), "tcp", ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "available: ") {
		t.Errorf("dial with nosuchcc: %v", err)
	}
}

func TestSockOptsValidate(t *testing.T) {
	if err := (traffic.SockOpts{Window: 1 << 20, MSS: 1400, Congestion: "cubic", BindDev: "eth0", PacingRate: units.Gbps}).Validate(); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
	err := traffic.SockOpts{Window: -1, MSS: 40, PacingRate: 4, BindDev: "a/b", Congestion: strings.Repeat("x", 16)}.Validate()
	for _, want := range []string{"window", "mss 40", "pacing rate", "bind-dev", "congestion"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v lacks %q", err, want)
		}
	}
}
