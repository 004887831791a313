// Package softnet reads the kernel's per-CPU packet-processing counters,
// /proc/net/softnet_stat (struct softnet_data, one row per online CPU;
// parsed by prometheus/procfs): skbs the receive path processed on the
// CPU, packets dropped because its backlog queue was full, time squeezes
// (net_rx_action stopped with work left: its packet budget or its time
// ran out), RPS inter-processor interrupts received and flow-limit drops.
// They are read once per interval: no probe, no cost per packet. The
// kernel keeps them in 32 bits; Sub takes differences across one wrap.
package softnet

import (
	"fmt"

	"github.com/prometheus/procfs"

	"github.com/netprof/netprof/internal/cpulist"
)

// Counters are one CPU's running totals.
type Counters struct {
	Processed, Dropped, TimeSqueezed, ReceivedRPS, FlowLimit uint32
}

// Sub returns c − p for counters that may have wrapped (once) in between.
func (c Counters) Sub(p Counters) Counters {
	return Counters{
		Processed: c.Processed - p.Processed, Dropped: c.Dropped - p.Dropped,
		TimeSqueezed: c.TimeSqueezed - p.TimeSqueezed, ReceivedRPS: c.ReceivedRPS - p.ReceivedRPS,
		FlowLimit: c.FlowLimit - p.FlowLimit,
	}
}

// Sample is one read, by CPU number.
type Sample map[int]Counters

// indexWidth is the column count from which the file names each row's
// CPU (Linux >= 5.10); before, rows are the online CPUs in order.
const indexWidth = 13

// Read reads /proc/net/softnet_stat.
func Read() (Sample, error) { return ReadFS("/proc") }

// ReadFS reads softnet_stat under the proc mount point mount.
func ReadFS(mount string) (Sample, error) {
	fs, err := procfs.NewFS(mount)
	if err != nil {
		return nil, fmt.Errorf("softnet: %w", err)
	}
	rows, err := fs.NetSoftnetStat()
	if err != nil {
		return nil, fmt.Errorf("softnet: %w", err)
	}
	var online cpulist.List
	if len(rows) > 0 && rows[0].Width < indexWidth {
		if online, err = cpulist.Online(); err != nil {
			return nil, fmt.Errorf("softnet: rows without CPU numbers: %w", err)
		}
		if len(online) != len(rows) {
			return nil, fmt.Errorf("softnet: %d rows without CPU numbers, %d CPUs online", len(rows), len(online))
		}
	}
	out := make(Sample, len(rows))
	for i, r := range rows {
		cpu := int(r.Index)
		if online != nil {
			cpu = online[i]
		}
		out[cpu] = Counters{Processed: r.Processed, Dropped: r.Dropped, TimeSqueezed: r.TimeSqueezed,
			ReceivedRPS: r.ReceivedRps, FlowLimit: r.FlowLimitCount}
	}
	return out, nil
}
