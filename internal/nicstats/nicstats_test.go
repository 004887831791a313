package nicstats

import (
	"fmt"
	"testing"

	"github.com/netprof/netprof/trace"
)

func TestParseName(t *testing.T) {
	for _, c := range []struct {
		name, dir string
		queue     int32 // -1: none
	}{
		{"rx_queue_3_packets", "rx", 3}, // virtio_net, veth, hv_netvsc
		{"tx_queue_12_bytes", "tx", 12}, // virtio_net
		{"rx0_packets", "rx", 0},        // mlx5
		{"tx17_dropped", "tx", 17},      // mlx5
		{"rx_5_packets", "rx", 5},       // mana
		{"queue_2_tx_cnt", "tx", 2},     // ena
		{"rx_dropped", "rx", -1},        // device-wide
		{"rx_no_wqe", "rx", -1},
		{"vf_rx_bytes", "", -1}, // hv_netvsc's VF counters
		{"peer_ifindex", "", -1},
	} {
		d, q := ParseName(c.name)
		gotDir, gotQ := "", int32(-1)
		if d != nil {
			gotDir = *d
		}
		if q != nil {
			gotQ = *q
		}
		if gotDir != c.dir || gotQ != c.queue {
			t.Errorf("%s: direction %q queue %d, want %q %d", c.name, gotDir, gotQ, c.dir, c.queue)
		}
	}
}

// Rows are the change since the last read, in name order; a statistic
// that went down (reset), one that is not a count and one that appeared
// since the last read have no row; a link without statistics has none.
func TestSamplerDeltas(t *testing.T) {
	reads := []map[string]uint64{
		{"rx_queue_0_packets": 10, "rx_queue_0_drops": 5, "peer_ifindex": 7, "tx_queue_0_xdp_xmit": 100},
		{"rx_queue_0_packets": 25, "rx_queue_0_drops": 5, "peer_ifindex": 9, "tx_queue_0_xdp_xmit": 3, "new_stat": 1},
	}
	n := 0
	s := &Sampler{links: []Link{{Netns: 1, Ifname: "veth0"}, {Netns: 1, Ifname: "lo"}}}
	s.read = []statsFunc{
		func(string) (map[string]uint64, error) { n++; return reads[min(n-1, 1)], nil },
		func(string) (map[string]uint64, error) { return nil, fmt.Errorf("operation not supported") },
	}
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	var iv trace.Interval
	if err := s.Sample(&iv, 1e9); err != nil {
		t.Fatal(err)
	}
	if len(s.Skipped) != 1 || s.Skipped[0] != "lo" {
		t.Errorf("skipped %v, want lo", s.Skipped)
	}
	want := []struct {
		stat  string
		value uint64
	}{{"rx_queue_0_drops", 0}, {"rx_queue_0_packets", 15}}
	if len(iv.NICs) != len(want) {
		t.Fatalf("rows %+v, want %v", iv.NICs, want)
	}
	for i, w := range want {
		r := iv.NICs[i]
		if r.Stat != w.stat || r.Value != w.value || r.Ifname != "veth0" || r.Netns != 1 || r.IntervalNs != 1e9 ||
			r.Direction == nil || *r.Direction != "rx" || r.Queue == nil || *r.Queue != 0 {
			t.Errorf("row %d: %+v, want %s = %d on queue rx 0", i, r, w.stat, w.value)
		}
	}
}

// A link whose read fails after the baseline (removed or renamed) gives
// the error once and no rows from then on; the other links go on.
func TestSamplerLinkGone(t *testing.T) {
	gone := false
	s := &Sampler{links: []Link{{Netns: 1, Ifname: "eth0"}, {Netns: 1, Ifname: "eth1"}}}
	s.read = []statsFunc{
		func(string) (map[string]uint64, error) {
			if gone {
				return nil, fmt.Errorf("no such device")
			}
			return map[string]uint64{"rx_dropped": 1}, nil
		},
		func(string) (map[string]uint64, error) { return map[string]uint64{"rx_dropped": 2}, nil },
	}
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	gone = true
	for i, wantErr := range []bool{true, false} {
		var iv trace.Interval
		err := s.Sample(&iv, 1e9)
		if (err != nil) != wantErr || len(iv.NICs) != 1 || iv.NICs[0].Ifname != "eth1" {
			t.Errorf("read %d after eth0 went: err %v, rows %+v; want the error only the first time, eth1's row each time", i, err, iv.NICs)
		}
	}
	if len(s.Skipped) != 1 || s.Skipped[0] != "eth0" {
		t.Errorf("skipped %v, want eth0", s.Skipped)
	}
}
