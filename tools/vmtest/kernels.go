package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Kernel is one kernel of the test matrix: a Debian linux-image package
// pinned to an exact version. The package is fetched with apt-get download
// and unpacked with dpkg-deb -x into the cache; it is never installed.
type Kernel struct {
	Name    string // matrix name, the -kernel flag value
	Package string // Debian binary package
	Version string // exact Debian version of Package
	// HotplugPossible: the kernel counts QEMU's hot-pluggable CPUs
	// (-smp N,maxcpus=M) as possible. 6.12 does not with QEMU 7.2 (possible
	// 0-1 with -smp 2,maxcpus=240, the MADT lists all 240; possible_cpus=240
	// only caps the count there: "Allowing 2 present CPUs plus 0 hotplug
	// CPUs"), so its possible CPUs are made present and held offline with
	// maxcpus= instead (Machine.AllPresent; with 240 the boot takes ~60 s
	// instead of ~7 s).
	HotplugPossible bool
}

// matrix is the one place the kernel versions are pinned. When Debian drops a
// version from the archive, fetching fails and names this table.
var matrix = []Kernel{
	{Name: "6.1", Package: "linux-image-6.1.0-50-cloud-amd64", Version: "6.1.176-1", HotplugPossible: true},
	{Name: "6.12", Package: "linux-image-6.12.117+deb12-cloud-amd64", Version: "6.12.117-1~deb12u1"},
}

// Release is the kernel's uname -r: the package name without "linux-image-".
func (k Kernel) Release() string { return strings.TrimPrefix(k.Package, "linux-image-") }

// debName is the file name apt-get download gives the package (an epoch's
// colon is written %3a).
func (k Kernel) debName() string {
	return k.Package + "_" + strings.ReplaceAll(k.Version, ":", "%3a") + "_amd64.deb"
}

// lookupKernel returns the matrix entry named name.
func lookupKernel(name string) (Kernel, error) {
	var names []string
	for _, k := range matrix {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return Kernel{}, fmt.Errorf("unknown kernel %q (the matrix has %s)", name, strings.Join(names, ", "))
}

// Tree is an unpacked kernel package.
type Tree struct {
	Kernel
	Root string // where dpkg-deb -x unpacked the package
}

// Vmlinuz returns the path of the kernel image.
func (t Tree) Vmlinuz() string { return filepath.Join(t.Root, "boot", "vmlinuz-"+t.Release()) }

// ModulesDir returns lib/modules/RELEASE inside the tree.
func (t Tree) ModulesDir() string { return filepath.Join(t.Root, "lib", "modules", t.Release()) }

// fetchKernel returns k unpacked under cacheDir, downloading and unpacking
// it first if an earlier run has not. Downloads and unpacks land in
// temporary directories and are renamed when complete, so an interrupted
// run leaves nothing that a later one would trust.
func fetchKernel(ctx context.Context, log *slog.Logger, cacheDir string, k Kernel) (Tree, error) {
	tree := Tree{Kernel: k, Root: filepath.Join(cacheDir, k.Package+"_"+k.Version)}
	if err := ensureCacheDir(cacheDir); err != nil {
		return Tree{}, err
	}
	if _, err := os.Stat(tree.Vmlinuz()); err == nil {
		return tree, nil
	}
	deb, err := downloadDeb(ctx, log, cacheDir, k)
	if err != nil {
		return Tree{}, err
	}
	tmp, err := os.MkdirTemp(cacheDir, "unpack-")
	if err != nil {
		return Tree{}, fmt.Errorf("unpack dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	log.Info("unpacking kernel package", "deb", deb)
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return Tree{}, fmt.Errorf("dpkg-deb -x %s: %w: %s", deb, err, out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "boot", "vmlinuz-"+k.Release())); err != nil {
		return Tree{}, fmt.Errorf("package %s has no kernel image: %w", k.Package, err)
	}
	// A concurrent run (go test -exec runs packages in parallel) may have
	// unpacked it first: then its tree is as good as this one.
	if err := os.Rename(tmp, tree.Root); err != nil {
		if _, serr := os.Stat(tree.Vmlinuz()); serr != nil {
			return Tree{}, fmt.Errorf("unpack %s: %w", k.Package, err)
		}
	}
	return tree, nil
}

// errNotInArchive means apt does not offer the pinned version.
var errNotInArchive = errors.New("pinned kernel version not available from apt")

// downloadDeb returns the path of k's .deb in cacheDir, running
// apt-get download PACKAGE=VERSION there when it is not already present.
func downloadDeb(ctx context.Context, log *slog.Logger, cacheDir string, k Kernel) (string, error) {
	deb := filepath.Join(cacheDir, k.debName())
	if _, err := os.Stat(deb); err == nil {
		return deb, nil
	}
	tmp, err := os.MkdirTemp(cacheDir, "download-")
	if err != nil {
		return "", fmt.Errorf("download dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	spec := k.Package + "=" + k.Version
	log.Info("downloading kernel package", "package", spec)
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", spec)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "Unable to locate package") || strings.Contains(string(out), "was not found") {
			return "", fmt.Errorf("%w: %s (kernel %s): run apt-get update; if it is still missing, "+
				"Debian has dropped it: pin a current version in tools/vmtest/kernels.go (apt-cache policy 'linux-image-*-cloud-amd64'): %s",
				errNotInArchive, spec, k.Name, strings.TrimSpace(string(out)))
		}
		return "", fmt.Errorf("apt-get download %s: %w: %s", spec, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, k.debName()), deb); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w", spec, err)
	}
	return deb, nil
}

// ensureCacheDir creates dir with a .gitignore that ignores everything in
// it, so a cache inside the work tree never shows up in git status.
func ensureCacheDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cache dir: %w", err)
	}
	ignore := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte("# tools/vmtest cache: kernels and initramfs builds\n*\n"), 0o644); err != nil {
			return fmt.Errorf("cache dir: %w", err)
		}
	}
	return nil
}

// defaultCacheDir returns .cache/vmtest in the module root above the working
// directory (go test -exec runs in a package directory), or the user cache
// directory outside a module.
func defaultCacheDir() string {
	if dir := os.Getenv("NETPROF_VMTEST_CACHE"); dir != "" {
		return dir
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.Join(dir, ".cache", "vmtest")
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "netprof-vmtest")
	}
	return filepath.Join(os.TempDir(), "netprof-vmtest")
}
