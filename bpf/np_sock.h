/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* np_sock.h: a TCP socket's flow key, shared by the tcp probe (tp_btf)
 * and the socket iterator (iter/tcp). */
#ifndef NP_SOCK_H
#define NP_SOCK_H

#include "netprof.h"
#include "np_const.h"

/* sock_key fills k from the socket's common fields, read directly (tp_btf
 * arguments and iterator sockets are BTF pointers: plain loads, no helper
 * calls). It returns false for a family other than IPv4 and IPv6. */
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

#endif
