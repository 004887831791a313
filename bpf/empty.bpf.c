//go:build ignore

// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* empty: one program that does nothing on each tracepoint netprof's probes
 * use, attached the same way (tp_btf). Its run_time_ns / run_cnt is the
 * floor of any program there: the trampoline into BPF, the recursion
 * guard and, with kernel.bpf_stats_enabled, the two clock reads of the
 * statistics. BenchmarkProbeCost puts each probe program beside it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(np_e_rx)
{
	return 0;
}

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(np_e_tx)
{
	return 0;
}

SEC("tp_btf/napi_poll")
int BPF_PROG(np_e_napi)
{
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(np_e_si_entry)
{
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(np_e_si_exit)
{
	return 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(np_e_tcp_probe)
{
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(np_e_retrans)
{
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(np_e_sock_state)
{
	return 0;
}
