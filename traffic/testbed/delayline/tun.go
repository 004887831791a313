package delayline

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// VnetHdrLen is the virtio-net header length set on every TUN this package
// opens (TUNSETVNETHDRSZ): struct virtio_net_hdr_v1, 12 bytes. Each packet
// read from or written to the TUN starts with it; it carries the GSO type
// and size and the checksum offsets, so a 64 KiB TSO packet crosses the line
// whole and unchecksummed, exactly as the stack handed it over.
const VnetHdrLen = 12

// MaxTUNFrame is the largest read from a TUN opened by OpenTUN: the header
// plus a 64 KiB GSO packet, with room to spare.
const MaxTUNFrame = VnetHdrLen + 1<<16 + 256

// tunOffloads are the offloads the TUN accepts from the stack
// (TUNSETOFFLOAD): checksum offload and TSO for IPv4 and IPv6. The stack
// then hands over GSO packets of up to 64 KiB.
const tunOffloads = unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6

// TUN is a TUN device (layer 3, no packet information header, virtio-net
// header with offloads) opened by OpenTUN. It is a Port. The device exists
// as long as the TUN is open: Close removes it.
type TUN struct {
	*os.File
	name string
}

// Name returns the interface name.
func (t *TUN) Name() string { return t.name }

// OpenTUN creates the TUN interface name (at most 15 bytes) in the network
// namespace of the calling OS thread (run it inside testbed.Host.Do) and
// returns it open, non-blocking, registered with the Go runtime's poller
// (so Close unblocks a pending Read). The interface is created down and
// without addresses. It needs CAP_NET_ADMIN. Errors wrap the ioctl's
// errno: unix.EBUSY when an interface of that name exists, unix.EPERM
// without privilege, fs.ErrNotExist when /dev/net/tun is missing.
func OpenTUN(name string) (*TUN, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = unix.Close(fd)
		}
	}()
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return nil, fmt.Errorf("tun %q: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return nil, fmt.Errorf("tun %s: TUNSETIFF: %w", name, err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TUNSETVNETHDRSZ, VnetHdrLen); err != nil {
		return nil, fmt.Errorf("tun %s: TUNSETVNETHDRSZ: %w", name, err)
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tunOffloads); err != nil {
		return nil, fmt.Errorf("tun %s: TUNSETOFFLOAD: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), "tun:"+ifr.Name())
	if f == nil {
		return nil, fmt.Errorf("tun %s: invalid descriptor", name)
	}
	ok = true
	return &TUN{File: f, name: ifr.Name()}, nil
}
