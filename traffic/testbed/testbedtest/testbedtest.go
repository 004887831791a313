// Package testbedtest holds test helpers for code that needs root and
// network namespaces: Require skips (or, in CI, fails) a test that cannot
// run here, and New builds a testbed.Bed that is removed when the test ends.
package testbedtest

import (
	"context"
	"os"
	"testing"

	"github.com/netprof/netprof/traffic/testbed"
)

// RequireEnv is the environment variable that turns Require's skips into
// failures when set to "1" (CI sets it, so kernel tests cannot silently skip).
const RequireEnv = "NETPROF_REQUIRE_KERNEL_TESTS"

// Require skips the test unless testbed.Supported says this process can
// build test beds. With RequireEnv=1 it calls t.Fatal instead of t.Skip.
func Require(t testing.TB) {
	t.Helper()
	err := testbed.Supported()
	if err == nil {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("kernel test cannot run (%s=1): %v", RequireEnv, err)
	}
	t.Skipf("skipping kernel test: %v (set %s=1 to make this a failure)", err, RequireEnv)
}

// New calls Require, then builds a test bed that t.Cleanup closes, even when
// the test fails. It fails the test if New fails.
func New(t testing.TB, opt testbed.Options) *testbed.Bed {
	t.Helper()
	Require(t)
	b, err := testbed.New(context.Background(), opt)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close test bed: %v", err)
		}
	})
	return b
}
