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

struct tcp_key_ent;

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
void *rmca_tcp_keytab_find(const struct tcp_keytab *t, uint64_t key);
/* Remove key; returns what it named, or NULL if it was not there. */
void *rmca_tcp_keytab_remove(struct tcp_keytab *t, uint64_t key);

#endif
