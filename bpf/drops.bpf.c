//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* drops: packets the kernel dropped, counted per CPU and drop reason.
 *
 * skb:kfree_skb fires when an skb is freed as dropped (consume_skb frees
 * the normal way and has its own event). Since Linux 5.17 it passes the
 * reason (enum skb_drop_reason); np_drop counts packets and bytes (skb->len)
 * per reason in a per-CPU array, np_drop_noreason (kernels before 5.17:
 * two arguments) counts under reason 0. Reasons are small integers
 * (SKB_DROP_REASON_MAX is ~128 on 6.18); a subsystem's reasons (the upper
 * 16 bits set, e.g. mac80211's) and anything past the array land in the
 * last slot. No event reaches user space: it reads the array each
 * interval. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "netprof.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NP_DROP_SLOTS);
	__type(key, __u32);
	__type(value, struct np_drop_val);
} np_drops SEC(".maps");

static __always_inline void count_drop(__u32 reason, struct sk_buff *skb)
{
	struct np_drop_val *v;
	__u32 slot = reason;

	if (slot >= NP_DROP_SLOTS)
		slot = NP_DROP_SLOTS - 1;
	v = bpf_map_lookup_elem(&np_drops, &slot);
	if (!v)
		return;
	v->packets += 1;
	v->bytes += BPF_CORE_READ(skb, len);
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(np_drop, struct sk_buff *skb, void *location, int reason)
{
	count_drop((__u32)reason, skb);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(np_drop_noreason, struct sk_buff *skb, void *location)
{
	count_drop(0, skb);
	return 0;
}
