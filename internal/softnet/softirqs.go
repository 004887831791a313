package softnet

import (
	"fmt"

	"github.com/prometheus/procfs"

	"github.com/netprof/netprof/internal/cpulist"
)

// NetRxRuns are the NET_RX softirq runs per CPU so far (/proc/softirqs,
// the kernel's kstat_softirqs: one per net_rx_action call), by CPU number.
// Over an interval, time squeezes / runs is the share of net_rx_action
// runs that stopped with packets left: the per-CPU budget figure that
// needs no napi_poll probe.
type NetRxRuns map[int]uint64

// ReadNetRx reads /proc/softirqs' NET_RX row.
func ReadNetRx() (NetRxRuns, error) { return ReadNetRxFS("/proc", cpulist.PossiblePath) }

// ReadNetRxFS reads the NET_RX row of softirqs under the proc mount point
// mount. The file has a column per possible CPU, in order (its header is
// not kept by procfs), so possiblePath names the possible-CPU list that
// numbers them.
func ReadNetRxFS(mount, possiblePath string) (NetRxRuns, error) {
	fs, err := procfs.NewFS(mount)
	if err != nil {
		return nil, fmt.Errorf("softirqs: %w", err)
	}
	s, err := fs.Softirqs()
	if err != nil {
		return nil, fmt.Errorf("softirqs: %w", err)
	}
	possible, err := cpulist.Read(possiblePath)
	if err != nil {
		return nil, fmt.Errorf("softirqs: %w", err)
	}
	if len(possible) != len(s.NetRx) {
		return nil, fmt.Errorf("softirqs: %d NET_RX columns, %d possible CPUs (%s)", len(s.NetRx), len(possible), possible)
	}
	out := make(NetRxRuns, len(possible))
	for i, cpu := range possible {
		out[cpu] = s.NetRx[i]
	}
	return out, nil
}
