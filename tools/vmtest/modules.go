package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// guestModules are the modules the guest loads at boot: the link types,
// qdiscs, classifiers and actions netprof's tests create, the netlink
// families vishvananda/netlink's default handle opens, and sock_diag for ss
// (without it ss falls back to /proc and shows no TCP_INFO). Dependencies are
// added from each module's modinfo. Modules built into a kernel are skipped
// for it. The guest's /sbin/modprobe can autoload any of them again.
var guestModules = []string{
	"veth", "tun", "macvlan", "bridge", "ifb", "dummy",
	"sch_htb", "sch_netem", "sch_tbf", "sch_prio", "sch_ingress", "sch_fq",
	"cls_u32", "act_mirred",
	"xfrm_user", "nfnetlink",
	"inet_diag", "tcp_diag", "udp_diag", "raw_diag", "unix_diag",
	"tcp_bbr",
}

// modName normalises a module name or file name to the kernel's module
// name: no directory, no .ko or .ko.xz, '-' as '_'.
func modName(s string) string {
	s = filepath.Base(s)
	s = strings.TrimSuffix(s, ".xz")
	s = strings.TrimSuffix(s, ".zst")
	s = strings.TrimSuffix(s, ".ko")
	return strings.ReplaceAll(s, "-", "_")
}

// moduleIndex maps module names to paths relative to lib/modules/RELEASE,
// read from modules.order (loadable) and modules.builtin (built in).
type moduleIndex struct {
	loadable map[string]string
	builtin  map[string]bool
}

func readModuleIndex(modDir string) (moduleIndex, error) {
	idx := moduleIndex{loadable: map[string]string{}, builtin: map[string]bool{}}
	order, err := readLines(filepath.Join(modDir, "modules.order"))
	if err != nil {
		return idx, err
	}
	for _, p := range order {
		idx.loadable[modName(p)] = p
	}
	builtin, err := readLines(filepath.Join(modDir, "modules.builtin"))
	if err != nil {
		return idx, err
	}
	for _, p := range builtin {
		idx.builtin[modName(p)] = true
	}
	return idx, nil
}

func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// modinfoDepends returns the depends= entry of an uncompressed module's
// .modinfo section.
func modinfoDepends(ko []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, fmt.Errorf("parse module: %w", err)
	}
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("module has no .modinfo section")
	}
	info, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read .modinfo: %w", err)
	}
	var deps []string
	for _, kv := range bytes.Split(info, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok && len(v) > 0 {
			deps = append(deps, strings.Split(string(v), ",")...)
		}
	}
	return deps, nil
}

// readModule returns the uncompressed contents of the module file path
// (.ko as is; .ko.xz through busybox xz).
func readModule(ctx context.Context, busybox, path string) ([]byte, error) {
	if !strings.HasSuffix(path, ".xz") {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read module: %w", err)
		}
		return data, nil
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, busybox, "xz", "-dc", path)
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("decompress %s: %w: %s", path, err, stderr.Bytes())
	}
	return data, nil
}

// stageModules copies want and their dependencies, uncompressed, from the
// kernel tree into root/lib/modules/RELEASE, with modules.builtin, and runs
// busybox depmod there so the guest's busybox modprobe finds them (and the
// aliases the kernel autoloads by). It returns the names staged, dependencies
// first.
func stageModules(ctx context.Context, busybox string, tree Tree, root string, want []string) ([]string, error) {
	idx, err := readModuleIndex(tree.ModulesDir())
	if err != nil {
		return nil, err
	}
	dst := filepath.Join(root, "lib", "modules", tree.Release())
	var staged []string
	seen := map[string]bool{}
	var add func(name, why string) error
	add = func(name, why string) error {
		name = modName(name)
		if seen[name] || idx.builtin[name] {
			return nil
		}
		seen[name] = true
		rel, ok := idx.loadable[name]
		if !ok {
			return fmt.Errorf("kernel %s has no module %s (%s)", tree.Name, name, why)
		}
		ko, err := readModuleFile(ctx, busybox, filepath.Join(tree.ModulesDir(), rel))
		if err != nil {
			return err
		}
		deps, err := modinfoDepends(ko)
		if err != nil {
			return fmt.Errorf("module %s: %w", name, err)
		}
		for _, d := range deps {
			if err := add(d, "needed by "+name); err != nil {
				return err
			}
		}
		staged = append(staged, name)
		return writeFile(filepath.Join(dst, rel), ko, 0o644)
	}
	for _, name := range want {
		if err := add(name, "wanted"); err != nil {
			return nil, err
		}
	}
	return staged, depmod(ctx, busybox, tree, root)
}

// readModuleFile returns the uncompressed module at path, which the package
// may ship compressed as path.xz (modules.order names the .ko either way).
func readModuleFile(ctx context.Context, busybox, path string) ([]byte, error) {
	for _, p := range []string{path, path + ".xz"} {
		if _, err := os.Stat(p); err == nil {
			return readModule(ctx, busybox, p)
		}
	}
	return nil, fmt.Errorf("module file %s(.xz) missing from the package", path)
}

// depmod copies modules.builtin and writes modules.dep and modules.alias with busybox depmod.
func depmod(ctx context.Context, busybox string, tree Tree, root string) error {
	dst := filepath.Join(root, "lib", "modules", tree.Release())
	data, err := os.ReadFile(filepath.Join(tree.ModulesDir(), "modules.builtin"))
	if err != nil {
		return fmt.Errorf("read modules.builtin: %w", err)
	}
	if err := writeFile(filepath.Join(dst, "modules.builtin"), data, 0o644); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, busybox, "depmod", "-b", root, tree.Release()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("busybox depmod: %w: %s", err, out)
	}
	return nil
}

// writeFile writes data to path, creating its directory.
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("mkdir: %w", err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
