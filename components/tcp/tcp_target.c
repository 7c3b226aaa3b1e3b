/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The target's side of one-sided operations: every remote access is checked
 * against the key table before a byte is read or written.
 */
#include "tcp.h"

int rmca_tcp_access(struct tcp_module *m, uint64_t rkey, uint64_t raddr,
		    uint64_t len, unsigned need, char **ptr,
		    const struct rmca_module_mr **region)
{
	struct rmca_module_mr *mr = rmca_tcp_keytab_find(&m->keys, rkey);
	uint64_t base, off;

	if (!mr || (mr->access & need) != need)
		return RMCA_ERR_REMOTE_ACCESS;
	base = (uint64_t)(uintptr_t)mr->addr;
	if (raddr < base)
		return RMCA_ERR_REMOTE_ACCESS;
	off = raddr - base;
	if (off > mr->len || len > mr->len - off)
		return RMCA_ERR_REMOTE_ACCESS;
	if (need == RMCA_ACCESS_REMOTE_ATOMIC && (raddr & 7))
		return RMCA_ERR_REMOTE_ACCESS;
	*ptr = mr->addr + off;
	if (region)
		*region = mr;
	return 0;
}

/* Revoke a use-once key named by a send-with-invalidate. */
uint64_t rmca_tcp_revoke(struct tcp_module *m, uint64_t rkey)
{
	struct rmca_module_mr *mr = rmca_tcp_keytab_find(&m->keys, rkey);

	if (!mr || !(mr->access & RMCA_MR_USE_ONCE))
		return 0; /* revoked nothing: the completion says 0 */
	rmca_tcp_keytab_remove(&m->keys, rkey);
	mr->in_table = false;
	return rkey;
}
