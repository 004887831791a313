//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* netdev: per-interface, per-flow and per-CPU packet counters.
 *
 * Receive is counted at net:netif_receive_skb, transmit at
 * net:net_dev_start_xmit (the last point where the stack still owns the skb
 * and its headers are safe to read; net_dev_xmit fires after the driver may
 * have handed it on). NAPI work at napi:napi_poll. All three are attached as
 * tp_btf (BTF tracepoints, kernel >= 5.5): unlike classic tracepoints they
 * keep a per-program recursion guard and are not skipped when a softirq
 * interrupts another BPF program. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "netprof.h"
#include "np_cast.h"
#include "np_const.h"

#define MAC_HEADER_UNSET 0xffff

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Flows: one entry per flow shared by all CPUs, added to atomically
 * (hash_add). A per-CPU table multiplies every entry by the possible-CPU
 * count (16384 flows: 250 MB at 240 CPUs); most adds come from the per-CPU
 * cache's write-backs, not from every skb. Not LRU: an LRU hash evicts
 * silently, and early on hosts with many CPUs. A flow that finds the table
 * full is counted in np_cpu_val.flow_lost; user space deletes idle flows
 * (netdev.Reader). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* set by user space */
	__type(key, struct np_flow_key);
	__type(value, struct np_flow_val);
} np_nd_flows SEC(".maps");

/* Interfaces: shared by all CPUs like the flows, for the same reason, and
 * preallocated: the per-CPU cache writes back from the flush program (an
 * IPI, interrupts off), where allocating a new element can fail. With the
 * cache on, most skbs never touch this map; with it off (no
 * BPF_PROG_TEST_RUN on a chosen CPU, or one allowed CPU), every skb adds
 * to its interface's entry atomically. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct np_iface_key);
	__type(value, struct np_iface_val);
} np_nd_ifaces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_cpu_val);
} np_nd_cpus SEC(".maps");

/* Parsed headers of one skb. */
struct pkt {
	__u32 l2_len;  /* MAC header bytes in front of the network header */
	__u32 hdr_len; /* L2 + L3 + L4 header bytes repeated per segment */
	__u32 segs;
	__u8 family;
	__u8 proto;
	__u16 sport;
	__u16 dport;
	__u8 saddr[16];
	__u8 daddr[16];
};

static __always_inline struct np_cpu_val *cpu_val(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&np_nd_cpus, &zero);
}

/* Headers as read in one go from the network header: IPv4 (without
 * options) or IPv6, then the first 14 bytes of a TCP or UDP header (ports
 * and the TCP data offset). */
struct hdrs {
	union {
		struct {
			struct iphdr ip;
			__u8 l4[14];
		} v4;
		struct {
			struct ipv6hdr ip6;
			__u8 l4[14];
		} v6;
	};
};

/* parse_l4 fills the ports and adds the L4 header length from the first
 * 14 bytes of a TCP or UDP header. */
static __always_inline void parse_l4(struct pkt *p, const __u8 *l4)
{
	if (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP)
		return;
	p->sport = ((__u16)l4[0] << 8) | l4[1];
	p->dport = ((__u16)l4[2] << 8) | l4[3];
	if (p->proto == IPPROTO_TCP)
		p->hdr_len += (l4[12] >> 4) * 4;
	else
		p->hdr_len += 8;
}

/* parse_ip_read fills family, addresses, protocol and ports from the
 * network header at nh with one bpf_probe_read_kernel (a second one only for
 * IPv4 options): the fallback for kernels without bpf_rdonly_cast. Returns
 * false for anything but IPv4/IPv6. */
static __always_inline bool parse_ip_read(struct pkt *p, __u16 protocol, const unsigned char *nh)
{
	struct hdrs h;

	if (protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_probe_read_kernel(&h.v4, sizeof(h.v4), nh))
			return false;
		p->family = 4;
		p->proto = h.v4.ip.protocol;
		__builtin_memcpy(p->saddr, &h.v4.ip.saddr, 4);
		__builtin_memcpy(p->daddr, &h.v4.ip.daddr, 4);
		p->hdr_len += h.v4.ip.ihl * 4;
		if (h.v4.ip.ihl != 5 &&
		    bpf_probe_read_kernel(h.v4.l4, sizeof(h.v4.l4), nh + h.v4.ip.ihl * 4))
			return true;
		parse_l4(p, h.v4.l4);
		return true;
	}
	if (protocol == bpf_htons(ETH_P_IPV6)) {
		if (bpf_probe_read_kernel(&h.v6, sizeof(h.v6), nh))
			return false;
		p->family = 6;
		p->proto = h.v6.ip6.nexthdr; /* extension headers are not walked */
		__builtin_memcpy(p->saddr, &h.v6.ip6.saddr, 16);
		__builtin_memcpy(p->daddr, &h.v6.ip6.daddr, 16);
		p->hdr_len += sizeof(h.v6.ip6);
		parse_l4(p, h.v6.l4);
		return true;
	}
	return false;
}

