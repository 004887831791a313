package traffic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/netprof/netprof/internal/units"
)

// Linux limits on the options SockOpts sets.
const (
	// MinMSS and MaxMSS bound SockOpts.MSS (TCP_MIN_MSS and MAX_TCP_WINDOW
	// in the kernel: TCP_MAXSEG refuses anything else with EINVAL).
	MinMSS = 88
	MaxMSS = 32767
	// maxNameLen is IFNAMSIZ-1 and TCP_CA_NAME_MAX-1.
	maxNameLen = 15
)

// SockOpts are socket options for the generator's data sockets. The zero
// value changes nothing. Options that must be in place before the
// handshake (buffers, MSS, congestion control, pacing, device) are set
// between socket() and connect() or listen() through the Control hook of
// net.Dialer and net.ListenConfig (see Dial and Listen); a listener passes
// them on to the connections it accepts (Linux copies them to the child
// socket). TCP_NODELAY is set once the connection exists, because Go turns
// it on for every TCP connection after connect and accept.
type SockOpts struct {
	// Window, when positive, sets SO_SNDBUF and SO_RCVBUF to this many
	// bytes. Linux caps the request at net.core.wmem_max / rmem_max and
	// stores (and reports) twice the result, to cover its bookkeeping
	// overhead; setting either turns the kernel's buffer autotuning off for
	// that socket. Check reports a capped request.
	Window int
	// Congestion sets TCP_CONGESTION ("cubic", "bbr", "reno", ...); ""
	// keeps the namespace's net.ipv4.tcp_congestion_control.
	Congestion string
	// MSS, when positive, sets TCP_MAXSEG (MinMSS..MaxMSS bytes): the
	// largest segment this end sends and the MSS it advertises. The segment
	// size in use (tcpi_snd_mss) is at most this, less TCP options.
	MSS int
	// NoDelay, when non-nil, sets TCP_NODELAY to *NoDelay on the
	// established connection; false turns Nagle's algorithm back on. nil
	// keeps Go's default, which is TCP_NODELAY on.
	NoDelay *bool
	// BindDev sets SO_BINDTODEVICE (an interface name in the socket's
	// namespace), so the connection uses only that interface. It applies to
	// dialing sockets (Dial) only; listeners ignore it.
	BindDev string
	// PacingRate, when positive, sets SO_MAX_PACING_RATE to PacingRate / 8
	// bytes per second: the kernel paces each connection itself (TCP's
	// internal pacing, Linux >= 4.13, or the fq qdisc), with no busy loop
	// in user space.
	PacingRate units.Rate
}

// IsZero reports whether o sets nothing.
func (o SockOpts) IsZero() bool { return o == (SockOpts{}) }

// Validate returns an error listing every option outside what Linux
// accepts. It does not check that the congestion control exists (see
// CheckCongestion).
func (o SockOpts) Validate() error {
	var errs []error
	if o.Window < 0 {
		errs = append(errs, fmt.Errorf("invalid window %d bytes: must not be negative", o.Window))
	}
	if o.MSS != 0 && (o.MSS < MinMSS || o.MSS > MaxMSS) {
		errs = append(errs, fmt.Errorf("invalid mss %d bytes: must be %d..%d", o.MSS, MinMSS, MaxMSS))
	}
	if o.PacingRate < 0 || (o.PacingRate > 0 && o.PacingRate < 8) {
		errs = append(errs, fmt.Errorf("invalid pacing rate %v: must be at least 8 bit/s (1 byte/s)", o.PacingRate))
	}
	if len(o.Congestion) > maxNameLen || strings.ContainsRune(o.Congestion, 0) {
		errs = append(errs, fmt.Errorf("invalid congestion control name %q", o.Congestion))
	}
	if len(o.BindDev) > maxNameLen || strings.ContainsAny(o.BindDev, "/\x00 ") {
		errs = append(errs, fmt.Errorf("invalid interface name %q for bind-dev", o.BindDev))
	}
	return errors.Join(errs...)
}

// Dial returns a DialFunc whose sockets get o. do, if not nil, runs its
// function inside another network namespace (testbed.Host.Do has this
// shape), so the socket is created there; nil dials from the caller's
// namespace. The dial is single-address (no Happy Eyeballs goroutines,
// which would run outside the namespace).
func (o SockOpts) Dial(do func(func() error) error) DialFunc {
	d := &net.Dialer{FallbackDelay: -1, Control: o.control(true)}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := inNS(do, func() error {
			var err error
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		if err != nil {
			return nil, err
		}
		o.afterConnect(c)
		return c, nil
	}
}

// Listen opens a listener whose socket gets o (except BindDev), inside
// the namespace do runs in (nil: the caller's). Accepted connections
// inherit the options; TCP_NODELAY is set on each as it is accepted.
func (o SockOpts) Listen(do func(func() error) error, network, addr string) (net.Listener, error) {
	lc := &net.ListenConfig{Control: o.control(false)}
	var ln net.Listener
	err := inNS(do, func() error {
		var err error
		ln, err = lc.Listen(context.Background(), network, addr)
		return err
	})
	if err != nil {
		return nil, err
	}
	if o.NoDelay == nil {
		return ln, nil
	}
	return &optListener{Listener: ln, o: o}, nil
}

func inNS(do func(func() error) error, fn func() error) error {
	if do == nil {
		return fn()
	}
	return do(fn)
}

// optListener sets TCP_NODELAY on every accepted connection.
type optListener struct {
	net.Listener
	o SockOpts
}

// Accept accepts a connection and applies the post-connect options (best
// effort: Check reports an option that did not take).
func (l *optListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.o.afterConnect(c)
	}
	return c, err
}

