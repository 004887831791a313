//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* sockstate: TCP connection lifecycle (open, close, duration, bytes).
 *
 * sock:inet_sock_set_state (tp_btf; the tracepoint exists since 4.16,
 * tp_btf needs 5.5, bpf_get_socket_cookie in tracing programs 5.12: commit
 * c5dbb89fc2ac "bpf: Expose bpf_get_socket_cookie to tracing programs")
 * fires on every state change of an inet socket, in any namespace, from
 * process or softirq context. It is the one hook that sees both ends of a
 * connection's life without kprobes: an active open is SYN_SENT ->
 * ESTABLISHED, a passive open SYN_RECV -> ESTABLISHED (the child socket),
 * and every full TCP socket passes through -> CLOSE before it is freed
 * (tcp_done, tcp_close, tcp_disconnect, or tcp_time_wait handing over to a
 * timewait socket).
 *
 * Two events per connection go to a ring buffer (real events, one per
 * state change that matters, not per packet):
 *   open:  at -> ESTABLISHED; the socket's 4-tuple, netns, cookie, open
 *          time and direction are also stored in np_ss_conns, keyed by the
 *          socket cookie;
 *   close: at -> CLOSE for a socket found in np_ss_conns (then deleted),
 *          with the connection's final counters from struct tcp_sock.
 * Close is taken at -> CLOSE rather than at the first transition out of
 * ESTABLISHED so that bytes_acked and bytes_received are final (data in
 * flight at FIN_WAIT1 is acknowledged later). The 4-tuple is taken at open:
 * at -> CLOSE, tcp_set_state has already released the local port
 * (inet_put_port zeroes inet_num).
 *
 * Lost events are counted per CPU, never silently dropped: ring-buffer
 * reservations that failed (buffer full) and connections whose start could
 * not be stored (np_ss_conns full: their close cannot be reported). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "np_cast.h"
#include "np_const.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* One connection as seen at open: local (l*) and remote (r*) end in its
 * namespace. IPv4 and IPv4-mapped IPv6 addresses use the first 4 bytes
 * with family 4. Ports in host byte order. */
struct np_sock_conn {
	__u64 netns;   /* net->ns.inum */
	__u64 cookie;  /* socket cookie (bpf_get_socket_cookie, as `ss -e` sk:) */
	__u64 open_ns; /* bpf_ktime_get_ns() at -> ESTABLISHED */
	__u8 laddr[16];
	__u8 raddr[16];
	__u16 lport;
	__u16 rport;
	__u8 family; /* 4 or 6 */
	__u8 active; /* 1: connect() (from SYN_SENT), 0: accept() (from SYN_RECV) */
	__u8 pad[2];
};

#define NP_SOCK_OPEN 1
#define NP_SOCK_CLOSE 2
#define NP_SOCK_HAVE_SEGS 1 /* segs_in/segs_out exist in struct tcp_sock */

/* A ring-buffer record. Counters are the connection's totals at the event
 * (struct tcp_sock): bytes_acked/bytes_received (RFC 4898, kernel >= 4.1/4.2;
 * sequence space: payload plus one per SYN sent and per FIN), total_retrans
 * (segments), segs_out/segs_in (segments incl. pure ACKs, kernel >= 4.6). */
struct np_sock_event {
	struct np_sock_conn conn;
	__u64 close_ns; /* bpf_ktime_get_ns() at -> CLOSE; 0 on open events */
	__u64 bytes_acked;
	__u64 bytes_received;
	__u32 total_retrans;
	__u32 segs_out;
	__u32 segs_in;
	__u8 kind;       /* NP_SOCK_OPEN or NP_SOCK_CLOSE */
	__u8 from_state; /* close: the state left for CLOSE (TCP_FIN_WAIT2, ...) */
	__u8 flags;      /* NP_SOCK_HAVE_SEGS */
	__u8 pad;
};

/* Emit struct np_sock_event into BTF for bpf2go (the ring buffer's records
 * are untyped). */
const struct np_sock_event *unused_np_sock_event __attribute__((unused));

/* Running totals per CPU; user space takes differences. */
struct np_sock_stats {
	__u64 opens;           /* -> ESTABLISHED seen */
	__u64 closes;          /* -> CLOSE of a tracked connection */
	__u64 ring_fail;       /* events lost: ring buffer full */
	__u64 conn_fail;       /* opens not stored: np_ss_conns full */
	/* -> CLOSE of a socket not in np_ss_conns: listeners, failed
	 * handshakes, connections opened before attach or not stored
	 * (already counted in conn_fail). Not itself a loss. */
	__u64 untracked_close;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH); /* not LRU: an eviction would lose a close */
	__uint(max_entries, 65536);      /* set by user space */
	__type(key, __u64);              /* socket cookie */
	__type(value, struct np_sock_conn);
} np_ss_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* bytes, set by user space */
} np_ss_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_sock_stats);
} np_ss_stats SEC(".maps");

/* conn_tuple fills c's namespace, family, addresses and ports from sk,
 * read directly (a tp_btf argument is a BTF pointer: plain loads, no helper
 * calls); it returns false for a family other than AF_INET/AF_INET6. */
