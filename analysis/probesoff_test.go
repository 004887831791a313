package analysis

import (
	"testing"

	"github.com/netprof/netprof/trace"
)

func TestProbesOff(t *testing.T) {
	r := &Report{}
	if got := r.probesOff("no flows rows", "np_tcp_"); got != "no flows rows: probes off" {
		t.Errorf("empty manifest: %q", got)
	}
	r.Manifest.Probes = []trace.Probe{
		{Name: "np_nd_rx", Hook: "net:netif_receive_skb", Reason: "not selected (--probes)"},
		{Name: "np_tcp_probe", Hook: "tcp:tcp_probe", Attached: true},
		{Name: "np_tcp_retrans", Hook: "tcp:tcp_retransmit_skb", Reason: "tracepoint missing"},
	}
	for _, tc := range []struct {
		progs []string
		want  string
	}{
		{[]string{"np_nd_rx", "np_nd_tx"}, "bpf columns null: np_nd_rx not attached: not selected (--probes)"},
		{[]string{"np_tcp_"}, "bpf columns null"}, // one attached: cause unknown
		{[]string{"np_tcp_retrans"}, "bpf columns null: np_tcp_retrans not attached: tracepoint missing"},
		{[]string{"np_si_"}, "bpf columns null: probes off"},
	} {
		if got := r.probesOff("bpf columns null", tc.progs...); got != tc.want {
			t.Errorf("probesOff(%q) = %q, want %q", tc.progs, got, tc.want)
		}
	}
}

func TestIsPeer(t *testing.T) {
	for addr, want := range map[string]bool{
		"198.18.0.2": true, "2001:2::2": true, "ff02::16": false, "ff02::2": false, "::": false,
		"224.0.0.251": false, "0.0.0.0": false, "not-an-ip": true,
	} {
		if got := isPeer(addr); got != want {
			t.Errorf("isPeer(%q) = %v, want %v", addr, got, want)
		}
	}
}
