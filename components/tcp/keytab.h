/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The module-wide table of remote keys: random non-zero 64-bit keys, bit 63
 * (RMCA_KEY_USE_ONCE) set exactly for use-once regions, hashed to the
 * region they name.
 */
#ifndef RMCA_TCP_KEYTAB_H
#define RMCA_TCP_KEYTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tcp_key_ent {
	uint64_t key;
	void *val;
	struct tcp_key_ent *next;
};

struct tcp_keytab {
	struct tcp_key_ent **buckets;
	size_t nbuckets; /* power of two */
	size_t count;
	int (*random)(void *buf, size_t len);
};

int rmca_tcp_keytab_init(struct tcp_keytab *t,
			 int (*random)(void *buf, size_t len));
void rmca_tcp_keytab_fini(struct tcp_keytab *t);
/* Draw a fresh key for val and insert it; 0 or a negative rmca_status. */
int rmca_tcp_keytab_add(struct tcp_keytab *t, bool use_once, void *val,
			uint64_t *key);

/* key's bucket. Keys come from getrandom, so their bits are already well
 * spread; a multiplicative hash still guards against a weak source. */
static inline size_t rmca_tcp_keytab_slot(const struct tcp_keytab *t,
					  uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) &
	       (t->nbuckets - 1);
}

/* What key names, or NULL. Inline: every remote access looks its key up. */
static inline void *rmca_tcp_keytab_find(const struct tcp_keytab *t,
					 uint64_t key)
{
	const struct tcp_key_ent *e;

	if (!key)
		return NULL;
	for (e = t->buckets[rmca_tcp_keytab_slot(t, key)]; e; e = e->next)
		if (e->key == key)
			return e->val;
	return NULL;
}

/* Remove key; returns what it named, or NULL if it was not there. */
void *rmca_tcp_keytab_remove(struct tcp_keytab *t, uint64_t key);

#endif
