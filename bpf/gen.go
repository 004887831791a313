// Package bpf holds netprof's BPF programs (C, CO-RE against vmlinux.h) and
// their bpf2go-generated Go bindings, committed so that `go build` needs no
// clang. `make generate` regenerates them (clang-19 from Debian).
//
// Each probe family is one object: Netdev (net:netif_receive_skb,
// net:net_dev_start_xmit, napi:napi_poll), Softirq (irq:softirq_entry/exit),
// Tcp (tcp:tcp_probe, tcp:tcp_retransmit_skb), Tcpiter (iter/tcp: a
// socket iterator user space runs once per interval), Sockstate
// (sock:inet_sock_set_state), Drops (skb:kfree_skb), Empty (the cost benchmark's floor) and
// Primitives (single operations on net:netif_receive_skb, priced by
// BenchmarkProbePrimitives). All
// attached programs but Tcpiter's are tp_btf (BTF-enabled tracepoints, Linux >= 5.5 with
// CONFIG_DEBUG_INFO_BTF); Netdev's np_nd_flush is a raw_tp program that
// user space runs with BPF_PROG_TEST_RUN (netdev_cache.h). np_cast.h reads
// memory without a BTF type through bpf_rdonly_cast (Linux >= 6.2), with a
// bpf_probe_read_kernel fallback.
package bpf

//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf -type np_flow_key -type np_flow_val -type np_iface_key -type np_iface_val -type np_cpu_val Netdev netdev.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf -type np_softirq_val Softirq softirq.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf -type np_flow_key -type np_tcp_val -type np_tcp_stats Tcp tcp.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf -type np_sock_conn -type np_sock_event -type np_sock_stats Sockstate sockstate.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf -type np_tcp_rec Tcpiter tcpiter.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf -type np_drop_val Drops drops.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf Empty empty.bpf.c
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror -I./headers" -target bpfel -go-package bpf Primitives primitives.bpf.c
