// Package metrics serves netprof's per-interval figures as Prometheus
// metrics. It reads the same trace.Interval rows a run writes to its trace,
// so any command that drives a measure.Recorder (watch, bench, blob) can
// export them by calling Observe from the recorder's OnInterval hook: the
// counters then equal the sums of the trace's columns.
//
// Counters (monotonic, units in the name, as Prometheus names them):
//
//	netprof_iface_{rx,tx}_bytes_total     netlink stats64 bytes (L2, headers included)
//	netprof_iface_{rx,tx}_packets_total   netlink stats64 packets
//	netprof_iface_{rx,tx}_dropped_total   netlink stats64 drops
//	netprof_iface_bpf_{rx,tx}_bytes_total BPF netif_receive_skb / net_dev_start_xmit bytes
//	netprof_cpu_net_rx_softirq_seconds_total  NET_RX softirq time per CPU (BPF softirq probe)
//	netprof_intervals_total               intervals observed
//
// Interface series are labelled netns, ifindex, ifname and driver; an
// interface renamed mid-run starts a new series under its new name (sum by
// ifindex to follow it). Gauges netprof_net_rx_softirq_busiest_ratio and
// netprof_tcp_rtt_p50_seconds carry the live view's summary figures.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/netprof/netprof/trace"
)

// Exporter holds the metrics. Its methods are safe for concurrent use
// (scrapes run on the HTTP server's goroutines).
type Exporter struct {
	reg                  *prometheus.Registry
	rxB, txB, rxP, txP   *prometheus.CounterVec
	rxD, txD, bpfR, bpfT *prometheus.CounterVec
	softirq              *prometheus.CounterVec
	intervals            prometheus.Counter
	busiest              *prometheus.GaugeVec
	rttP50               prometheus.Gauge
}

var ifaceLabels = []string{"netns", "ifindex", "ifname", "driver"}

// New returns an exporter with its own registry (not the global one), so
// several can coexist in one process and tests.
func New() *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry()}
	cv := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		e.reg.MustRegister(c)
		return c
	}
	e.rxB = cv("netprof_iface_rx_bytes_total", "Bytes received (netlink stats64, L2 frames incl. headers) on a counted interface.", ifaceLabels...)
	e.txB = cv("netprof_iface_tx_bytes_total", "Bytes transmitted (netlink stats64, L2 frames incl. headers) on a counted interface.", ifaceLabels...)
	e.rxP = cv("netprof_iface_rx_packets_total", "Packets received (netlink stats64).", ifaceLabels...)
	e.txP = cv("netprof_iface_tx_packets_total", "Packets transmitted (netlink stats64).", ifaceLabels...)
	e.rxD = cv("netprof_iface_rx_dropped_total", "Received packets dropped (netlink stats64).", ifaceLabels...)
	e.txD = cv("netprof_iface_tx_dropped_total", "Transmitted packets dropped (netlink stats64).", ifaceLabels...)
	e.bpfR = cv("netprof_iface_bpf_rx_bytes_total", "Bytes received counted by the BPF netif_receive_skb probe.", ifaceLabels...)
	e.bpfT = cv("netprof_iface_bpf_tx_bytes_total", "Bytes transmitted counted by the BPF net_dev_start_xmit probe.", ifaceLabels...)
	e.softirq = cv("netprof_cpu_net_rx_softirq_seconds_total", "Time spent in NET_RX softirq per CPU (BPF softirq probe).", "cpu")
	e.intervals = prometheus.NewCounter(prometheus.CounterOpts{Name: "netprof_intervals_total", Help: "Sampling intervals observed."})
	e.busiest = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "netprof_net_rx_softirq_busiest_ratio",
		Help: "Share (0-1) of the last interval the busiest CPU spent in softirq; label source says which counter."}, []string{"cpu", "source"})
	e.rttP50 = prometheus.NewGauge(prometheus.GaugeOpts{Name: "netprof_tcp_rtt_p50_seconds",
		Help: "Median TCP RTT over the last interval (tcp_probe samples, sample-weighted over flows)."})
	e.reg.MustRegister(e.intervals, e.busiest, e.rttP50)
	return e
}

// Registry returns the exporter's registry (to add metrics or gather in tests).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Observe adds one interval's rows to the counters.
func (e *Exporter) Observe(iv *trace.Interval) {
	for _, r := range iv.Ifaces {
		l := prometheus.Labels{"netns": strconv.FormatUint(r.Netns, 10), "ifindex": strconv.Itoa(int(r.Ifindex)),
			"ifname": r.Ifname, "driver": r.Driver}
		e.rxB.With(l).Add(float64(r.RxBytes))
		e.txB.With(l).Add(float64(r.TxBytes))
		e.rxP.With(l).Add(float64(r.RxPackets))
		e.txP.With(l).Add(float64(r.TxPackets))
		e.rxD.With(l).Add(float64(r.RxDropped))
		e.txD.With(l).Add(float64(r.TxDropped))
		if r.BpfRxBytes != nil {
			e.bpfR.With(l).Add(float64(*r.BpfRxBytes))
		}
		if r.BpfTxBytes != nil {
			e.bpfT.With(l).Add(float64(*r.BpfTxBytes))
		}
	}
	for _, c := range iv.CPUs {
		if c.NetRxSoftirqNs != nil && (*c.NetRxSoftirqNs > 0 || c.NetRxSoftirqCount != nil && *c.NetRxSoftirqCount > 0) {
			e.softirq.WithLabelValues(strconv.Itoa(int(c.CPU))).Add(float64(*c.NetRxSoftirqNs) / 1e9)
		}
	}
	e.intervals.Inc()
}

// SetBusiestSoftirq sets the busiest CPU's softirq share (0-1) of the last
// interval and which counter it came from.
func (e *Exporter) SetBusiestSoftirq(cpu int, ratio float64, source string) {
	e.busiest.Reset()
	e.busiest.WithLabelValues(strconv.Itoa(cpu), source).Set(ratio)
}

// SetRTTP50 sets the median TCP RTT of the last interval.
func (e *Exporter) SetRTTP50(d time.Duration) { e.rttP50.Set(d.Seconds()) }

// Handler returns the /metrics handler (OpenMetrics or text format).
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Server serves an Exporter over HTTP at /metrics.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Serve listens on addr ("host:port"; port 0 picks one) and serves e at
// /metrics on a goroutine the Server owns until Close. It returns an error
// if addr cannot be listened on.
func Serve(addr string, e *Exporter, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("prometheus listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	s := &Server{ln: ln, done: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil {
			log.Error("prometheus server", "err", err)
		}
		s.done <- err
	}()
	return s, nil
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting scrapes in flight finish for up to 2 s,
// and waits for its goroutine. It is idempotent.
func (s *Server) Close() error {
	if s == nil || s.done == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	serr := <-s.done
	s.done = nil
	return errors.Join(err, serr)
}
