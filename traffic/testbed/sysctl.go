package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// sysctlKeyRE accepts dotted keys under net. (the per-namespace sysctls).
var sysctlKeyRE = regexp.MustCompile(`^net(\.[A-Za-z0-9_-]+)+$`)

func validateSysctls(m map[string]string) error {
	for k, v := range m {
		if !sysctlKeyRE.MatchString(k) {
			return fmt.Errorf("sysctl %q: want a dotted key under net. (per network namespace)", k)
		}
		if strings.ContainsAny(v, "\n") {
			return fmt.Errorf("sysctl %s: value %q has a newline", k, v)
		}
	}
	return nil
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// Sysctl returns the value of a sysctl under net. as seen inside the
// host's namespace (/proc/sys/net/... read from a thread in it), with
// surrounding whitespace trimmed and tabs as the kernel prints them. The
// error wraps fs.ErrNotExist for an unknown key and ErrClosed after Close.
func (h *Host) Sysctl(key string) (string, error) {
	if !sysctlKeyRE.MatchString(key) {
		return "", fmt.Errorf("sysctl %q: want a dotted key under net", key)
	}
	var v []byte
	err := h.Do(func() error {
		var err error
		v, err = os.ReadFile(sysctlPath(key))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("%s: sysctl %s: %w", h.Name, key, err)
	}
	return strings.TrimSpace(string(v)), nil
}

// SetSysctl writes a sysctl under net. inside the host's namespace only
// (net.* sysctls such as net.ipv4.tcp_rmem, tcp_wmem and ip_forward are
// per network namespace; the caller's namespace is untouched). The error
// wraps fs.ErrNotExist for an unknown key and ErrClosed after Close.
func (h *Host) SetSysctl(key, value string) error {
	if err := validateSysctls(map[string]string{key: value}); err != nil {
		return err
	}
	err := h.Do(func() error {
		return os.WriteFile(sysctlPath(key), []byte(value+"\n"), 0o644)
	})
	if err != nil {
		return fmt.Errorf("%s: set sysctl %s=%q: %w", h.Name, key, value, err)
	}
	return nil
}

// setSysctls writes m (in key order) in every host's namespace.
func setSysctls(m map[string]string, hosts ...*Host) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, h := range hosts {
		for _, k := range keys {
			if err := h.SetSysctl(k, m[k]); err != nil {
				return err
			}
		}
	}
	return nil
}
