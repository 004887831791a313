package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/netprof/netprof/internal/cpustat"
	"github.com/netprof/netprof/traffic"
	"github.com/netprof/netprof/traffic/testbed"
)

// netprofPort is the data port of netprof's receiver in namespace B.
const netprofPort = "5001"

// drainTimeout bounds how long the receiver may take after the sender
// stopped.
const drainTimeout = 30 * time.Second

// runNetprof runs netprof's Sender in A and Receiver in B, in this process,
// for dur with n streams. CPU is this process's getrusage delta from
// before Connect to after Serve returned (both ends, like the two iperf3
// processes' whole lives); goodput is the receiver's bytes over the time
// from Run to the end of Serve.
func runNetprof(ctx context.Context, bed *testbed.Bed, n int, dur time.Duration, block int) (result, error) {
	addr := net.JoinHostPort(bed.B().Addr.String(), netprofPort)
	cfg := traffic.Config{Streams: n, Duration: dur, BlockSize: block}
	ln, err := bed.B().Listen("tcp", addr)
	if err != nil {
		return result{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recv := traffic.NewReceiver(ln, cfg)
	served := make(chan error, 1)
	go func() { served <- recv.Serve(rctx) }()
	send := traffic.NewSender(bed.A().Dial, addr, cfg)
	defer send.Close()

	c0, err := cpustat.Read()
	if err != nil {
		cancel()
		<-served
		return result{}, err
	}
	if err := send.Connect(ctx); err != nil {
		cancel()
		<-served
		return result{}, fmt.Errorf("connect: %w", err)
	}
	start := time.Now()
	sendErr := send.Run(ctx)
	var recvErr error
	select {
	case recvErr = <-served:
	case <-time.After(drainTimeout):
		cancel()
		recvErr = errors.Join(fmt.Errorf("receiver did not finish within %v", drainTimeout), <-served)
	}
	elapsed := time.Since(start)
	c1, err := cpustat.Read()
	if err = errors.Join(err, wrap("sender", sendErr), wrap("receiver", recvErr)); err != nil {
		return result{}, err
	}
	u := cpustat.Delta(c0, c1)
	r := result{
		Tool: toolNetprof, Streams: n, Seconds: elapsed.Seconds(),
		CPUSeconds:  u.ProcessUserS + u.ProcessSystemS,
		HostBusyPct: busyPct(u),
	}
	for _, s := range recv.Sample() {
		r.Bytes += s.AppBytes
	}
	for _, s := range send.Sample() {
		if s.TCP != nil {
			r.Retransmits += s.TCP.TotalRetrans
		}
	}
	return r, nil
}

// busyPct is the host's non-idle share of a cpustat.Usage.
func busyPct(u cpustat.Usage) float64 {
	return 100 - u.IdlePct - u.IOWaitPct
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
