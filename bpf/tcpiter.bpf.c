//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tcpiter: every TCP socket of a network namespace, read once per
 * interval by a BPF socket iterator (iter/tcp, Linux >= 5.9): no program
 * runs per packet. User space opens the iterator in each namespace it
 * watches (the iterator walks the sockets of the namespace that opens it)
 * and reads one np_tcp_rec per full socket: the kernel's running totals
 * (bytes, segments, total_retrans), the latest srtt, windowed min RTT,
 * RTT sample, cwnd, windows and delivery rate sample, and the chrono
 * accounting of what limited the sender (busy, receive window, send
 * buffer), the figures TCP_INFO gives. The iterator holds the socket's
 * lock while this program runs (Linux >= 5.15; before, fields may be read
 * while the socket is being updated). Listening, TIME_WAIT and request
 * sockets are skipped.
 *
 * A socket that closes between two reads would lose its last interval to
 * the iterator (it is gone by the next read). So np_tcp_close, on
 * sock:inet_sock_set_state (one event per state change, never per
 * packet), writes the same record of every TCP socket reaching CLOSE (its
 * counters final) into np_tcp_closed, which user space drains at each read
 * before iterating. A socket closed while the table is full is counted in
 * np_tcp_closed_lost. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "netprof.h"
#include "np_sock.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Final records of sockets that closed since user space last drained it,
 * by flow key. Shared by all CPUs (no per-CPU memory). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set by user space */
	__type(key, struct np_flow_key);
	__type(value, struct np_tcp_rec);
} np_tcp_closed SEC(".maps");

/* Closed sockets np_tcp_closed had no room for (running total). */
__u64 np_tcp_closed_lost = 0;

/* Puts np_tcp_rec in the object's BTF for bpf2go (-type np_tcp_rec). */
const struct np_tcp_rec *np_tcp_rec_type __attribute__((unused));

/* chrono_stat index of each chrono type (TCP_CHRONO_BUSY = 1, ...). */
#define NP_CHRONO_BUSY 1
#define NP_CHRONO_RWND 2
#define NP_CHRONO_SNDBUF 3

/* fill_rec fills r from tp (not its key). */
static __always_inline void fill_rec(struct tcp_sock *tp, struct np_tcp_rec *r)
{
	__u32 now32, type;

	r->now_ns = bpf_ktime_get_ns();
	r->now_jiffies = bpf_jiffies64();
	r->state = tp->inet_conn.icsk_inet.sk.__sk_common.skc_state;
	r->bytes_acked = tp->bytes_acked;
	r->bytes_received = tp->bytes_received;
	r->bytes_sent = tp->bytes_sent;
	r->bytes_retrans = tp->bytes_retrans;
	r->segs_in = tp->segs_in;
	r->segs_out = tp->segs_out;
	r->data_segs_in = tp->data_segs_in;
	r->data_segs_out = tp->data_segs_out;
	r->total_retrans = tp->total_retrans;
	r->srtt_us = tp->srtt_us >> 3;
	r->min_rtt_us = tp->rtt_min.s[0].v;
	r->last_rtt_us = tp->rack.rtt_us;
	r->snd_cwnd = tp->snd_cwnd;
	r->mss = tp->mss_cache;
	r->snd_wnd = tp->snd_wnd;
	r->rcv_wnd = tp->rcv_wnd;
	r->rate_delivered = tp->rate_delivered;
	r->rate_interval_us = tp->rate_interval_us;
	/* Bitfields in some kernels' tcp_sock: read with CO-RE bit offsets. */
	r->rate_app_limited = BPF_CORE_READ_BITFIELD(tp, rate_app_limited);
	r->busy_jiffies = tp->chrono_stat[NP_CHRONO_BUSY - 1];
	r->rwnd_limited_jiffies = tp->chrono_stat[NP_CHRONO_RWND - 1];
	r->sndbuf_limited_jiffies = tp->chrono_stat[NP_CHRONO_SNDBUF - 1];
	/* The chrono running now counts up to now, as tcp_get_info adds it
	 * (tcp_jiffies32 is the low 32 bits of jiffies). */
	type = BPF_CORE_READ_BITFIELD(tp, chrono_type);
	now32 = (__u32)r->now_jiffies;
	if (type == NP_CHRONO_BUSY)
		r->busy_jiffies += now32 - tp->chrono_start;
	else if (type == NP_CHRONO_RWND)
		r->rwnd_limited_jiffies += now32 - tp->chrono_start;
	else if (type == NP_CHRONO_SNDBUF)
		r->sndbuf_limited_jiffies += now32 - tp->chrono_start;
}

SEC("iter/tcp")
int np_tcp_iter(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct np_tcp_rec r = {};
	struct tcp_sock *tp;

	/* A socket the iterator took before it closed can still be shown in
	 * CLOSE: np_tcp_close has its final record. */
	if (!skc || skc->skc_state == TCP_LISTEN || skc->skc_state == TCP_CLOSE)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc); /* NULL for TIME_WAIT and request sockets */
	if (!tp)
		return 0;
	if (!sock_key((const struct sock *)tp, &r.key))
		return 0;
	fill_rec(tp, &r);
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

/* sock:inet_sock_set_state: a TCP socket reaching CLOSE leaves its final
 * record. By then tcp_set_state may have released an automatically bound
 * local port (inet_num is 0); inet_sport still holds it. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(np_tcp_close, const struct sock *sk, const int oldstate, const int newstate)
{
	struct np_tcp_rec r = {};
	struct tcp_sock *tp;

	if (newstate != TCP_CLOSE || sk->sk_protocol != IPPROTO_TCP)
		return 0;
	tp = bpf_skc_to_tcp_sock((void *)sk);
	if (!tp)
		return 0;
	if (!sock_key(sk, &r.key))
		return 0;
	if (r.key.lport == 0)
		r.key.lport = bpf_ntohs(tp->inet_conn.icsk_inet.inet_sport);
	fill_rec(tp, &r);
	if (bpf_map_update_elem(&np_tcp_closed, &r.key, &r, BPF_ANY))
		__sync_fetch_and_add(&np_tcp_closed_lost, 1);
	return 0;
}
