/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* netdev's per-CPU cache of interface and flow counters (BPF side only).
 *
 * A hash lookup costs ~90-100 ns per skb here (measured with BPF stats:
 * netif_receive_skb at ~200-280 ns/event with the interface and flow
 * lookups, ~85 ns without them, ~110-115 ns through this cache), and bulk
 * TCP hits the same few keys on a CPU over and over. So each CPU
 * keeps, in one per-CPU array value, a small 2-way set-associative cache of
 * interface and flow keys with the counts added since they were last
 * written to the hash maps (deltas, not totals). A hit adds to the slot and
 * touches no hash map.
 *
 * The hash maps stay the only thing user space reads, with the same
 * meaning as without the cache (running totals). A slot's deltas are added
 * to its key's hash entry (atomically; created if absent) and zeroed when
 *   - the slot is given to another key (write-back on replacement), or
 *   - user space flushes the CPU (np_nd_flush, below) before each read.
 * np_nd_flush runs on the CPU it flushes, from BPF_PROG_TEST_RUN with
 * BPF_F_TEST_RUN_ON_CPU: an IPI, so with interrupts off it cannot be
 * interleaved with the netdev programs of that CPU; it refuses (returns 1)
 * when it interrupted one of them (busy is set), and user space retries.
 * No count is ever in two places or lost between them, and reading never
 * zeroes anything user space reads.
 *
 * Misses: a key that finds its set's two ways taken is counted in the hash
 * directly (as without the cache); it takes over a way only when that
 * way's key was not hit since the set's previous miss (second chance), so
 * a stream of one-off flows cannot push out bulk ones. With many flows per
 * CPU, the cost per skb is about one hash operation, as without the cache.
 *
 * Until user space has checked that np_nd_flush works on every CPU it sets
 * np_nd_cache_on; before that, and when a program finds its CPU's cache
 * busy (a netdev program interrupted by another one, e.g. netpoll in hard
 * interrupt), skbs are counted in the hash maps directly. */
#ifndef NETDEV_CACHE_H
#define NETDEV_CACHE_H

#define NP_IFACE_SETS 8 /* interface sets (2 ways each), a power of two */
#define NP_IFACE_SET_BITS 3
#define NP_FLOW_SETS 32 /* flow sets (2 ways each), a power of two */
#define NP_FLOW_SET_BITS 5

struct np_iface_slot {
	struct np_iface_key key; /* netns 0: empty */
	struct np_iface_val d;   /* counts not yet in np_nd_ifaces */
};

struct np_flow_slot {
	struct np_flow_key key; /* netns 0: empty */
	struct np_flow_val d;   /* counts not yet in np_nd_flows */
};

struct np_nd_cache {
	__u32 busy; /* a netdev program of this CPU is using the cache */
	__u32 pad;
	__u8 iface_ref[NP_IFACE_SETS * 2]; /* way hit since the set's last miss */
	__u8 flow_ref[NP_FLOW_SETS * 2];
	struct np_iface_slot ifaces[NP_IFACE_SETS * 2];
	struct np_flow_slot flows[NP_FLOW_SETS * 2];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_nd_cache);
} np_nd_cache SEC(".maps");


/* Set by user space once np_nd_flush has run on every CPU (netdev.Reader). */
volatile __u32 np_nd_cache_on;

#define np_barrier() asm volatile("" ::: "memory")

/* What one skb adds to a direction's counters. */
struct np_inc {
	__u64 bytes;
	__u64 packets;
	__u64 wire_bytes;
};

static __always_inline void add_inc(struct np_dir_counts *c, const struct np_inc *in)
{
	c->bytes += in->bytes;
	c->packets += in->packets;
	c->skbs += 1;
	c->wire_bytes += in->wire_bytes;
}

static __always_inline void add_dir_counts(struct np_dir_counts *c, const struct np_dir_counts *d)
{
	c->bytes += d->bytes;
	c->packets += d->packets;
	c->skbs += d->skbs;
	c->wire_bytes += d->wire_bytes;
}

