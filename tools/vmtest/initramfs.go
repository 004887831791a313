package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// guestTools are the host programs the tests exec, copied into the guest's
// /usr/bin with their libraries. optionalTools are copied when the host has
// them (iperf3 is only for tools/perfcmp).
var (
	guestTools    = []string{"ip", "tc", "ss", "nstat", "bpftool"}
	optionalTools = []string{"iperf3"}
)

// guestEtc are small files some tools and the Go resolver read.
var guestEtc = map[string]string{
	"etc/passwd":   "root:x:0:0:root:/root:/bin/sh\n",
	"etc/group":    "root:x:0:\n",
	"etc/hosts":    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
	"etc/hostname": "vmtest\n",
}

// stager fills a directory that becomes the initramfs.
type stager struct {
	root    string // staging directory, the guest's /
	busybox string // host path of a busybox binary
}

// guest returns the staging path of guest path p.
func (s stager) guest(p string) string { return filepath.Join(s.root, filepath.FromSlash(p)) }

// copyFile copies the host file src (symlinks followed) to guest path dst,
// keeping its permission bits.
func (s stager) copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("stage %s: %w", src, err)
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return fmt.Errorf("stage %s: %w", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.guest(dst)), 0o755); err != nil {
		return fmt.Errorf("stage %s: %w", src, err)
	}
	out, err := os.OpenFile(s.guest(dst), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return fmt.Errorf("stage %s: %w", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("stage %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("stage %s: %w", src, err)
	}
	return nil
}

// copyExecutable copies the host executable src to guest path dst with the
// interpreter and shared libraries it needs, at their host paths.
func (s stager) copyExecutable(src, dst string) error {
	deps, err := elfDeps(src)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if _, err := os.Stat(s.guest(d)); err == nil {
			continue
		}
		if err := s.copyFile(d, d); err != nil {
			return err
		}
	}
	return s.copyFile(src, dst)
}

// copyTree copies the host directory src to guest directory dst: regular
// files, directories and symlinks (as symlinks).
func (s stager) copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(s.guest(to), 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, s.guest(to))
		case d.Type().IsRegular():
			return s.copyFile(p, to)
		}
		return nil // sockets, fifos, devices: not test data
	})
}

// stageBase writes what every guest has: directories, busybox and its
// applets, /sbin/modprobe, the host tools, the kernel modules, /etc.
func stageBase(ctx context.Context, log *slog.Logger, s stager, tree Tree) ([]string, error) {
	for _, d := range []string{"proc", "sys", "dev", "tmp", "run", "root", "etc", "var", "bin", "sbin", "usr/bin", "usr/sbin"} {
		if err := os.MkdirAll(s.guest(d), 0o755); err != nil {
			return nil, fmt.Errorf("stage: %w", err)
		}
	}
	if err := os.Symlink("../run", s.guest("var/run")); err != nil {
		return nil, fmt.Errorf("stage: %w", err)
	}
	if err := stageBusybox(ctx, s); err != nil {
		return nil, err
	}
	if err := stageTools(log, s); err != nil {
		return nil, err
	}
	for p, content := range guestEtc {
		if err := writeFile(s.guest(p), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("stage %s: %w", p, err)
		}
	}
	return stageModules(ctx, s.busybox, tree, s.root, guestModules)
}

// stageBusybox copies busybox to /bin and links every applet it has into
// /bin, and modprobe also into /sbin (the kernel's autoloader runs
// /sbin/modprobe).
func stageBusybox(ctx context.Context, s stager) error {
	if err := s.copyExecutable(s.busybox, "/bin/busybox"); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, s.busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		if err := os.Symlink("busybox", s.guest("bin/"+applet)); err != nil {
			return fmt.Errorf("stage busybox %s: %w", applet, err)
		}
	}
	if err := os.Symlink("/bin/busybox", s.guest("sbin/modprobe")); err != nil {
		return fmt.Errorf("stage /sbin/modprobe: %w", err)
	}
	return nil
}

// stageTools copies guestTools (required) and optionalTools (when present)
// from the host's PATH to the guest's /usr/bin, and tc's data files.
func stageTools(log *slog.Logger, s stager) error {
	for _, name := range append(append([]string(nil), guestTools...), optionalTools...) {
		p, err := lookHostTool(name)
		if err != nil {
			if slices.Contains(optionalTools, name) {
				log.Warn("host tool not found, guest will not have it", "tool", name)
				continue
			}
			return fmt.Errorf("host tool %s (the tests run it in the guest; iproute2 provides ip, tc, ss, nstat; bpftool is Debian's bpftool package): %w", name, err)
		}
		if err := s.copyExecutable(p, "/usr/bin/"+name); err != nil {
			return err
		}
	}
	if st, err := os.Stat("/usr/lib/tc"); err == nil && st.IsDir() {
		return s.copyTree("/usr/lib/tc", "/usr/lib/tc")
	}
	return nil
}

// lookHostTool finds name in PATH or the sbin directories a non-root PATH
// may lack.
func lookHostTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// writeCpio writes the staging directory as a newc cpio archive (the
// format the kernel unpacks an initramfs from) to out, with busybox cpio,
// parents listed before their contents.
func writeCpio(ctx context.Context, busybox, root, out string) error {
	var names bytes.Buffer
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			names.WriteString(rel + "\n")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list initramfs: %w", err)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, busybox, "cpio", "-o", "-H", "newc")
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = root, &names, f, &stderr
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("busybox cpio: %w: %s", err, stderr.Bytes())
	}
	return nil
}
