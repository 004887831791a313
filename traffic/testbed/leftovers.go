package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// MarkerDir holds one file per live bed, named by its prefix and holding
// the creating process's PID: what marks a bed's namespaces as netprof's
// own. Close removes it; a process killed before Close leaves it behind,
// and CleanupLeftovers recognises the bed by it.
var MarkerDir = "/run/netprof/testbed"

// bedSuffixes are the namespace names a bed's prefix gets.
var bedSuffixes = []string{"-a", "-b", "-r"}

// writeMarker records that this process is creating the bed prefix.
func writeMarker(prefix string) (string, error) {
	if err := os.MkdirAll(MarkerDir, 0o755); err != nil {
		return "", fmt.Errorf("bed marker: %w", err)
	}
	p := filepath.Join(MarkerDir, prefix)
	if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("bed marker: %w", err)
	}
	return p, nil
}

// CleanupLeftovers removes the test beds a killed netprof left behind:
// for each bed marker whose creating process is gone and whose namespaces
// (prefix-a, -b, -r) no process uses (no thread inside, no descriptor
// held: a live bed's creator keeps them open), it deletes those namespaces — with them their veth pairs, qdiscs,
// TUN devices and sysctls, which all live inside — and the marker. Beds
// still in use, and namespaces without a marker (another tool's, or a
// stranger's with a similar name), are never touched. It returns the
// namespaces removed; errors for single beds are joined, the others are
// still removed.
func CleanupLeftovers() ([]string, error) {
	entries, err := os.ReadDir(MarkerDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("leftover beds: %w", err)
	}
	inUse := netnsInUse()
	var removed []string
	var errs []error
	for _, e := range entries {
		prefix := e.Name()
		if e.IsDir() || prefixRE.FindString(prefix) != prefix || len(prefix) > MaxPrefixLen {
			continue
		}
		if pidAlive(filepath.Join(MarkerDir, prefix)) {
			continue // its creator runs (or is setting it up): not a leftover
		}
		var names []string
		busy := false
		for _, s := range bedSuffixes {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(NetnsDir, prefix+s), &st); err != nil {
				continue
			}
			busy = busy || inUse[st.Ino]
			names = append(names, prefix+s)
		}
		if busy {
			continue
		}
		var bedErr error
		for _, n := range names {
			if err := deleteNamed(n); err != nil {
				bedErr = errors.Join(bedErr, err)
				continue
			}
			removed = append(removed, n)
		}
		if bedErr == nil {
			bedErr = os.Remove(filepath.Join(MarkerDir, prefix))
		}
		if bedErr != nil {
			errs = append(errs, fmt.Errorf("leftover bed %s: %w", prefix, bedErr))
		}
	}
	return removed, errors.Join(errs...)
}

// pidAlive reports whether the process a marker names still exists (a
// marker it cannot read or parse counts as alive: left alone).
func pidAlive(marker string) bool {
	b, err := os.ReadFile(marker)
	if err != nil {
		return true
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return true
	}
	err = unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
