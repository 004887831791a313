// Package kerneltest holds helpers for tests that need root and a real
// kernel (BPF, namespaces). When such a test cannot run it skips with the
// reason, unless NETPROF_REQUIRE_KERNEL_TESTS=1 (set by .ci/run), in which
// case the skip becomes a failure so CI never silently skips kernel tests.
package kerneltest

import (
	"os"
	"testing"
)

// EnvRequire is the environment variable that turns skips into failures.
const EnvRequire = "NETPROF_REQUIRE_KERNEL_TESTS"

// Skip skips t with reason, or fails it when kernel tests are required.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("kernel test cannot run (%s) but %s=1", reason, EnvRequire)
	}
	t.Skip(reason)
}

// RequireRoot skips (or fails, see Skip) unless running as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root")
	}
}
