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
 * skb's pcount (the skb is collapsed or split around the event). The
 * tracepoint gained a third argument (err) in recent kernels (6.18 has
 * it, 6.12 does not): np_tcp_retrans reads it, np_tcp_rtx_ok is the
 * two-argument form, and user space loads the one that fits. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "netprof.h"
#include "np_cast.h"
#include "np_sock.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* One entry per socket, shared by all CPUs: a per-CPU table would hold a
 * 1.3 KB value per socket per possible CPU (1.3 GB at 240 CPUs for 4096
 * sockets). Both programs run with the socket locked (tcp_rcv_established
 * and the retransmit paths hold it), so one socket's entry is never
 * updated on two CPUs at once and plain adds are exact. Not LRU: an LRU
 * hash evicts long before it is full on hosts with many CPUs (per-CPU free
 * lists). User space deletes entries of idle sockets (tcpstats.Reader);
 * a socket that finds the table full is counted in np_tcp_self. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set by user space */
	__type(key, struct np_flow_key);
	__type(value, struct np_tcp_val);
} np_tcp_socks SEC(".maps");

/* A zeroed value to create entries from: np_tcp_val is too large for the
 * stack. Never written. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_tcp_val);
} np_tcp_zero SEC(".maps");

/* Per-CPU counters of the probe itself. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_tcp_stats);
} np_tcp_self SEC(".maps");

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

/* sock_val returns sk's entry, creating it the first time the socket is
 * seen (zeroed from np_tcp_zero, with total_retrans and its base at the
 * socket's current count). Callers hold the socket lock. NULL when the
 * table is full (counted in np_tcp_self). */
static __always_inline struct np_tcp_val *sock_val(const struct sock *sk, const struct tcp_sock *tp)
{
	struct np_flow_key k = {};
	struct np_tcp_stats *st;
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
	v = bpf_map_lookup_elem(&np_tcp_socks, &k);
	if (v) {
		v->total_retrans = tp->total_retrans;
		v->total_retrans_base = v->total_retrans;
		return v;
	}
	st = bpf_map_lookup_elem(&np_tcp_self, &zero);
	if (st)
		st->socks_refused++;
	return NULL;
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
	v = sock_val(sk, tp);
	if (!v)
		return 0;
	v->rtt_samples++;
	v->rtt_sum_us += rtt;
	if (v->rtt_min_us == 0 || rtt < v->rtt_min_us)
		v->rtt_min_us = rtt;
	if (rtt > v->rtt_max_us)
		v->rtt_max_us = rtt;
	/* A 64-bit index behind a barrier: with a 32-bit one clang bounds
	 * one zero-extended copy and indexes with another, and the 6.1
	 * verifier rejects the access as unbounded. */
	__u64 b = rtt_bucket(rtt);
	barrier_var(b);
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

/* count_retrans records one retransmission of skb by sk; err is the
 * attempt's result (0: sent). */
static __always_inline void count_retrans(const struct sock *sk, const struct sk_buff *skb, int err)
{
	const struct tcp_skb_cb *cb = (const struct tcp_skb_cb *)skb->cb;
	const struct tcp_sock *tp = tcp_sk(sk);
	struct np_tcp_val *v;
	__u16 segs;

	if (!tp)
		return;
	v = sock_val(sk, tp);
	if (!v)
		return;
	note_total_retrans(v, tp);
	if (err) {
		v->retrans_fail++;
		return;
	}
	segs = cb->tcp_gso_segs;
	v->retrans_segs += segs ? segs : 1;
	v->last_stamp_us = tp->tcp_mstamp;
}

/* tcp:tcp_retransmit_skb with its err argument (kernels whose
 * btf_trace_tcp_retransmit_skb has three arguments: 6.18 does, 6.12 does
 * not). It fires for every attempt, failed ones too. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(np_tcp_retrans, const struct sock *sk, const struct sk_buff *skb, int err)
{
	count_retrans(sk, skb, err);
	return 0;
}

/* tcp:tcp_retransmit_skb on kernels where it has two arguments (6.1,
 * 6.12): there it fires only after a successful retransmit, so there are
 * no failed attempts to count (user space reports them n/a).
 * tcpstats.Spec loads this program or np_tcp_retrans, by the tracepoint's
 * BTF. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(np_tcp_rtx_ok, const struct sock *sk, const struct sk_buff *skb)
{
	count_retrans(sk, skb, 0);
	return 0;
}
