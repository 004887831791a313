package testbedtest

import (
	"testing"

	"github.com/netprof/netprof/internal/linkstats"
	"github.com/netprof/netprof/traffic/testbed"
)

// LinkStats reads h's bed interface's netlink stats64 counters from
// inside its namespace (the ground truth kernel tests compare with).
func LinkStats(t testing.TB, h *testbed.Host) linkstats.Stats {
	t.Helper()
	nh, err := h.Handle()
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	st, err := linkstats.Read(nh, h.Ifindex())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
