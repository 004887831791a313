//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tcp: per-socket RTT distribution, cwnd and retransmitted segments.
 *
 * tcp:tcp_probe (tp_btf, kernel >= 5.5) fires at the start of
 * tcp_rcv_established for every segment a socket receives. When the segment
 * acknowledges new data we take one RTT sample: tp->rack.rtt_us, the raw RTT
 * of the most recently acknowledged segment (set while the previous ACK was
 * processed), plus the last srtt, snd_cwnd, mss and the kernel's windowed
 * minimum RTT (tp->rtt_min).
 *
 * tcp:tcp_retransmit_skb (tp_btf) counts failed retransmit attempts and
 * records tp->total_retrans, the socket's own count of retransmitted
 * segments (also read at every tcp_probe). Summing tcp_skb_pcount of the
 * traced skbs instead came out 0.2-0.75% below TcpRetransSegs on a lossy
 * HTB path: a few retransmits grow total_retrans by more than the traced
 * skb's pcount (the skb is collapsed or split around the event). This program reads the tracepoint's third
 * argument (err), present on recent kernels (6.18 here); where the
 * tracepoint has two arguments it fails to load and is reported as such. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "netprof.h"
#include "np_cast.h"

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 4096); /* set by user space */
	__type(key, struct np_flow_key);
	__type(value, struct np_tcp_val);
} np_tcp_socks SEC(".maps");

/* Scratch space for a zeroed value: np_tcp_val is too large for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_tcp_val);
} np_tcp_zero SEC(".maps");

static __always_inline __u32 log2_u32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xFFFF) << 4;
	v >>= r;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

/* rtt_bucket maps microseconds to the log-linear bucket in netprof.h. */
static __always_inline __u32 rtt_bucket(__u32 us)
{
	__u32 msb, sub;

	if (us < (NP_RTT_LINEAR_BUCKETS << NP_RTT_LINEAR_SHIFT))
		return us >> NP_RTT_LINEAR_SHIFT;
	msb = log2_u32(us);
	sub = (us >> (msb - NP_RTT_SUB_BITS)) & ((1 << NP_RTT_SUB_BITS) - 1);
	return NP_RTT_LINEAR_BUCKETS + ((msb - NP_RTT_LOG_FIRST) << NP_RTT_SUB_BITS) + sub;
}

/* sock_key fills k from the socket's common fields, read directly (tp_btf
 * arguments are BTF pointers: plain loads, no helper calls). */
static __always_inline bool sock_key(const struct sock *sk, struct np_flow_key *k)
{
	const struct sock_common *c = &sk->__sk_common;
	__u16 family = c->skc_family;

	k->netns = c->skc_net.net->ns.inum;
	k->proto = IPPROTO_TCP;
	k->lport = c->skc_num;
	k->rport = bpf_ntohs(c->skc_dport);
	if (family == AF_INET) {
		__u32 a = c->skc_rcv_saddr;

		k->family = 4;
		__builtin_memcpy(k->laddr, &a, 4);
		a = c->skc_daddr;
		__builtin_memcpy(k->raddr, &a, 4);
		return true;
	}
	if (family != AF_INET6)
		return false;
	__u32 l[4], r[4];
	for (int i = 0; i < 4; i++) {
		l[i] = c->skc_v6_rcv_saddr.in6_u.u6_addr32[i];
		r[i] = c->skc_v6_daddr.in6_u.u6_addr32[i];
	}
	/* A dual-stack socket talking IPv4 has IPv4-mapped addresses: the
	 * same flow as its IPv4 form. */
	if (r[0] == 0 && r[1] == 0 && r[2] == bpf_htonl(0x0000ffff)) {
		k->family = 4;
		__builtin_memcpy(k->laddr, &l[3], 4);
		__builtin_memcpy(k->raddr, &r[3], 4);
		return true;
	}
	k->family = 6;
	__builtin_memcpy(k->laddr, l, 16);
	__builtin_memcpy(k->raddr, r, 16);
	return true;
}