func (o SockOpts) afterConnect(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok && o.NoDelay != nil {
		_ = tc.SetNoDelay(*o.NoDelay)
	}
}

// control returns the Control hook that sets the pre-connect options; bind
// says whether SO_BINDTODEVICE applies (dialing sockets).
func (o SockOpts) control(bind bool) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = o.apply(int(fd), bind) }); cerr != nil {
			return cerr
		}
		return err
	}
}

// apply sets the pre-connect options on fd; errors name the option.
func (o SockOpts) apply(fd int, bind bool) error {
	set := func(name string, level, opt, v int) error {
		if err := unix.SetsockoptInt(fd, level, opt, v); err != nil {
			return fmt.Errorf("setsockopt %s %d: %w", name, v, err)
		}
		return nil
	}
	if o.Window > 0 {
		if err := set("SO_SNDBUF", unix.SOL_SOCKET, unix.SO_SNDBUF, o.Window); err != nil {
			return err
		}
		if err := set("SO_RCVBUF", unix.SOL_SOCKET, unix.SO_RCVBUF, o.Window); err != nil {
			return err
		}
	}
	if o.MSS > 0 {
		if err := set("TCP_MAXSEG", unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.MSS); err != nil {
			return err
		}
	}
	if o.Congestion != "" {
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.Congestion); err != nil {
			return congestionError(o.Congestion, err)
		}
	}
	if o.PacingRate > 0 {
		if err := unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, uint64(o.PacingRate)/8); err != nil {
			return fmt.Errorf("setsockopt SO_MAX_PACING_RATE %d bytes/s: %w", uint64(o.PacingRate)/8, err)
		}
	}
	if bind && o.BindDev != "" {
		if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, o.BindDev); err != nil {
			return fmt.Errorf("setsockopt SO_BINDTODEVICE %q: %w", o.BindDev, err)
		}
	}
	return nil
}

// availableCCFile lists the congestion controls the kernel has loaded.
const availableCCFile = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// AvailableCongestion returns the congestion control algorithms the kernel
// has loaded (tcp_available_congestion_control). Root may also use one
// whose module is not loaded yet: the kernel loads it on demand.
func AvailableCongestion() ([]string, error) {
	b, err := os.ReadFile(availableCCFile)
	if err != nil {
		return nil, fmt.Errorf("congestion controls: %w", err)
	}
	return strings.Fields(string(b)), nil
}

// CheckCongestion returns nil if name can be set as TCP_CONGESTION (tried
// on a throwaway socket, so a module the kernel loads on demand counts),
// else an error listing the available algorithms.
func CheckCongestion(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	}
	if err != nil {
		return fmt.Errorf("check congestion control: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err != nil {
		return congestionError(name, err)
	}
	return nil
}

// congestionError explains a failed TCP_CONGESTION.
func congestionError(name string, err error) error {
	avail, aerr := AvailableCongestion()
	list := strings.Join(avail, ", ")
	if aerr != nil {
		list = "unknown (" + aerr.Error() + ")"
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return quietError{fmt.Sprintf("unknown congestion control %q: available: %s (the kernel has no algorithm or module of that name)", name, list), err}
	case errors.Is(err, unix.EPERM):
		return quietError{fmt.Sprintf("congestion control %q not allowed (net.ipv4.tcp_allowed_congestion_control); available: %s", name, list), err}
	}
	return fmt.Errorf("setsockopt TCP_CONGESTION %q: %w", name, err)
}

// quietError is a message that says what its wrapped errno means, so it
// does not repeat the errno's text ("no such file or directory"), but
// still matches it with errors.Is.
type quietError struct {
	msg string
	err error
}

func (e quietError) Error() string { return e.msg }
func (e quietError) Unwrap() error { return e.err }

// SockState is what a connected socket's options read back as.
type SockState struct {
	// SndBuf and RcvBuf are SO_SNDBUF and SO_RCVBUF as Linux reports them:
	// twice the usable size asked for (after the net.core caps).
	SndBuf, RcvBuf int
	// Congestion is TCP_CONGESTION.
	Congestion string
	// MaxSeg is TCP_MAXSEG: the connection's current MSS.
	MaxSeg int
	// SndMSS is tcpi_snd_mss (TCP_INFO): the segment size in use, bytes.
	SndMSS uint32
	// NoDelay is TCP_NODELAY.
	NoDelay bool
	// BindDev is SO_BINDTODEVICE ("" when unbound).
	BindDev string
	// MaxPacingRate is SO_MAX_PACING_RATE in bytes per second
	// (math.MaxUint64 when unlimited).
	MaxPacingRate uint64
}