static __always_inline bool conn_tuple(const struct sock *sk, struct np_sock_conn *c)
{
	const struct sock_common *sc = &sk->__sk_common;
	__u16 family = sc->skc_family;

	c->netns = sc->skc_net.net->ns.inum;
	c->lport = sc->skc_num;
	c->rport = bpf_ntohs(sc->skc_dport);
	if (family == AF_INET) {
		__u32 a = sc->skc_rcv_saddr;

		c->family = 4;
		__builtin_memcpy(c->laddr, &a, 4);
		a = sc->skc_daddr;
		__builtin_memcpy(c->raddr, &a, 4);
		return true;
	}
	if (family != AF_INET6)
		return false;
	__u32 l[4], r[4];
	for (int i = 0; i < 4; i++) {
		l[i] = sc->skc_v6_rcv_saddr.in6_u.u6_addr32[i];
		r[i] = sc->skc_v6_daddr.in6_u.u6_addr32[i];
	}
	/* A dual-stack socket talking IPv4 has IPv4-mapped addresses: report
	 * it as IPv4, as tcp.bpf.c's sock_key does. */
	if (r[0] == 0 && r[1] == 0 && r[2] == bpf_htonl(0x0000ffff)) {
		c->family = 4;
		__builtin_memcpy(c->laddr, &l[3], 4);
		__builtin_memcpy(c->raddr, &r[3], 4);
		return true;
	}
	c->family = 6;
	__builtin_memcpy(c->laddr, l, 16);
	__builtin_memcpy(c->raddr, r, 16);
	return true;
}

/* wakeup_flag returns the ring-buffer submit flag of an event. By default
 * the kernel wakes the reader for every record submitted to an empty ring:
 * an irq_work, which costs a self-IPI, a VM exit on a virtual machine
 * (measured: 2-6 us per event here, against a few hundred ns without it).
 * The reader does not need that: it drains the ring once per interval
 * (sockstate.Reader.Drain flushes it). So the reader is only woken when the
 * ring is a quarter full, early enough that a burst of connections does
 * not fill it before the next interval. */
static __always_inline __u64 wakeup_flag(void)
{
	__u64 avail = bpf_ringbuf_query(&np_ss_events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&np_ss_events, BPF_RB_RING_SIZE);

	return avail >= size / 4 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* emit sends one event with sk's current counters; when the ring buffer is
 * full the event is counted in ring_fail instead. */
static __always_inline void emit(const struct sock *sk, const struct np_sock_conn *c,
				 __u8 kind, __u8 from, __u64 close_ns, struct np_sock_stats *st)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct np_sock_event *e;

	if (!tp)
		return;
	e = bpf_ringbuf_reserve(&np_ss_events, sizeof(*e), 0);
	if (!e) {
		if (st)
			st->ring_fail++;
		return;
	}
	__builtin_memcpy(&e->conn, c, sizeof(*c));
	e->close_ns = close_ns;
	e->bytes_acked = tp->bytes_acked;
	e->bytes_received = tp->bytes_received;
	e->total_retrans = tp->total_retrans;
	e->segs_out = 0;
	e->segs_in = 0;
	e->flags = 0;
	if (bpf_core_field_exists(tp->segs_out) && bpf_core_field_exists(tp->segs_in)) {
		e->segs_out = tp->segs_out;
		e->segs_in = tp->segs_in;
		e->flags = NP_SOCK_HAVE_SEGS;
	}
	e->kind = kind;
	e->from_state = from;
	e->pad = 0;
	bpf_ringbuf_submit(e, wakeup_flag());
}

static __always_inline void on_open(const struct sock *sk, int oldstate, struct np_sock_stats *st)
{
	struct np_sock_conn c = {};

	if (!conn_tuple(sk, &c))
		return;
	c.cookie = bpf_get_socket_cookie((void *)sk);
	c.open_ns = bpf_ktime_get_ns();
	c.active = oldstate == TCP_SYN_SENT;
	if (st)
		st->opens++;
	if (bpf_map_update_elem(&np_ss_conns, &c.cookie, &c, BPF_ANY) && st)
		st->conn_fail++;
	emit(sk, &c, NP_SOCK_OPEN, 0, 0, st);
}

static __always_inline void on_close(const struct sock *sk, int oldstate, struct np_sock_stats *st)
{
	__u64 cookie = bpf_get_socket_cookie((void *)sk);
	struct np_sock_conn *c;

	c = bpf_map_lookup_elem(&np_ss_conns, &cookie);
	if (!c) {
		if (st)
			st->untracked_close++;
		return;
	}
	if (st)
		st->closes++;
	emit(sk, c, NP_SOCK_CLOSE, (__u8)oldstate, bpf_ktime_get_ns(), st);
	bpf_map_delete_elem(&np_ss_conns, &cookie);
}

/* sock:inet_sock_set_state (tp_btf, Linux >= 5.12 for the socket cookie).
 * TCP only (sk_protocol, a plain u16 since 5.6). Opens are -> ESTABLISHED
 * from SYN_SENT (active) or SYN_RECV (passive); closes are -> CLOSE. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(np_ss_state, const struct sock *sk, const int oldstate, const int newstate)
{
	struct np_sock_stats *st;
	__u32 zero = 0;

	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	if (newstate != TCP_ESTABLISHED && newstate != TCP_CLOSE)
		return 0;
	st = bpf_map_lookup_elem(&np_ss_stats, &zero);
	if (newstate == TCP_ESTABLISHED) {
		if (oldstate == TCP_SYN_SENT || oldstate == TCP_SYN_RECV)
			on_open(sk, oldstate, st);
		return 0;
	}
	on_close(sk, oldstate, st);
	return 0;
}
