/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Direct reads of kernel memory the verifier has no BTF type for (packet
 * headers, skb_shinfo), for BPF programs only.
 *
 * bpf_rdonly_cast (kfunc, Linux >= 6.2; commit a35b9af4ec2c "bpf: Add a
 * kfunc for generic type cast") turns any address into an untrusted
 * pointer to a kernel BTF type: its fields are then read with plain
 * PROBE_MEM loads (a fault reads 0), inlined by the JIT, where
 * bpf_probe_read_kernel costs a helper call per read. The verifier inlines
 * the kfunc itself to a register move. It is declared weak: on an older
 * kernel np_have_cast() is a constant false, the verifier removes the
 * branch that calls it, and callers fall back to bpf_probe_read_kernel. */
#ifndef NP_CAST_H
#define NP_CAST_H

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* np_have_cast reports whether the running kernel has bpf_rdonly_cast
 * (libbpf's bpf_ksym_exists, not in libbpf 1.1). */
#define np_have_cast() (!!bpf_rdonly_cast)

/* np_cast returns ptr as a read-only pointer to the kernel's type. */
#define np_cast(ptr, type) ((type *)bpf_rdonly_cast((ptr), bpf_core_type_id_kernel(type)))

/* tcp_sk returns sk, a full TCP socket (tcp.bpf.c's and sockstate.bpf.c's
 * tracepoints pass one), as a tcp_sock that fields are read from directly:
 * bpf_rdonly_cast (Linux >= 6.2, inlined to a move) or bpf_skc_to_tcp_sock
 * (5.9, a helper call). NULL if the latter refuses it. */
static __always_inline const struct tcp_sock *tcp_sk(const struct sock *sk)
{
	if (np_have_cast())
		return np_cast(sk, struct tcp_sock);
	return bpf_skc_to_tcp_sock((void *)sk);
}

#endif
