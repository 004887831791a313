package bench

import (
	"github.com/netprof/netprof/trace"
	"github.com/netprof/netprof/traffic"
)

// trafficSampler adds one traffic row per stream and end from the
// generator's own counters.
type trafficSampler struct {
	sources []func() []traffic.StreamSample
	prev    map[streamKey]traffic.StreamSample
}

type streamKey struct {
	role   string
	stream int
}

func (s *trafficSampler) Name() string { return "traffic" }

func (s *trafficSampler) Baseline() error {
	s.prev = map[streamKey]traffic.StreamSample{}
	for _, src := range s.sources {
		for _, st := range src() {
			s.prev[streamKey{st.Role, st.Stream}] = st
		}
	}
	return nil
}

func (s *trafficSampler) Sample(iv *trace.Interval, _ int64) error {
	for _, src := range s.sources {
		for _, st := range src() {
			k := streamKey{st.Role, st.Stream}
			p := s.prev[k]
			s.prev[k] = st
			iv.Traffic = append(iv.Traffic, trafficRow(st, p))
		}
	}
	return nil
}

func trafficRow(st, p traffic.StreamSample) trace.TrafficRow {
	row := trace.TrafficRow{
		Stream: int32(st.Stream), Role: st.Role, LocalAddr: st.LocalAddr, RemoteAddr: st.RemoteAddr,
		AppBytes: st.AppBytes - min(p.AppBytes, st.AppBytes),
	}
	if st.Role == traffic.RoleSender && st.TCP != nil {
		fillTCP(&row, traffic.DeltaTCP(st.TCP, p.TCP))
	}
	if s := st.Steering; st.Role == traffic.RoleReceiver && s != nil {
		fillSteering(&row, *s)
	}
	return row
}

// fillSteering sets a receiving stream's row's incoming_cpu and
// incoming_napi_id.
func fillSteering(row *trace.TrafficRow, s traffic.Steering) {
	cpu, napi := s.CPU, s.NapiID
	row.IncomingCPU, row.IncomingNapiID = &cpu, &napi
}

// fillTCP sets a sending stream's row's tcp_* columns.
func fillTCP(row *trace.TrafficRow, d traffic.TCPDelta) {
	row.TCPRetransmits, row.TCPRttUs, row.TCPCwnd = &d.Retransmits, &d.RttUs, &d.Cwnd
	row.TCPBusyUs, row.TCPRwndLimitedUs, row.TCPSndbufLimitedUs = &d.BusyUs, &d.RwndLimitedUs, &d.SndbufLimitedUs
	row.TCPDeliveryRateBps, row.TCPSndWndBytes = &d.DeliveryRateBps, &d.SndWnd
}
