package analysis

import (
	"fmt"
	"strings"

	"github.com/netprof/netprof/internal/cpulist"
)

// hotFeeds says which of the recorded interfaces' receive interrupts and
// RPS masks deliver to cpu (manifest interfaces[].queues, read when the
// run started): e.g. "eth0 IRQ 38 virtio2-input.0 (rx queue 0, effective
// CPU 1)". Empty when the manifest has no queue map (older traces, or an
// interface whose sysfs could not be read) or nothing points at cpu.
func (r *Report) hotFeeds(cpu int) []string {
	var out []string
	for _, mi := range r.Manifest.Interfaces {
		q := mi.Queues
		if q == nil {
			continue
		}
		for _, irq := range q.IRQs {
			if irq.Queue == nil || irq.Direction == "tx" {
				continue
			}
			set := irq.Effective
			if set == "" {
				set = irq.Affinity
			}
			if l, err := cpulist.Parse(set); err == nil && l.Contains(cpu) {
				out = append(out, fmt.Sprintf("%s IRQ %d %s (%s queue %d, delivered to CPU %s)",
					mi.Name, irq.IRQ, irq.Name, irq.Direction, *irq.Queue, set))
			}
		}
		for _, rq := range q.RxQueues {
			if l, err := cpulist.Parse(rq.CPUs); rq.CPUs != "" && err == nil && l.Contains(cpu) {
				out = append(out, fmt.Sprintf("%s rx queue %d by RPS (rps_cpus %s)", mi.Name, rq.Index, rq.CPUs))
			}
		}
	}
	return out
}

// hotFeedsText is hotFeeds in one phrase for the hot core's line; "" when
// there is nothing to say.
func (r *Report) hotFeedsText(cpu int) string {
	f := r.hotFeeds(cpu)
	switch {
	case len(f) == 0:
		return ""
	case len(f) > 3:
		f = append(f[:3], fmt.Sprintf("and %d more", len(f)-3))
	}
	return "fed by " + strings.Join(f, "; ")
}
