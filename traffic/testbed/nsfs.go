package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named network namespaces are bind-mounted, as by
// `ip netns add`.
const NetnsDir = "/run/netns"

// ensureNetnsDir makes NetnsDir a shared mount point, as iproute2's
// `ip netns add` does. Without this, a later `ip netns add` (by anyone)
// bind-mounts the directory over itself and our existing mounts end up
// hidden underneath, where deleting them by name no longer works.
func ensureNetnsDir() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", NetnsDir, err)
	}
	for bound := false; ; bound = true {
		err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || bound {
			return fmt.Errorf("make %s a shared mount: %w", NetnsDir, err)
		}
		// EINVAL: not a mount point yet; bind it onto itself and retry.
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s: %w", NetnsDir, err)
		}
	}
}

// createNamed creates the named network namespace name (like
// `ip netns add`) and returns an open handle to it. The caller's thread is
// not switched. On error nothing is left behind, and an existing namespace
// of that name is reported with an error wrapping fs.ErrExist and left alone.
func createNamed(name string) (netns.NsHandle, error) {
	path := filepath.Join(NetnsDir, name)
	if _, err := os.Lstat(path); err == nil {
		return netns.None(), fmt.Errorf("create netns %s: %w", name, fs.ErrExist)
	}
	ns := netns.None()
	err := onThread(func() error {
		var err error
		ns, err = netns.NewNamed(name)
		return err
	})
	if err == nil {
		return ns, nil
	}
	if ns.IsOpen() {
		// Created, but the thread could not be restored: undo.
		_ = ns.Close()
		_ = netns.DeleteNamed(name)
	} else if !errors.Is(err, fs.ErrExist) {
		// netns.NewNamed leaves its placeholder file behind when the
		// bind mount fails; the path did not exist a moment ago.
		_ = os.Remove(path)
	}
	return netns.None(), fmt.Errorf("create netns %s: %w", name, err)
}

// deleteNamed removes the named namespace's bind mount and file. A missing
// namespace is not an error.
func deleteNamed(name string) error {
	err := netns.DeleteNamed(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point (half-created): remove the file alone.
		if rerr := os.Remove(filepath.Join(NetnsDir, name)); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
			return nil
		}
	}
	return fmt.Errorf("delete netns %s: %w", name, err)
}

// nsInode returns the nsfs inode of the namespace behind ns: the value BPF
// programs see as net->ns.inum.
func nsInode(ns netns.NsHandle) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(ns), &st); err != nil {
		return 0, fmt.Errorf("fstat netns: %w", err)
	}
	return st.Ino, nil
}

// Cleanup deletes leftover test-bed namespaces from stale runs: every entry
// of NetnsDir whose name starts with prefix and ends in "-a" or "-b" (the
// names New gives) and that no process uses, meaning no thread is inside it
// and no process holds a file descriptor to it. Live beds keep their
// namespaces open, so Cleanup never removes a bed that is still running, in
// this process or another. It returns the names removed. prefix must not be
// empty. Errors for individual namespaces are joined; the others are still
// removed.
func Cleanup(prefix string) ([]string, error) {
	if prefix == "" {
		return nil, errors.New("cleanup: empty prefix")
	}
	entries, err := os.ReadDir(NetnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cleanup: %w", err)
	}
	var candidates []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, prefix) && (strings.HasSuffix(n, "-a") || strings.HasSuffix(n, "-b")) {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	inUse := netnsInUse()
	var removed []string
	var errs []error
	for _, n := range candidates {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(NetnsDir, n), &st); err != nil {
			errs = append(errs, fmt.Errorf("cleanup %s: %w", n, err))
			continue
		}
		if inUse[st.Ino] {
			continue
		}
		if err := deleteNamed(n); err != nil {
			errs = append(errs, fmt.Errorf("cleanup: %w", err))
			continue
		}
		removed = append(removed, n)
	}
	return removed, errors.Join(errs...)
}

// netnsInUse returns the inodes of network namespaces some process is in
// (any thread) or holds a descriptor to. Unreadable entries are skipped.
func netnsInUse() map[uint64]bool {
	used := map[uint64]bool{}
	add := func(link string) {
		target, err := os.Readlink(link)
		if err == nil && strings.HasPrefix(target, NetnsDir+"/") {
			// a descriptor opened through the bind mount (/run/netns/NAME)
			// reads as that path: the inode is the namespace's
			var st unix.Stat_t
			if unix.Stat(link, &st) == nil {
				used[st.Ino] = true
			}
			return
		}
		if err != nil || !strings.HasPrefix(target, "net:[") {
			return
		}
		if ino, err := strconv.ParseUint(strings.TrimSuffix(target[len("net:["):], "]"), 10, 64); err == nil {
			used[ino] = true
		}
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		base := filepath.Join("/proc", p.Name())
		tasks, _ := os.ReadDir(filepath.Join(base, "task"))
		for _, t := range tasks {
			add(filepath.Join(base, "task", t.Name(), "ns", "net"))
		}
		fds, _ := os.ReadDir(filepath.Join(base, "fd"))
		for _, fd := range fds {
			add(filepath.Join(base, "fd", fd.Name()))
		}
	}
	return used
}
