package probeset

import (
	"testing"

	"github.com/netprof/netprof/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
