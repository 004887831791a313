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

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define MAC_HEADER_UNSET 0xffff

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 16384); /* set by user space */
	__type(key, struct np_flow_key);
	__type(value, struct np_flow_val);
} np_nd_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
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

static __always_inline void parse_l4(struct pkt *p, const unsigned char *l4)
{
	__u16 ports[2] = {};
	if (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP)
		return;
	bpf_probe_read_kernel(ports, sizeof(ports), l4);
	p->sport = bpf_ntohs(ports[0]);
	p->dport = bpf_ntohs(ports[1]);
	if (p->proto == IPPROTO_TCP) {
		__u8 doff = 0;
		bpf_probe_read_kernel(&doff, 1, l4 + 12);
		p->hdr_len += (doff >> 4) * 4;
	} else {
		p->hdr_len += 8;
	}
}

/* parse_ip fills family, addresses, protocol and ports from the network
 * header at nh. Returns false for anything but IPv4/IPv6. */
static __always_inline bool parse_ip(struct pkt *p, __u16 protocol, const unsigned char *nh)
{
	if (protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;
		if (bpf_probe_read_kernel(&ip, sizeof(ip), nh))
			return false;
		p->family = 4;
		p->proto = ip.protocol;
		__builtin_memcpy(p->saddr, &ip.saddr, 4);
		__builtin_memcpy(p->daddr, &ip.daddr, 4);
		p->hdr_len += ip.ihl * 4;
		parse_l4(p, nh + ip.ihl * 4);
		return true;
	}
	if (protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;
		if (bpf_probe_read_kernel(&ip6, sizeof(ip6), nh))
			return false;
		p->family = 6;
		p->proto = ip6.nexthdr; /* extension headers are not walked */
		__builtin_memcpy(p->saddr, &ip6.saddr, 16);
		__builtin_memcpy(p->daddr, &ip6.daddr, 16);
		p->hdr_len += sizeof(ip6);
		parse_l4(p, nh + sizeof(ip6));
		return true;
	}
	return false;
}

/* gso_segments returns how many wire segments the skb stands for. */
static __always_inline __u32 gso_segments(struct sk_buff *skb, __u32 len, __u32 hdr_len)
{
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u32 end = BPF_CORE_READ(skb, end); /* offset from head on 64-bit */
	struct skb_shared_info *shinfo = (void *)(head + end);
	__u16 segs = BPF_CORE_READ(shinfo, gso_segs);
	__u16 size = BPF_CORE_READ(shinfo, gso_size);

	if (segs > 0)
		return segs;
	if (size > 0 && len > hdr_len)
		return (len - hdr_len + size - 1) / size;
	return 1;
}

static __always_inline void add_dir(struct np_dir_counts *c, __u32 len, const struct pkt *p)
{
	__u64 wire = len;
	if (p->segs > 1)
		wire += (__u64)(p->segs - 1) * p->hdr_len;
	c->bytes += len;
	c->packets += p->segs;
	c->skbs += 1;
	c->wire_bytes += wire;
}

static __always_inline void count_iface(__u64 netns, __u32 ifindex, bool rx, __u32 len,
					const struct pkt *p, struct np_cpu_val *cv)
{
	struct np_iface_key k = {.netns = netns, .ifindex = ifindex};
	struct np_iface_val *v = bpf_map_lookup_elem(&np_nd_ifaces, &k);
	if (!v) {
		struct np_iface_val zero = {};
		if (bpf_map_update_elem(&np_nd_ifaces, &k, &zero, BPF_NOEXIST) && cv)
			cv->iface_update_fail++;
		v = bpf_map_lookup_elem(&np_nd_ifaces, &k);
		if (!v)
			return;
	}
	add_dir(rx ? &v->rx : &v->tx, len, p);
}

static __always_inline void count_flow(__u64 netns, __u32 ifindex, bool rx, __u32 len,
				       const struct pkt *p, struct np_cpu_val *cv)
{
	struct np_flow_key k = {.netns = netns, .ifindex = ifindex, .proto = p->proto};
	const __u8 *local = rx ? p->daddr : p->saddr;
	const __u8 *remote = rx ? p->saddr : p->daddr;

	k.family = p->family;
	k.lport = rx ? p->dport : p->sport;
	k.rport = rx ? p->sport : p->dport;
	if (p->family == 4) {
		__builtin_memcpy(k.laddr, local, 4);
		__builtin_memcpy(k.raddr, remote, 4);
	} else {
		__builtin_memcpy(k.laddr, local, 16);
		__builtin_memcpy(k.raddr, remote, 16);
	}

	struct np_flow_val *v = bpf_map_lookup_elem(&np_nd_flows, &k);
	if (!v) {
		struct np_flow_val zero = {};
		if (bpf_map_update_elem(&np_nd_flows, &k, &zero, BPF_NOEXIST) && cv)
			cv->flow_update_fail++;
		v = bpf_map_lookup_elem(&np_nd_flows, &k);
		if (!v)
			return;
	}
	add_dir(rx ? &v->rx : &v->tx, len, p);
}

static __always_inline void count_skb(struct sk_buff *skb, bool rx)
{
	struct net_device *dev = BPF_CORE_READ(skb, dev);
	__u64 netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	__u32 ifindex = BPF_CORE_READ(dev, ifindex);
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u16 mac = BPF_CORE_READ(skb, mac_header);
	__u16 protocol = BPF_CORE_READ(skb, protocol);
	__u32 len = BPF_CORE_READ(skb, len);
	unsigned char *nh;
	struct pkt p = {};
	bool ip;

	if (rx) {
		/* At netif_receive_skb the MAC header has been pulled (data is
		 * the network header) but network_header is not reset yet. */
		nh = BPF_CORE_READ(skb, data);
		if (mac != MAC_HEADER_UNSET && nh > head + mac)
			p.l2_len = nh - (head + mac);
		len += p.l2_len;
	} else {
		/* On transmit data is the MAC header and len includes it. */
		nh = head + BPF_CORE_READ(skb, network_header);
		if (mac != MAC_HEADER_UNSET && nh > head + mac)
			p.l2_len = nh - (head + mac);
	}
	p.hdr_len = p.l2_len;
	ip = parse_ip(&p, protocol, nh);
	p.segs = gso_segments(skb, len, p.hdr_len);

	struct np_cpu_val *cv = cpu_val();
	if (rx && cv) {
		cv->rx_bytes += len;
		cv->rx_packets += p.segs;
		cv->rx_skbs += 1;
	}
	count_iface(netns, ifindex, rx, len, &p, cv);
	if (ip)
		count_flow(netns, ifindex, rx, len, &p, cv);
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
