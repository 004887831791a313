package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/netprof/netprof/analysis/analysistest"
)

// Only traffic that crossed an interface towards another host is egress:
// a local test bed run (veth between two namespaces, no --peer), a run on
// loopback and a blob run against an endpoint on this host are not priced
// and say why; a run to a peer, watch on a NIC and blob to a remote
// endpoint are, at sent bytes / 10^9 × price, the sent bytes summed from
// the scenario's own rows.
func TestFleetEgressOnlyOffHost(t *testing.T) {
	remote := []any{map[string]any{"stream": 0.0, "host": "acct.blob.core.windows.net:443"}}
	local := func(hosts ...string) []any {
		var out []any
		for _, h := range hosts {
			out = append(out, map[string]any{"host": h})
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		s           analysistest.Scenario
		wantNA      string // "" = priced
		noSentBytes bool
	}{
		{"local test bed", analysistest.Scenario{}, NoEgressTestBed, false},
		{"local test bed, delay line", analysistest.Scenario{SenderIface: "npab12-a", SenderDriver: "tuntap",
			Config: map[string]any{"rtt_ns": 2e7}}, NoEgressTestBed, false},
		{"bench --peer", analysistest.Scenario{SenderIface: "eth0", SenderDriver: "mlx5_core",
			Config: map[string]any{"peer": "10.0.0.5:5000"}}, "", false},
		{"bench --peer on this host", analysistest.Scenario{SenderIface: "lo", SenderDriver: "loopback",
			Config: map[string]any{"peer": "127.0.0.1:5000"}}, NoEgressLoopback, false},
		{"watch on a NIC", analysistest.Scenario{SenderIface: "eth0", SenderDriver: "hv_netvsc",
			Config: map[string]any{"command": "watch"}}, "", false},
		{"watch on lo", analysistest.Scenario{SenderIface: "lo", SenderDriver: "device",
			Config: map[string]any{"command": "watch"}}, NoEgressLoopback, false},
		{"blob to a remote endpoint", analysistest.Scenario{SenderIface: "eth0", SenderDriver: "mana",
			Config: map[string]any{"command": "blob push", "targets": remote}}, "", false},
		{"blob to an emulator on this host", analysistest.Scenario{SenderIface: "eth0", SenderDriver: "mana",
			Config: map[string]any{"command": "blob push", "targets": local("127.0.0.1:10000", "[::1]:10000", "localhost:10000")}}, NoEgressBlob, false},
		{"blob to this host and a remote one", analysistest.Scenario{SenderIface: "eth0", SenderDriver: "mana",
			Config: map[string]any{"command": "blob pull", "targets": append(local("127.0.0.1:10000"), remote...)}}, "", false},
	} {
		r := scen(t, tc.s, Options{})
		var sent uint64
		ifaces, _, _, _ := tc.s.Tables()
		for _, row := range ifaces {
			if row.Netns == analysistest.SenderNetns {
				sent += row.TxBytes
			}
		}
		price := &EgressPrice{PerGB: 0.087, Currency: "USD"}
		row := FleetRowOf(tc.name, r, price)
		if row.SentBytes == nil || *row.SentBytes != sent {
			t.Errorf("%s: sent bytes %v, want %d", tc.name, row.SentBytes, sent)
			continue
		}
		if tc.wantNA != "" {
			if row.EgressCost != nil || row.EgressNA != tc.wantNA {
				t.Errorf("%s: egress cost %v (n/a %q), want n/a %q", tc.name, row.EgressCost, row.EgressNA, tc.wantNA)
			}
			continue
		}
		want := float64(sent) / 1e9 * 0.087
		if row.EgressCost == nil || math.Abs(*row.EgressCost-want) > 1e-12 || row.EgressNA != "" {
			t.Errorf("%s: egress cost %v (n/a %q), want %.6f USD", tc.name, row.EgressCost, row.EgressNA, want)
		}
		// No price: no cost and no reason.
		if row := FleetRowOf(tc.name, r, nil); row.EgressCost != nil || row.EgressNA != "" {
			t.Errorf("%s without a price: cost %v n/a %q", tc.name, row.EgressCost, row.EgressNA)
		}
	}
}

// The totals price only the runs whose traffic left the host and count the
// others; the text table prints n/a with the reason in the cost column.
func TestFleetTotalsEgress(t *testing.T) {
	price := &EgressPrice{PerGB: 0.05, Currency: "USD"}
	bed := FleetRowOf("bed", scen(t, analysistest.Scenario{}, Options{}), price)
	peer := FleetRowOf("peer", scen(t, analysistest.Scenario{SenderIface: "eth0", SenderDriver: "mlx5_core",
		Config: map[string]any{"peer": "10.0.0.5"}}, Options{}), price)
	f := NewFleet([]FleetRow{bed, peer}, price, Decimal)
	tot := f.Totals()
	if tot.SentBytes != *bed.SentBytes+*peer.SentBytes {
		t.Errorf("total sent %d, want every run's %d", tot.SentBytes, *bed.SentBytes+*peer.SentBytes)
	}
	if tot.EgressBytes == nil || *tot.EgressBytes != *peer.SentBytes || tot.EgressCost == nil ||
		math.Abs(*tot.EgressCost-float64(*peer.SentBytes)/1e9*0.05) > 1e-12 || *tot.EgressRuns != 1 || *tot.NotEgressRuns != 1 {
		t.Errorf("totals %+v: want egress = the peer run's %d B only, 1 priced, 1 not", tot, *peer.SentBytes)
	}
	var b strings.Builder
	if err := f.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{"n/a (" + NoEgressTestBed + ")", "by the 1 run whose traffic left this host", "1 run not priced"} {
		if !strings.Contains(out, w) {
			t.Errorf("text lacks %q:\n%s", w, out)
		}
	}
}
