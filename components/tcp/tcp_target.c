/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The target's side of one-sided operations: every remote access is checked
 * against the key table, and against the connection a use-once key is bound
 * to, before a byte is read or written.
 */
#include <stdlib.h>

#include "tcp.h"

struct tcp_rkey *rmca_tcp_rkey_new(struct tcp_mr *mr, struct tcp_conn *c)
{
	struct tcp_rkey *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	if (rmca_tcp_keytab_add(&mr->mod->keys, mr->access & RMCA_MR_USE_ONCE,
				k, &k->key)) {
		free(k);
		return NULL;
	}
	k->mr = mr;
	k->conn = c;
	rmca_list_add_tail(&mr->keys, &k->mr_link);
	rmca_list_init(&k->conn_link);
	if (c)
		rmca_list_add_tail(&c->keys, &k->conn_link);
	return k;
}

void rmca_tcp_rkey_free(struct tcp_rkey *k)
{
	rmca_tcp_keytab_remove(&k->mr->mod->keys, k->key);
	rmca_list_del(&k->mr_link);
	rmca_list_del(&k->conn_link);
	free(k);
}

/* Revoke a use-once key named by a send-with-invalidate arriving on c. */
uint64_t rmca_tcp_revoke(struct tcp_module *m, const struct tcp_conn *c,
			 uint64_t rkey)
{
	struct tcp_rkey *k = rmca_tcp_key_on(m, c, rkey);

	if (!k || !(k->mr->access & RMCA_MR_USE_ONCE))
		return 0; /* revoked nothing: the completion says 0 */
	rmca_tcp_rkey_free(k);
	return rkey;
}