// ReadSockState reads the options of c's socket back (getsockopt and
// TCP_INFO). It is safe while other goroutines use c.
func ReadSockState(c net.Conn) (SockState, error) {
	rc := rawConn(c)
	if rc == nil {
		return SockState{}, errors.New("read socket options: connection exposes no socket")
	}
	var st SockState
	var err error
	if cerr := rc.Control(func(fd uintptr) { st, err = readState(int(fd)) }); cerr != nil {
		return SockState{}, fmt.Errorf("read socket options: %w", cerr)
	}
	return st, err
}

func readState(fd int) (SockState, error) {
	var st SockState
	var errs []error
	geti := func(name string, level, opt int, dst *int) {
		v, err := unix.GetsockoptInt(fd, level, opt)
		if err != nil {
			errs = append(errs, fmt.Errorf("getsockopt %s: %w", name, err))
		}
		*dst = v
	}
	geti("SO_SNDBUF", unix.SOL_SOCKET, unix.SO_SNDBUF, &st.SndBuf)
	geti("SO_RCVBUF", unix.SOL_SOCKET, unix.SO_RCVBUF, &st.RcvBuf)
	geti("TCP_MAXSEG", unix.IPPROTO_TCP, unix.TCP_MAXSEG, &st.MaxSeg)
	var nd int
	geti("TCP_NODELAY", unix.IPPROTO_TCP, unix.TCP_NODELAY, &nd)
	st.NoDelay = nd != 0
	var err error
	if st.Congestion, err = unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err != nil {
		errs = append(errs, fmt.Errorf("getsockopt TCP_CONGESTION: %w", err))
	}
	if st.BindDev, err = unix.GetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE); err != nil {
		errs = append(errs, fmt.Errorf("getsockopt SO_BINDTODEVICE: %w", err))
	}
	if st.MaxPacingRate, err = unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE); err != nil {
		errs = append(errs, fmt.Errorf("getsockopt SO_MAX_PACING_RATE: %w", err))
	}
	if ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
		st.SndMSS = ti.Snd_mss
	} else {
		errs = append(errs, fmt.Errorf("getsockopt TCP_INFO: %w", err))
	}
	return st, errors.Join(errs...)
}

// Check compares a socket's state with the options asked for and returns
// one line per option that did not take effect as asked, e.g. a window
// capped by net.core.rmem_max; nil when every option took. bound says
// whether BindDev applied to this socket (dialing end).
func (o SockOpts) Check(st SockState, bound bool) []string {
	var out []string
	if o.Window > 0 {
		out = append(out, bufferNote("SO_SNDBUF", "wmem_max", o.Window, st.SndBuf)...)
		out = append(out, bufferNote("SO_RCVBUF", "rmem_max", o.Window, st.RcvBuf)...)
	}
	if o.Congestion != "" && st.Congestion != o.Congestion {
		out = append(out, fmt.Sprintf("TCP_CONGESTION: asked %q, socket uses %q", o.Congestion, st.Congestion))
	}
	if o.MSS > 0 && st.SndMSS > uint32(o.MSS) {
		out = append(out, fmt.Sprintf("TCP_MAXSEG: asked %d bytes, segments in use are %d bytes (tcpi_snd_mss)", o.MSS, st.SndMSS))
	}
	if o.NoDelay != nil && st.NoDelay != *o.NoDelay {
		out = append(out, fmt.Sprintf("TCP_NODELAY: asked %t, socket has %t", *o.NoDelay, st.NoDelay))
	}
	if bound && o.BindDev != "" && st.BindDev != o.BindDev {
		out = append(out, fmt.Sprintf("SO_BINDTODEVICE: asked %q, socket is bound to %q", o.BindDev, st.BindDev))
	}
	if want := uint64(o.PacingRate) / 8; o.PacingRate > 0 && st.MaxPacingRate != want {
		out = append(out, fmt.Sprintf("SO_MAX_PACING_RATE: asked %d bytes/s, socket has %d", want, st.MaxPacingRate))
	}
	return out
}

// bufferNote explains a buffer the kernel gave less than asked: got is
// what getsockopt reported, twice the usable size.
func bufferNote(opt, sysctl string, asked, got int) []string {
	if got/2 >= asked {
		return nil
	}
	limit := "net.core." + sysctl
	if b, err := os.ReadFile("/proc/sys/net/core/" + sysctl); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			limit = fmt.Sprintf("%s = %d bytes (%v)", limit, n, units.Size(n))
		}
	}
	return []string{fmt.Sprintf("%s clamped: asked %d bytes (%v), kernel gave %d (%v; it reports %d, twice the usable size); capped by %s",
		opt, asked, units.Size(asked), got/2, units.Size(got/2), got, limit)}
}
