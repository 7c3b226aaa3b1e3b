/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * At a listener's bound, the waiting connection that gives way to a
 * newcomer. Fair to sources first: one of the source that holds the most,
 * the newcomer counted with its own, so that a source that connects as
 * fast as it can pushes out its own connections, never a peer elsewhere in
 * the middle of its handshake. A wider source (a user, before its
 * processes) is counted first. Within what remains, the caller's order:
 * the lowest rank (the core's listener: the silent first), then the first
 * the caller lists (the oldest). A connection that may not go (one whose
 * handshake is done) counts in its source all the same.
 *
 * The counts: an open-addressed table on a hash of the key, with linear
 * probing at most half full. The keys are the peers' own (their addresses):
 * with a hash they can compute, many addresses of one attacker land in one
 * run of slots and each lookup walks it, n^2 work at the bound (4 billion
 * probes a request at 65,536). So the hash is SipHash-2-4 under a key
 * drawn from the kernel when the table is made. The table is kept from
 * call to call and sized for the largest n asked (16 bytes a slot, four
 * slots a waiting connection with a wider source, two without): a call at
 * the bound allocates nothing once it is, and does not clear it either: a
 * slot belongs to the call whose generation it carries, the others are
 * free.
 * The work: two passes over the connections, one lookup each (two with a
 * wider source). Without memory, every source counts alike: the lowest
 * rank, then the first.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "fair.h"

#define FAIR_KEY_MAX 255u      /* bytes of a key that count */
#define FAIR_GEN_MAX 0xffffffu /* generations fit above the length */

struct rmca_fair_slot {
	const uint8_t *key;
	uint32_t n;   /* connections of that source, the newcomer counted */
	uint32_t tag; /* gen << 8 | bytes of key; another gen: free */
};

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return x << b | x >> (64 - b);
}

static inline void sip_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = rotl(v[1], 13) ^ v[0];
	v[0] = rotl(v[0], 32);
	v[2] += v[3];
	v[3] = rotl(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = rotl(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = rotl(v[1], 17) ^ v[2];
	v[2] = rotl(v[2], 32);
}

static uint64_t le64(const uint8_t *p, size_t n)
{
	uint64_t w = 0;

	while (n--)
		w |= (uint64_t)p[n] << (8 * n);
	return w;
}

static void sip_word(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sip_round(v);
	sip_round(v);
	v[0] ^= m;
}

uint64_t rmca_fair_hash(const uint64_t k[2], const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v[4] = {
		k[0] ^ 0x736f6d6570736575ull, k[1] ^ 0x646f72616e646f6dull,
		k[0] ^ 0x6c7967656e657261ull, k[1] ^ 0x7465646279746573ull};
	size_t i;

	for (i = 0; i + 8 <= len; i += 8)
		sip_word(v, le64(p + i, 8));
	sip_word(v, (uint64_t)len << 56 | le64(p + i, len - i));
	v[2] ^= 0xff;
	for (i = 0; i < 4; i++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* The slot of key in this call's counts, taken if add and it has none;
 * NULL if absent or the table is full. */
static struct rmca_fair_slot *slot_of(struct rmca_fair *f, const void *key,
				      size_t len, bool add)
{
	uint32_t tag = f->gen << 8 | (uint32_t)len;
	size_t mask = f->cap - 1;
	size_t i = (size_t)rmca_fair_hash(f->key, key, len) & mask;
	for (size_t probes = 0; probes < f->cap; probes++, i = (i + 1) & mask) {
		struct rmca_fair_slot *s = &f->t[i];

		if (s->tag >> 8 != f->gen) {
			if (!add)
				return NULL;
			s->key = key;
			s->tag = tag;
			s->n = 0;
			return s;
		}
		if (s->tag == tag && !memcmp(s->key, key, len))
			return s;
	}
	return NULL;
}

static size_t key_len(const struct rmca_fair_entry *e)
{
	return e->len < FAIR_KEY_MAX ? e->len : FAIR_KEY_MAX;
}

/* e counted with its source (and its wider source); false: no room. */
static bool count(struct rmca_fair *f, const struct rmca_fair_entry *e)
{
	size_t len = key_len(e);
	struct rmca_fair_slot *s = slot_of(f, e->key, len, true);

	if (!s)
		return false;
	s->n++;
	if (e->outer && e->outer < len) {
		s = slot_of(f, e->key, e->outer, true);
		if (!s)
			return false;
		s->n++;
	}
	return true;
}

/* What e's source holds: *wide of its wider source (or of its own),
 * *own of its own. */
static void held(struct rmca_fair *f, const struct rmca_fair_entry *e,
		 uint32_t *wide, uint32_t *own)
{
	size_t len = key_len(e);
	const struct rmca_fair_slot *s = slot_of(f, e->key, len, false);

	*own = s ? s->n : 1;
	*wide = *own;
	if (e->outer && e->outer < len) {
		s = slot_of(f, e->key, e->outer, false);
		*wide = s ? s->n : 1;
	}
}

/* A new key for a new table. Without the kernel's randomness (a sandbox
 * that forbids getrandom), the clock and an address: not secret, but not
 * one an attacker reads off the source either. */
static void fair_rekey(struct rmca_fair *f)
{
	struct timespec ts;

	if (getrandom(f->key, sizeof(f->key), GRND_NONBLOCK) ==
	    (ssize_t)sizeof(f->key))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	f->key[0] ^= (uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec;
	f->key[1] ^= (uint64_t)(uintptr_t)f->t;
}

/* Room for the counts of n connections and a newcomer, this call's
 * generation begun; false: none (every source then counts alike). */
static bool fair_begin(struct rmca_fair *f, size_t n, bool wide)
{
	size_t need = 2 * (n + 1) * (wide ? 2 : 1), cap = 16;

	while (cap < need)
		cap *= 2;
	if (cap > f->cap) {
		struct rmca_fair_slot *t = calloc(cap, sizeof(*t));

		if (!t)
			return false;
		free(f->t);
		f->t = t;
		fair_rekey(f);
		f->cap = cap;
		f->gen = 0;
	}
	if (f->gen == FAIR_GEN_MAX) {
		memset(f->t, 0, f->cap * sizeof(*f->t));
		f->gen = 0;
	}
	f->gen++;
	return true;
}

const void *rmca_fair_victim(struct rmca_fair *f, size_t n, rmca_fair_next next,
			     void *arg, const struct rmca_fair_entry *newcomer)
{
	const void *cur, *victim = NULL;
	uint32_t most_wide = 0, most_own = 0;
	unsigned low = 0;
	struct rmca_fair_entry e;
	bool counted = fair_begin(f, n, newcomer->outer != 0);

	if (counted) {
		counted = count(f, newcomer);
		for (cur = next(arg, NULL, &e); cur && counted;
		     cur = next(arg, cur, &e))
			counted = count(f, &e);
	}
	for (cur = next(arg, NULL, &e); cur; cur = next(arg, cur, &e)) {
		uint32_t wide = 1, own = 1;

		if (!e.may_go)
			continue;
		if (counted)
			held(f, &e, &wide, &own);
		if (victim &&
		    (wide < most_wide ||
		     (wide == most_wide &&
		      (own < most_own || (own == most_own && e.rank >= low)))))
			continue;
		victim = cur;
		most_wide = wide;
		most_own = own;
		low = e.rank;
	}
	return victim;
}

void rmca_fair_fini(struct rmca_fair *f)
{
	free(f->t);
	memset(f, 0, sizeof(*f));
}