/* parse_ip_cast is parse_ip_read with the headers read in place through
 * bpf_rdonly_cast (np_cast.h): plain loads instead of helper calls. */
static __always_inline bool parse_ip_cast(struct pkt *p, __u16 protocol, const unsigned char *nh)
{
	const unsigned char *l4;

	if (protocol == bpf_htons(ETH_P_IP)) {
		const struct iphdr *ip = np_cast(nh, struct iphdr);
		__u32 ihl = BPF_CORE_READ_BITFIELD(ip, ihl) * 4;
		__u32 a;

		p->family = 4;
		p->proto = ip->protocol;
		a = ip->saddr;
		__builtin_memcpy(p->saddr, &a, 4);
		a = ip->daddr;
		__builtin_memcpy(p->daddr, &a, 4);
		p->hdr_len += ihl;
		l4 = nh + ihl;
	} else if (protocol == bpf_htons(ETH_P_IPV6)) {
		const struct ipv6hdr *ip6 = np_cast(nh, struct ipv6hdr);
		__u64 a[2];

		p->family = 6;
		p->proto = ip6->nexthdr; /* extension headers are not walked */
		a[0] = ((const __u64 *)&ip6->saddr)[0];
		a[1] = ((const __u64 *)&ip6->saddr)[1];
		__builtin_memcpy(p->saddr, a, 16);
		a[0] = ((const __u64 *)&ip6->daddr)[0];
		a[1] = ((const __u64 *)&ip6->daddr)[1];
		__builtin_memcpy(p->daddr, a, 16);
		p->hdr_len += sizeof(struct ipv6hdr);
		l4 = nh + sizeof(struct ipv6hdr);
	} else {
		return false;
	}
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		/* UDP's ports sit where TCP's do. */
		const struct tcphdr *th = np_cast(l4, struct tcphdr);

		p->sport = bpf_ntohs(th->source);
		p->dport = bpf_ntohs(th->dest);
		if (p->proto == IPPROTO_TCP)
			p->hdr_len += BPF_CORE_READ_BITFIELD(th, doff) * 4;
		else
			p->hdr_len += 8;
	}
	return true;
}

/* gso_segments returns how many wire segments the skb stands for, from
 * skb_shinfo(skb) at head + end (end is an offset on 64-bit kernels). Where
 * bpf_rdonly_cast is missing, one bpf_probe_read_kernel covers gso_size and
 * gso_segs where they are adjacent, as they have always been (the CO-RE
 * offsets are constants, so the other branch is removed at load time). */
static __always_inline __u32 gso_segments(const unsigned char *head, __u32 end, __u32 len, __u32 hdr_len)
{
	const unsigned char *shinfo = head + end;
	__u32 size_off = bpf_core_field_offset(struct skb_shared_info, gso_size);
	__u32 segs_off = bpf_core_field_offset(struct skb_shared_info, gso_segs);
	__u16 g[2] = {};

	if (np_have_cast()) {
		const struct skb_shared_info *sh = np_cast(shinfo, struct skb_shared_info);
		g[0] = sh->gso_size;
		g[1] = sh->gso_segs;
	} else if (segs_off == size_off + 2) {
		bpf_probe_read_kernel(g, sizeof(g), shinfo + size_off);
	} else {
		bpf_probe_read_kernel(&g[0], 2, shinfo + size_off);
		bpf_probe_read_kernel(&g[1], 2, shinfo + segs_off);
	}
	if (g[1] > 0)
		return g[1];
	if (g[0] > 0 && len > hdr_len)
		return (len - hdr_len + g[0] - 1) / g[0];
	return 1;
}

#include "netdev_cache.h"

static __always_inline struct np_nd_cache *nd_cache(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&np_nd_cache, &zero);
}

/* flow_key fills k from the parsed headers, oriented from the local end:
 * the destination on receive, the source on transmit. */
static __always_inline void flow_key(struct np_flow_key *k, const struct np_iface_key *ik, bool rx,
				     const struct pkt *p)
{
	const __u8 *local = rx ? p->daddr : p->saddr;
	const __u8 *remote = rx ? p->saddr : p->daddr;

	k->netns = ik->netns;
	k->ifindex = ik->ifindex;
	k->proto = p->proto;
	k->family = p->family;
	k->lport = rx ? p->dport : p->sport;
	k->rport = rx ? p->sport : p->dport;
	if (p->family == 4) {
		__builtin_memcpy(k->laddr, local, 4);
		__builtin_memcpy(k->raddr, remote, 4);
	} else {
		__builtin_memcpy(k->laddr, local, 16);
		__builtin_memcpy(k->raddr, remote, 16);
	}
}

/* count_skb reads the skb and device fields directly: tp_btf arguments
 * are BTF pointers, so these are single PROBE_MEM loads (CO-RE relocated),
 * not bpf_probe_read_kernel calls. Packet headers and skb_shinfo, which
 * have no BTF type here, are read through bpf_rdonly_cast (np_cast.h), or
 * the helper on kernels without it. */
