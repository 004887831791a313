//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* softirq: per-CPU time and count of NET_RX and NET_TX softirqs.
 *
 * irq:softirq_entry/exit are attached as tp_btf (kernel >= 5.5). Classic
 * tracepoint programs are skipped under recursion (a softirq interrupting a
 * BPF program in process context), and a missed entry with a seen exit
 * corrupts timing; tp_btf programs showed no misses on this kernel. An exit
 * without a recorded entry (a softirq already running at attach time) is
 * ignored, so no interval gets a negative or uptime-sized duration. User
 * space attaches softirq_exit before softirq_entry (probes/softirq.Spec):
 * the other way round, an entry seen before the exit program is attached
 * leaves a start that no exit clears, and the CPU reads as busy in that
 * softirq until its next one. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "netprof.h"

#define NET_TX_VEC 2
#define NET_RX_VEC 3

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_softirq_val);
} np_si_cpus SEC(".maps");

static __always_inline struct np_softirq_val *si_val(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&np_si_cpus, &zero);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(np_si_entry, unsigned int vec)
{
	struct np_softirq_val *v;

	if (vec != NET_RX_VEC && vec != NET_TX_VEC)
		return 0;
	v = si_val();
	if (!v)
		return 0;
	if (vec == NET_RX_VEC)
		v->net_rx_start = bpf_ktime_get_ns();
	else
		v->net_tx_start = bpf_ktime_get_ns();
	return 0;
}

/* account closes the softirq that started at *start. The start is cleared
 * before the total grows: user space reads the total before the start (the
 * map value is copied in field order), so a read racing this exit may miss
 * the softirq for one interval but never counts it twice. */
static __always_inline void account(__u64 *start, __u64 *ns, __u64 *count, __u64 now)
{
	__u64 s = *start;

	if (!s)
		return; /* exit without a recorded entry: ignored */
	*start = 0;
	asm volatile("" ::: "memory");
	*ns += now - s;
	*count += 1;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(np_si_exit, unsigned int vec)
{
	struct np_softirq_val *v;
	__u64 now;

	if (vec != NET_RX_VEC && vec != NET_TX_VEC)
		return 0;
	v = si_val();
	if (!v)
		return 0;
	now = bpf_ktime_get_ns();
	if (vec == NET_RX_VEC)
		account(&v->net_rx_start, &v->net_rx_ns, &v->net_rx_count, now);
	else
		account(&v->net_tx_start, &v->net_tx_ns, &v->net_tx_count, now);
	return 0;
}