/* sock_val returns this CPU's value of sk's entry, creating it (zeroed, from
 * the np_tcp_zero scratch value: np_tcp_val is too large for the stack) the
 * first time a socket is seen on this CPU. */
static __always_inline struct np_tcp_val *sock_val(const struct sock *sk)
{
	struct np_flow_key k = {};
	struct np_tcp_val *v;
	__u32 zero = 0;

	if (!sock_key(sk, &k))
		return NULL;
	v = bpf_map_lookup_elem(&np_tcp_socks, &k);
	if (v)
		return v;
	v = bpf_map_lookup_elem(&np_tcp_zero, &zero);
	if (!v)
		return NULL;
	bpf_map_update_elem(&np_tcp_socks, &k, v, BPF_NOEXIST);
	return bpf_map_lookup_elem(&np_tcp_socks, &k);
}

/* note_total_retrans keeps the largest tp->total_retrans seen: the counter
 * only grows, and per-CPU copies are merged by taking the maximum. */
static __always_inline void note_total_retrans(struct np_tcp_val *v, const struct tcp_sock *tp)
{
	__u32 tr = tp->total_retrans;

	if (tr > v->total_retrans)
		v->total_retrans = tr;
}

/* tcp:tcp_probe. Recursion misses (recursion_misses in probes.parquet) are
 * samples skipped because this program was already running on the CPU:
 * tcp_rcv_established also runs in process context with bottom halves
 * enabled (release_sock processing a socket's backlog), where an interrupt
 * can run NET_RX and a nested tcp_probe; the per-program guard of tp_btf
 * skips the nested run. They only cost RTT samples (retransmits come from
 * tp->total_retrans, which the next run reads again). */
SEC("tp_btf/tcp_probe")
int BPF_PROG(np_tcp_probe, struct sock *sk, const struct sk_buff *skb)
{
	const struct tcp_skb_cb *cb = (const struct tcp_skb_cb *)skb->cb;
	const struct tcp_sock *tp = tcp_sk(sk);
	struct np_tcp_val *v;
	__u32 rtt;

	if (!tp)
		return 0;
	if ((__s32)(cb->ack_seq - tp->snd_una) <= 0)
		return 0; /* acknowledges nothing new: no RTT sample */
	rtt = tp->rack.rtt_us;
	if (rtt == 0)
		return 0;
	v = sock_val(sk);
	if (!v)
		return 0;
	v->rtt_samples++;
	v->rtt_sum_us += rtt;
	if (v->rtt_min_us == 0 || rtt < v->rtt_min_us)
		v->rtt_min_us = rtt;
	if (rtt > v->rtt_max_us)
		v->rtt_max_us = rtt;
	__u32 b = rtt_bucket(rtt);
	if (b < NP_RTT_BUCKETS)
		v->rtt_hist[b]++;
	v->srtt_us = tp->srtt_us >> 3;
	v->snd_cwnd = tp->snd_cwnd;
	v->mss = tp->mss_cache;
	v->min_rtt_us = tp->rtt_min.s[0].v;
	note_total_retrans(v, tp);
	v->last_stamp_us = tp->tcp_mstamp;
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(np_tcp_retrans, const struct sock *sk, const struct sk_buff *skb, int err)
{
	const struct tcp_skb_cb *cb = (const struct tcp_skb_cb *)skb->cb;
	const struct tcp_sock *tp = tcp_sk(sk);
	struct np_tcp_val *v;
	__u16 segs;

	if (!tp)
		return 0;
	v = sock_val(sk);
	if (!v)
		return 0;
	note_total_retrans(v, tp);
	if (err) {
		v->retrans_fail++;
		return 0;
	}
	segs = cb->tcp_gso_segs;
	v->retrans_segs += segs ? segs : 1;
	v->last_stamp_us = tp->tcp_mstamp;
	return 0;
}
