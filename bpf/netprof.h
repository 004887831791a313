/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Types shared by netprof's BPF programs and read by user space (bpf2go
 * generates Go types from them). Every counter is a running total kept in
 * the kernel; user space takes differences per interval. */
#ifndef NETPROF_H
#define NETPROF_H

/* Flow key: network namespace + interface + 5-tuple, oriented from the
 * local end (l*) to the remote end (r*) in that namespace. IPv4 addresses
 * (and IPv4-mapped IPv6 ones) use the first 4 bytes with family 4. */
struct np_flow_key {
	__u64 netns;   /* net->ns.inum */
	__u32 ifindex; /* 0 for socket-level keys (tcp) */
	__u8 family;   /* 4 or 6 */
	__u8 proto;    /* IPPROTO_TCP, IPPROTO_UDP, ... */
	__u16 lport;   /* host byte order */
	__u8 laddr[16];
	__u8 raddr[16];
	__u16 rport; /* host byte order */
	__u16 pad1;
	__u32 pad2;
};

/* Per-direction counters: bytes are L2 frame bytes (skb->len plus the MAC
 * header, as netlink's interface counters count them); packets are segments
 * (gso_segs of a GSO/GRO skb, else 1); wire_bytes adds the L2-L4 headers
 * that segmentation repeats per segment. */
struct np_dir_counts {
	__u64 bytes;
	__u64 packets;
	__u64 skbs;
	__u64 wire_bytes;
};

struct np_flow_val {
	struct np_dir_counts rx;
	struct np_dir_counts tx;
};

struct np_iface_key {
	__u64 netns;
	__u32 ifindex;
	__u32 pad;
};

struct np_iface_val {
	struct np_dir_counts rx;
	struct np_dir_counts tx;
};

/* Per-CPU receive work: netif_receive_skb and napi_poll on this CPU. */
struct np_cpu_val {
	__u64 rx_bytes;
	__u64 rx_packets;
	__u64 rx_skbs;
	__u64 napi_polls;
	__u64 napi_packets;
	__u64 napi_budget_exhausted;
	/* Counts that no map entry holds: their key could not be inserted
	 * (table full). Bytes of flows that did not fit are never silently
	 * lost: they are here. */
	struct np_flow_val flow_lost;
	struct np_flow_val iface_lost;
};

/* Per-CPU softirq accounting (irq:softirq_entry/exit). *_start is the
 * bpf_ktime_get_ns() of a softirq still running, 0 when none. */
struct np_softirq_val {
	__u64 net_rx_ns;
	__u64 net_rx_count;
	__u64 net_rx_start;
	__u64 net_tx_ns;
	__u64 net_tx_count;
	__u64 net_tx_start;
};

/* RTT histogram: log-linear buckets over microseconds. Below 1024 us the
 * buckets are 8 us wide (128 buckets); from 1024 us each power of two is
 * split into 8 equal buckets (12.5% resolution) up to 2^32 us. */
#define NP_RTT_LINEAR_SHIFT 3
#define NP_RTT_LINEAR_BUCKETS 128
#define NP_RTT_LOG_FIRST 10
#define NP_RTT_SUB_BITS 3
#define NP_RTT_BUCKETS (NP_RTT_LINEAR_BUCKETS + (32 - NP_RTT_LOG_FIRST) * (1 << NP_RTT_SUB_BITS))

/* Per-socket TCP statistics (tcp:tcp_probe, tcp:tcp_retransmit_skb). */
struct np_tcp_val {
	__u64 rtt_samples;
	__u64 rtt_sum_us;
	__u64 retrans_segs;  /* tcp_skb_pcount of retransmitted skbs (err == 0) */
	__u64 retrans_fail;  /* retransmit attempts that failed (err != 0) */
	__u32 rtt_min_us;    /* lifetime minimum of samples on this CPU */
	__u32 rtt_max_us;
	__u32 srtt_us;       /* last smoothed RTT seen (tp->srtt_us >> 3) */
	__u32 snd_cwnd;      /* last snd_cwnd, segments */
	__u32 min_rtt_us;    /* last tp->rtt_min (kernel's windowed min) */
	__u32 mss;           /* last tp->mss_cache */
	/* Largest tp->total_retrans seen (segments retransmitted over the
	 * socket's life, the counter TCP_INFO and TcpRetransSegs agree with). */
	__u32 total_retrans;
	/* tp->total_retrans when the entry was created: retransmits before
	 * netprof saw the socket (or before user space deleted its idle entry)
	 * are not this entry's. */
	__u32 total_retrans_base;
	/* tp->tcp_mstamp (µs, the socket's latest packet time) at the last
	 * update: orders the per-CPU copies (the largest is the newest) without
	 * a clock read (bpf_ktime_get_ns costs ~40 ns per event here). */
	__u64 last_stamp_us;
	__u32 rtt_hist[NP_RTT_BUCKETS];
};

/* Per-CPU counters of the tcp probe itself. */
struct np_tcp_stats {
	__u64 socks_refused; /* events of sockets the full table refused */
};

/* One TCP socket as the socket iterator (iter/tcp) writes it each
 * interval: the kernel's own running totals and latest values, read under
 * the socket lock, the figures TCP_INFO gives. Times of the chrono
 * accounting are in jiffies, with the chrono still running added up to
 * now; now_ns and now_jiffies are the clocks at the read (user space
 * converts jiffies with their ratio: no HZ needed). */
struct np_tcp_rec {
	struct np_flow_key key;
	__u64 now_ns;          /* bpf_ktime_get_ns() */
	__u64 now_jiffies;     /* bpf_jiffies64() */
	__u64 bytes_acked;     /* tp->bytes_acked */
	__u64 bytes_received;  /* tp->bytes_received */
	__u64 bytes_sent;      /* tp->bytes_sent (incl. retransmits) */
	__u64 bytes_retrans;   /* tp->bytes_retrans */
	__u64 busy_jiffies;    /* chrono_stat[TCP_CHRONO_BUSY - 1]: time with data to send, limited parts included (= tcpi_busy_time) */
	__u64 rwnd_limited_jiffies;
	__u64 sndbuf_limited_jiffies;
	__u32 segs_in, segs_out, data_segs_in, data_segs_out;
	__u32 total_retrans;   /* segments retransmitted over the socket's life */
	__u32 srtt_us;         /* tp->srtt_us >> 3 */
	__u32 min_rtt_us;      /* tp->rtt_min: windowed minimum */
	__u32 last_rtt_us;     /* tp->rack.rtt_us: the latest RTT sample */
	__u32 snd_cwnd;        /* segments */
	__u32 mss;             /* tp->mss_cache */
	__u32 snd_wnd;         /* peer's advertised window, bytes */
	__u32 rcv_wnd;         /* own advertised window, bytes */
	__u32 rate_delivered;  /* segments delivered in the last rate sample */
	__u32 rate_interval_us;
	__u8 rate_app_limited; /* the last rate sample was application-limited */
	__u8 state;            /* TCP_ESTABLISHED, ... */
	__u16 pad1;
	__u32 pad2;
};

/* drops.bpf.c: per-CPU array slot per drop reason (the last slot takes
 * larger reasons). */
#define NP_DROP_SLOTS 512

struct np_drop_val {
	__u64 packets;
	__u64 bytes;
};

#endif
