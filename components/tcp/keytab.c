/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Chained hash of remote keys. Keys come from getrandom, so their bits are
 * already well spread; a multiplicative hash still guards against a weak
 * source.
 */
#include <stdlib.h>

#include <rmca.h>
#include <rmca/component.h>

#include "keytab.h"

#define KEYTAB_MIN 64
#define KEYTAB_TRIES 16

static size_t slot(const struct tcp_keytab *t, uint64_t key)
{
	return rmca_tcp_keytab_slot(t, key);
}

int rmca_tcp_keytab_init(struct tcp_keytab *t,
			 int (*random)(void *buf, size_t len))
{
	t->buckets = calloc(KEYTAB_MIN, sizeof(*t->buckets));
	if (!t->buckets)
		return RMCA_ERR_NO_MEMORY;
	t->nbuckets = KEYTAB_MIN;
	t->count = 0;
	t->random = random;
	return 0;
}

void rmca_tcp_keytab_fini(struct tcp_keytab *t)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct tcp_key_ent *e = t->buckets[i], *n;

		for (; e; e = n) {
			n = e->next;
			free(e);
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	t->nbuckets = 0;
	t->count = 0;
}

static void grow(struct tcp_keytab *t)
{
	size_t n = t->nbuckets * 2, old_n = t->nbuckets;
	struct tcp_key_ent **old = t->buckets, **b = calloc(n, sizeof(*b));

	/* Without memory the table keeps working, only with longer chains. */
	if (!b)
		return;
	t->buckets = b;
	t->nbuckets = n;
	for (size_t i = 0; i < old_n; i++) {
		struct tcp_key_ent *e = old[i], *next;

		for (; e; e = next) {
			size_t s = slot(t, e->key);

			next = e->next;
			e->next = b[s];
			b[s] = e;
		}
	}
	free(old);
}

int rmca_tcp_keytab_add(struct tcp_keytab *t, bool use_once, void *val,
			uint64_t *key)
{
	struct tcp_key_ent *e;
	uint64_t k = 0;
	int tries;

	for (tries = 0; tries < KEYTAB_TRIES; tries++) {
		if (t->random(&k, sizeof(k)))
			return RMCA_ERR_AGAIN;
		if (use_once)
			k |= RMCA_KEY_USE_ONCE;
		else
			k &= ~RMCA_KEY_USE_ONCE;
		if (k && !rmca_tcp_keytab_find(t, k))
			break;
	}
	if (tries == KEYTAB_TRIES)
		return RMCA_ERR_AGAIN;

	e = malloc(sizeof(*e));
	if (!e)
		return RMCA_ERR_NO_MEMORY;
	if (t->count >= t->nbuckets)
		grow(t);
	e->key = k;
	e->val = val;
	e->next = t->buckets[slot(t, k)];
	t->buckets[slot(t, k)] = e;
	t->count++;
	*key = k;
	return 0;
}

void *rmca_tcp_keytab_remove(struct tcp_keytab *t, uint64_t key)
{
	struct tcp_key_ent **pp, *e;
	void *val;

	if (!key)
		return NULL;
	for (pp = &t->buckets[slot(t, key)]; (e = *pp); pp = &e->next) {
		if (e->key != key)
			continue;
		*pp = e->next;
		val = e->val;
		free(e);
		t->count--;
		return val;
	}
	return NULL;
}