static __always_inline void count_skb(struct sk_buff *skb, bool rx)
{
	struct net_device *dev = skb->dev;
	struct np_iface_key ik = {.netns = dev->nd_net.net->ns.inum, .ifindex = dev->ifindex};
	unsigned char *head = skb->head;
	__u16 mac = skb->mac_header;
	__u16 protocol = skb->protocol;
	__u32 len = skb->len;
	struct np_flow_key fk = {};
	struct np_nd_cache *c;
	struct np_cpu_val *cv;
	unsigned char *nh;
	struct np_inc in;
	struct pkt p = {};
	bool ip;

	if (rx) {
		/* At netif_receive_skb the MAC header has been pulled (data is
		 * the network header) but network_header is not reset yet. */
		nh = skb->data;
		if (mac != MAC_HEADER_UNSET && nh > head + mac)
			p.l2_len = nh - (head + mac);
		len += p.l2_len;
	} else {
		/* On transmit data is the MAC header and len includes it. */
		nh = head + skb->network_header;
		if (mac != MAC_HEADER_UNSET && nh > head + mac)
			p.l2_len = nh - (head + mac);
	}
	p.hdr_len = p.l2_len;
	if (np_have_cast())
		ip = parse_ip_cast(&p, protocol, nh);
	else
		ip = parse_ip_read(&p, protocol, nh);
	p.segs = gso_segments(head, skb->end, len, p.hdr_len);
	in.bytes = len;
	in.packets = p.segs;
	in.wire_bytes = len;
	if (p.segs > 1)
		in.wire_bytes += (__u64)(p.segs - 1) * p.hdr_len;
	if (ip)
		flow_key(&fk, &ik, rx, &p);

	cv = cpu_val();
	if (!cv)
		return;
	if (rx) {
		cv->rx_bytes += len;
		cv->rx_packets += p.segs;
		cv->rx_skbs += 1;
	}
	c = nd_cache();
	if (!c || !np_nd_cache_on || c->busy) {
		count_hash(&np_nd_ifaces, &ik, rx, &in, &cv->iface_lost);
		if (ip)
			count_hash(&np_nd_flows, &fk, rx, &in, &cv->flow_lost);
		return;
	}
	c->busy = 1;
	np_barrier();
	cache_iface(c, &ik, rx, &in, &cv->iface_lost);
	if (ip)
		cache_flow(c, &fk, rx, &in, &cv->flow_lost);
	np_barrier();
	c->busy = 0;
}

/* net:netif_receive_skb fires in __netif_receive_skb_core for every skb the
 * stack receives (after GRO), once per device in a stacked receive. */
SEC("tp_btf/netif_receive_skb")
int BPF_PROG(np_nd_rx, struct sk_buff *skb)
{
	count_skb(skb, true);
	return 0;
}

/* net:net_dev_start_xmit fires in xmit_one before ndo_start_xmit. An skb
 * requeued by a busy driver (NETDEV_TX_BUSY) is counted again. */
SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(np_nd_tx, struct sk_buff *skb, struct net_device *dev)
{
	count_skb(skb, false);
	return 0;
}

/* napi:napi_poll fires after each NAPI poll with the packets processed
 * (work) and the budget it was given. */
SEC("tp_btf/napi_poll")
int BPF_PROG(np_nd_napi, struct napi_struct *napi, int work, int budget)
{
	struct np_cpu_val *cv = cpu_val();
	if (!cv)
		return 0;
	cv->napi_polls++;
	if (work > 0)
		cv->napi_packets += work;
	if (work >= budget && budget > 0)
		cv->napi_budget_exhausted++;
	return 0;
}

/* np_nd_flush writes this CPU's cached counts back to the hash maps (see
 * netdev_cache.h). Not attached: user space runs it on each CPU with
 * BPF_PROG_TEST_RUN and BPF_F_TEST_RUN_ON_CPU (Linux >= 5.10) from another
 * CPU, so it runs in the IPI with interrupts off (run locally, in process
 * context, a softirq could interleave with it: netdev.flusher never does).
 * Returns 1 without doing anything when it interrupted a netdev program
 * (try again), else 0. */
SEC("raw_tp")
int np_nd_flush(void *ctx)
{
	struct np_nd_cache *c = nd_cache();
	struct np_cpu_val *cv = cpu_val();
	__u32 i;

	if (!c || !cv)
		return 0;
	if (c->busy)
		return 1;
	for (i = 0; i < NP_IFACE_SETS * 2; i++)
		write_back(&np_nd_ifaces, &c->ifaces[i].key, (struct np_flow_val *)&c->ifaces[i].d,
			   &cv->iface_lost);
	for (i = 0; i < NP_FLOW_SETS * 2; i++)
		write_back(&np_nd_flows, &c->flows[i].key, &c->flows[i].d, &cv->flow_lost);
	return 0;
}