/* add_dir_atomic is add_dir_counts for a value other CPUs add to too (the
 * shared flow table): lock-prefixed adds, no fetch (BPF_XADD, every
 * kernel). */
static __always_inline void add_dir_atomic(struct np_dir_counts *c, const struct np_dir_counts *d)
{
	if (!d->skbs)
		return;
	__sync_fetch_and_add(&c->bytes, d->bytes);
	__sync_fetch_and_add(&c->packets, d->packets);
	__sync_fetch_and_add(&c->skbs, d->skbs);
	__sync_fetch_and_add(&c->wire_bytes, d->wire_bytes);
}

/* hash_add adds d (both directions) to key's entry of map, creating it if
 * absent. Another CPU may create it first (-EEXIST): not a failure. The
 * tables are shared by all CPUs, so the adds are atomic. Returns false when the entry can neither be
 * found nor created (map full): then d is added to *lost (this CPU's), so
 * the counts are never silently gone. */
static __always_inline bool hash_add(void *map, const void *key, const struct np_flow_val *d,
				     struct np_flow_val *lost)
{
	struct np_flow_val *v = bpf_map_lookup_elem(map, key);

	if (!v) {
		if (bpf_map_update_elem(map, key, d, BPF_NOEXIST) == 0)
			return true;
		v = bpf_map_lookup_elem(map, key);
		if (!v) {
			add_dir_counts(&lost->rx, &d->rx);
			add_dir_counts(&lost->tx, &d->tx);
			return false;
		}
	}
	add_dir_atomic(&v->rx, &d->rx);
	add_dir_atomic(&v->tx, &d->tx);
	return true;
}

/* np_iface_val and np_flow_val are the same two np_dir_counts: hash_add
 * serves both maps. */
_Static_assert(sizeof(struct np_iface_val) == sizeof(struct np_flow_val), "iface and flow values differ");

static __always_inline bool slot_dirty(const struct np_flow_val *d)
{
	return d->rx.skbs || d->tx.skbs;
}

static __always_inline void slot_zero(struct np_flow_val *d)
{
	__builtin_memset(d, 0, sizeof(*d));
}

/* write_back moves a slot's deltas into its hash entry. */
static __always_inline void write_back(void *map, const void *key, struct np_flow_val *d, struct np_flow_val *lost)
{
	if (!slot_dirty(d))
		return;
	hash_add(map, key, d, lost);
	slot_zero(d);
}

/* count_hash counts one skb directly in key's hash entry. */
static __always_inline void count_hash(void *map, const void *key, bool rx, const struct np_inc *in, struct np_flow_val *lost)
{
	struct np_flow_val d = {};

	add_inc(rx ? &d.rx : &d.tx, in);
	hash_add(map, key, &d, lost);
}

static __always_inline bool iface_eq(const struct np_iface_key *a, const struct np_iface_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
}

static __always_inline bool flow_eq(const struct np_flow_key *a, const struct np_flow_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	_Static_assert(sizeof(struct np_flow_key) == 7 * 8, "flow key is not 7 words");
	return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]) | (x[4] ^ y[4]) |
		(x[5] ^ y[5]) | (x[6] ^ y[6])) == 0;
}

static __always_inline __u32 iface_set(const struct np_iface_key *k)
{
	__u32 h = k->ifindex ^ (__u32)k->netns ^ (__u32)(k->netns >> 32);

	return (h * 0x9E3779B1u) >> (32 - NP_IFACE_SET_BITS);
}

static __always_inline __u32 flow_set(const struct np_flow_key *k)
{
	__u32 a, b;

	__builtin_memcpy(&a, k->laddr, 4);
	__builtin_memcpy(&b, k->raddr, 4);
	__u32 h = ((__u32)k->lport << 16 | k->rport) ^ k->ifindex ^ a ^ b ^ (__u32)k->netns;

	return (h * 0x9E3779B1u) >> (32 - NP_FLOW_SET_BITS);
}

/* pick_victim returns the way (0 or 1) a missing key may take in a set
 * whose refs are r, or -1 when both ways keep their keys (their refs are
 * then cleared: they must be hit again before the next miss). */
