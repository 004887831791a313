package sockstate_test

import (
	"testing"

	"github.com/netprof/netprof/internal/leakcheck"
)

// TestMain fails the package if a test leaks file descriptors or goroutines
// (the Reader's goroutine must end with Close).
func TestMain(m *testing.M) { leakcheck.Main(m) }
