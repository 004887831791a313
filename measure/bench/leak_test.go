package bench

import (
	"testing"

	"github.com/netprof/netprof/internal/leakcheck"
)

// TestMain fails the run if the tests leak goroutines or file descriptors.
func TestMain(m *testing.M) { leakcheck.Main(m) }
