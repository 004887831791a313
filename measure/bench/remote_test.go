package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/control"
)

// A peer's interval report as it arrives on the wire becomes traffic rows:
// received_steering gives the peer's receiver rows incoming_cpu and
// incoming_napi_id (null for a stream reported null); a report from a peer
// before received_steering (and sent_tcp) gives rows with those columns
// null, the bytes unchanged.
func TestRemoteRowsSteering(t *testing.T) {
	addrs := map[streamKey]traffic.StreamSample{}
	for i := range 3 {
		addrs[streamKey{traffic.RoleSender, i}] = traffic.StreamSample{LocalAddr: fmt.Sprintf("198.18.0.1:%d", 40000+i), RemoteAddr: "198.18.0.2:5001"}
	}
	at := time.Unix(1000, 0)
	for _, tc := range []struct {
		name, wire string
		cpu        []*int32
		napi       []*uint32
	}{
		{"new peer", `{"index":0,"end_ns":250000000,"interval_ns":250000000,"received_bytes":[100,200,300],` +
			`"received_steering":[{"cpu":1,"napi_id":8193},null,{"cpu":0,"napi_id":0}],"sent_bytes":[7],"cpu":{}}`,
			[]*int32{ptr(int32(1)), nil, ptr(int32(0))}, []*uint32{ptr(uint32(8193)), nil, ptr(uint32(0))}},
		{"old peer", `{"index":0,"end_ns":250000000,"interval_ns":250000000,"received_bytes":[100,200,300],"sent_bytes":[7],"cpu":{}}`,
			[]*int32{nil, nil, nil}, []*uint32{nil, nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ri control.Interval
			if err := json.Unmarshal([]byte(tc.wire), &ri); err != nil {
				t.Fatal(err)
			}
			rows := newRemoteRows(250*time.Millisecond, 3).rows(ri, at, trace.PhaseMeasure, addrs)
			if len(rows) != 4 {
				t.Fatalf("%d rows, want 3 receiver + 1 sender", len(rows))
			}
			for i, r := range rows[:3] {
				if r.Role != trace.RoleReceiver || r.Stream != int32(i) || r.AppBytes != uint64(100*(i+1)) || r.LocalAddr != "198.18.0.2:5001" {
					t.Errorf("row %d: %+v", i, r)
				}
				if !eqPtr(r.IncomingCPU, tc.cpu[i]) || !eqPtr(r.IncomingNapiID, tc.napi[i]) {
					t.Errorf("stream %d: incoming_cpu %v napi %v, want %v %v", i, deref(r.IncomingCPU), deref(r.IncomingNapiID), deref(tc.cpu[i]), deref(tc.napi[i]))
				}
			}
			if s := rows[3]; s.Role != trace.RoleSender || s.Stream != 3 || s.IncomingCPU != nil || s.TCPBusyUs != nil {
				t.Errorf("peer sender row %+v: want stream 3, no steering, no TCP_INFO (none reported)", s)
			}
		})
	}
	// The field is optional on the wire: absent when nil, as old clients
	// and servers expect; present, with nulls, when set.
	b, err := json.Marshal(control.Interval{ReceivedBytes: []uint64{1}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "received_steering") {
		t.Errorf("interval without steering marshals as %s", b)
	}
	b, err = json.Marshal(control.Interval{ReceivedSteering: []*control.StreamSteering{{CPU: 1, NapiID: 2}, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"received_steering":[{"cpu":1,"napi_id":2},null]`) {
		t.Errorf("interval marshals as %s", b)
	}
}

func ptr[T any](v T) *T { return &v }

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
