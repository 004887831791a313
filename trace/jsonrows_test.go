package trace_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
)

// Every column of an interval's rows comes out under its trace name with
// its value (null for a null column), times in UTC; empty tables are left
// out.
func TestIntervalJSON(t *testing.T) {
	end := base.Add(time.Second)
	iv := trace.Interval{
		CPUs:  []trace.CPURow{cpuRow(end, 1e9, 3, 0), cpuRow(end, 1e9, 4, 1)},
		Flows: []trace.FlowRow{flowRow(end, 1e9, 2, false)},
	}
	b, err := trace.IntervalJSON(iv)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string][]map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(got) != 2 || len(got["cpus"]) != 2 || len(got["flows"]) != 1 {
		t.Fatalf("tables %v", got)
	}
	c := got["cpus"][1]
	if c["cpu"] != 4.0 || c["interval_ns"] != 1e9 || c["net_rx_softirq_ns"] != nil || c["rx_packets"] != 15.0 ||
		c["time"] != end.UTC().Format(time.RFC3339Nano) || c["proc_busy_ns"] != nil {
		t.Errorf("cpus row %v", c)
	}
	f := got["flows"][0]
	if f["src_addr"] != "2001:db8::1" || f["dst_port"] != 40002.0 || f["rtt_min_us"] != nil || f["tcp_bytes_acked"] != nil {
		t.Errorf("flows row %v", f)
	}
	if _, ok := c["NetRxSoftirqNs"]; ok {
		t.Error("Go field names as keys")
	}
}
