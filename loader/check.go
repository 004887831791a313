package loader

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// ErrPrivilege is wrapped by Check when the process lacks what BPF tracing
// needs (CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN).
var ErrPrivilege = errors.New("insufficient privilege")

// Linux capability numbers (include/uapi/linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// Check verifies what loading tp_btf probes needs before anything is
// loaded: the effective capabilities (CAP_BPF and CAP_PERFMON, Linux >= 5.8,
// or CAP_SYS_ADMIN) and kernel BTF at /sys/kernel/btf/vmlinux. It returns an
// error wrapping ErrPrivilege or ebpf.ErrNotSupported that names what is
// missing. It also lifts RLIMIT_MEMLOCK where the kernel still charges BPF
// memory to it (before 5.11); failure to do so is only logged.
func Check(log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	caps, err := effectiveCaps()
	if err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	if !has(capSysAdmin) && !(has(capBPF) && has(capPerfmon)) {
		return fmt.Errorf("BPF tracing needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN): %w", ErrPrivilege)
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("kernel BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF) missing: %w", ebpf.ErrNotSupported)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		log.Debug("memlock rlimit not raised", "err", err)
	}
	return nil
}

// effectiveCaps parses CapEff from /proc/self/status.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff line in /proc/self/status")
}

// EnableStats turns on the kernel's BPF run-time statistics (the same as
// sysctl kernel.bpf_stats_enabled=1, Linux >= 5.8) until the returned
// closer is closed. Without it, run counts and run times read 0.
func EnableStats() (io.Closer, error) {
	c, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		return nil, fmt.Errorf("enable bpf stats: %w", err)
	}
	return c, nil
}
