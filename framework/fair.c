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
 * The counts: an open-addressed table on a hash of the key (FNV-1a), with
 * linear probing at most half full. It is kept from call to call and
 * sized for the largest n asked (16 bytes a slot, four slots a waiting
 * connection with a wider source, two without): a call at the bound
 * allocates nothing once it is, and does not clear it either: a slot
 * belongs to the call whose generation it carries, the others are free.
 * The work: two passes over the connections, one lookup each (two with a
 * wider source). Without memory, every source counts alike: the lowest
 * rank, then the first.
 */
#include <stdlib.h>
#include <string.h>

#include "fair.h"

#define FAIR_KEY_MAX 255u      /* bytes of a key that count */
#define FAIR_GEN_MAX 0xffffffu /* generations fit above the length */

struct rmca_fair_slot {
	const uint8_t *key;
	uint32_t n;   /* connections of that source, the newcomer counted */
	uint32_t tag; /* gen << 8 | bytes of key; another gen: free */
};

/* The slot of key in this call's counts, taken if add and it has none;
 * NULL if absent or the table is full. */
static struct rmca_fair_slot *slot_of(struct rmca_fair *f, const void *key,
				      size_t len, bool add)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t tag = f->gen << 8 | (uint32_t)len;
	size_t mask = f->cap - 1, i;

	for (size_t b = 0; b < len; b++)
		h = (h ^ ((const uint8_t *)key)[b]) * 0x100000001b3ull;
	i = (size_t)h & mask;
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
