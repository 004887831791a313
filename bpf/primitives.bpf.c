//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* primitives: the building blocks of netprof's probes, each alone in a
 * program on net:netif_receive_skb (tp_btf), for the cost benchmark
 * (BenchmarkProbePrimitives). Beside the empty program there (empty.bpf.c)
 * they show what one operation adds per event on this machine: a per-CPU
 * array counter (napi, softirq, the netdev cache), a clock read (softirq
 * timing), the skb -> device -> namespace pointer chase every flow key
 * needs, and a per-CPU hash lookup with a flow-sized key. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "netprof.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct np_p_val {
	__u64 n;
	__u64 t;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_p_val);
} np_p_cpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 64);
	__type(key, struct np_flow_key);
	__type(value, struct np_p_val);
} np_p_hash SEC(".maps");

static __always_inline struct np_p_val *p_val(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&np_p_cpu, &zero);
}

/* One per-CPU array value, one add. */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(np_p_array, struct sk_buff *skb)
{
	struct np_p_val *v = p_val();

	if (v)
		v->n++;
	return 0;
}

/* One bpf_ktime_get_ns, stored. */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(np_p_clock, struct sk_buff *skb)
{
	struct np_p_val *v = p_val();

	if (v)
		v->t = bpf_ktime_get_ns();
	return 0;
}

/* skb->len and skb->dev->nd_net.net->ns.inum: three dependent loads. */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(np_p_skb, struct sk_buff *skb)
{
	struct np_p_val *v = p_val();

	if (v)
		v->n += skb->len + skb->dev->nd_net.net->ns.inum;
	return 0;
}

/* A per-CPU hash lookup with a flow-sized key (netns and ifindex of the
 * skb, the rest zero), the entry created on first use. */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(np_p_hash_add, struct sk_buff *skb)
{
	struct np_flow_key k = {.ifindex = skb->skb_iif};
	struct np_p_val *v, zero = {};

	v = bpf_map_lookup_elem(&np_p_hash, &k);
	if (!v) {
		bpf_map_update_elem(&np_p_hash, &k, &zero, BPF_NOEXIST);
		return 0;
	}
	v->n++;
	return 0;
}