static __always_inline int pick_victim(bool empty0, bool empty1, __u8 *r)
{
	if (empty0)
		return 0;
	if (empty1)
		return 1;
	if (!r[0])
		return 0;
	if (!r[1])
		return 1;
	r[0] = 0;
	r[1] = 0;
	return -1;
}

/* np_slot returns way w (0 or 1) of the set whose first way is i, as an
 * index below n (a power of two). The mask is a no-op (i is even and below
 * n, w is 0 or 1), but barrier_var keeps the compiler from proving so and
 * dropping it: older verifiers (6.1) cannot bound i + w from the branches
 * of pick_victim and reject the access as unbounded. */
static __always_inline __u64 np_slot(__u64 i, int w, __u64 n)
{
	__u64 j = i + (__u64)w;

	barrier_var(j);
	return j & (n - 1);
}

/* np_set_first returns the first way of set h, masked for the verifier as
 * in np_slot. */
static __always_inline __u64 np_set_first(__u32 h, __u64 sets)
{
	__u64 i = h;

	barrier_var(i);
	return (i & (sets - 1)) * 2;
}

/* cache_iface counts one skb for interface key k through c. */
static __always_inline void cache_iface(struct np_nd_cache *c, const struct np_iface_key *k, bool rx,
					const struct np_inc *in, struct np_flow_val *lost)
{
	__u64 i = np_set_first(iface_set(k), NP_IFACE_SETS);
	struct np_iface_slot *s;
	__u64 j;
	int w;

	if (iface_eq(&c->ifaces[i].key, k)) {
		c->iface_ref[i] = 1;
		add_inc(rx ? &c->ifaces[i].d.rx : &c->ifaces[i].d.tx, in);
		return;
	}
	if (iface_eq(&c->ifaces[i + 1].key, k)) {
		c->iface_ref[i + 1] = 1;
		add_inc(rx ? &c->ifaces[i + 1].d.rx : &c->ifaces[i + 1].d.tx, in);
		return;
	}
	w = pick_victim(!c->ifaces[i].key.netns, !c->ifaces[i + 1].key.netns, &c->iface_ref[i]);
	if (w < 0) {
		count_hash(&np_nd_ifaces, k, rx, in, lost);
		return;
	}
	j = np_slot(i, w, NP_IFACE_SETS * 2);
	s = &c->ifaces[j];
	write_back(&np_nd_ifaces, &s->key, (struct np_flow_val *)&s->d, lost);
	s->key = *k;
	add_inc(rx ? &s->d.rx : &s->d.tx, in);
	c->iface_ref[j] = 1;
}

/* cache_flow counts one skb for flow key k through c. */
static __always_inline void cache_flow(struct np_nd_cache *c, const struct np_flow_key *k, bool rx,
				       const struct np_inc *in, struct np_flow_val *lost)
{
	__u64 i = np_set_first(flow_set(k), NP_FLOW_SETS);
	struct np_flow_slot *s;
	__u64 j;
	int w;

	if (flow_eq(&c->flows[i].key, k)) {
		c->flow_ref[i] = 1;
		add_inc(rx ? &c->flows[i].d.rx : &c->flows[i].d.tx, in);
		return;
	}
	if (flow_eq(&c->flows[i + 1].key, k)) {
		c->flow_ref[i + 1] = 1;
		add_inc(rx ? &c->flows[i + 1].d.rx : &c->flows[i + 1].d.tx, in);
		return;
	}
	w = pick_victim(!c->flows[i].key.netns, !c->flows[i + 1].key.netns, &c->flow_ref[i]);
	if (w < 0) {
		count_hash(&np_nd_flows, k, rx, in, lost);
		return;
	}
	j = np_slot(i, w, NP_FLOW_SETS * 2);
	s = &c->flows[j];
	write_back(&np_nd_flows, &s->key, &s->d, lost);
	s->key = *k;
	add_inc(rx ? &s->d.rx : &s->d.tx, in);
	c->flow_ref[j] = 1;
}

#endif
