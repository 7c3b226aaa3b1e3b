/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One tcp module: its listening socket, its address blob, its key table and
 * memory registrations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"
#include "tcp_iface.h"

static int tcp_addr(struct rmca_module *mod, void *buf, size_t *len)
{
	struct tcp_module *m = rmca_container_of(mod, struct tcp_module, base);
	struct tcp_addr_blob b = {
		.magic = { 'R', 'T', 'C', 'P' },
		.version = TCP_PROTO_VERSION,
	};

	if (*len < sizeof(b))
		return RMCA_ERR_INVALID;
	/* The port opens when a hello first needs it, not at rmca_init. */
	if (rmca_tcp_listen(m))
		return RMCA_ERR_NOT_FOUND;
	b.port[0] = (uint8_t)m->port;
	b.port[1] = (uint8_t)(m->port >> 8);
	memcpy(buf, &b, sizeof(b));
	*len = sizeof(b);
	return 0;
}

int rmca_tcp_addr_check(const void *addr, size_t len, char *why,
			size_t why_len)
{
	const struct tcp_addr_blob *b = addr;

	if (len < sizeof(*b) || memcmp(b->magic, "RTCP", 4)) {
		snprintf(why, why_len, "not a tcp address");
		return 0;
	}
	if (b->version != TCP_PROTO_VERSION) {
		snprintf(why, why_len, "tcp protocol version %u, want %u",
			 b->version, TCP_PROTO_VERSION);
		return 0;
	}
	if (!b->port[0] && !b->port[1]) {
		snprintf(why, why_len, "peer has no tcp port");
		return 0;
	}
	return 1;
}

static int tcp_reachable(struct rmca_module *mod, const void *addr,
			 size_t len, char *why, size_t why_len)
{
	return rmca_tcp_addr_check(addr, len, why, why_len);
}

/* The peer's tcp, on the route within tcp_if_include / tcp_if_exclude. */
static int tcp_reach(struct rmca_module *mod, const struct rmca_reach_args *a,
		     char *why, size_t why_len)
{
	if (!rmca_tcp_addr_check(a->peer_addr, a->peer_addr_len, why, why_len))
		return RMCA_REACH_NO;
	return rmca_tcp_route_check(mod->core, a->peer_host, why, why_len);
}

int rmca_tcp_mr_reg(struct rmca_module *mod, void *addr, size_t len,
		    unsigned access, struct rmca_module_mr **out)
{
	struct tcp_mr *mr = calloc(1, sizeof(*mr));

	if (!mr)
		return RMCA_ERR_NO_MEMORY;
	mr->base.module = mod;
	mr->mod = rmca_container_of(mod, struct tcp_module, base);
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	rmca_list_init(&mr->keys);
	/* A use-once region gets a key per connection when one is asked. */
	if (!(access & RMCA_MR_USE_ONCE) && !rmca_tcp_rkey_new(mr, NULL)) {
		free(mr);
		return RMCA_ERR_NO_MEMORY;
	}
	*out = tcp_mr_base(mr);
	return 0;
}

/* Once this returns, no access in flight touches the region (doc/api.md). */
int rmca_tcp_mr_dereg(struct rmca_module_mr *base)
{
	struct tcp_mr *mr = tcp_mr_from_base(base);
	struct rmca_list *l, *next;
	struct tcp_rkey *k;

	for (l = mr->mod->conns.next; l != &mr->mod->conns; l = next) {
		next = l->next;
		rmca_tcp_conn_mr_gone(rmca_list_entry(l, struct tcp_conn, link),
				      mr);
	}
	while ((k = rmca_list_first(&mr->keys, struct tcp_rkey, mr_link)))
		rmca_tcp_rkey_free(k);
	free(mr);
	return 0;
}

/* mr's live key for c, or NULL. */
static struct tcp_rkey *key_for(struct tcp_mr *mr, const struct tcp_conn *c)
{
	for (struct rmca_list *l = mr->keys.next; l != &mr->keys; l = l->next) {
		struct tcp_rkey *k =
			rmca_list_entry(l, struct tcp_rkey, mr_link);

		if (!k->conn || k->conn == c)
			return k;
	}
	return NULL;
}

/* A use-once key serves one transaction on one connection: once revoked,
 * the region gets a fresh key the next time one is handed out there. */
uint64_t rmca_tcp_mr_rkey(struct rmca_module_mr *base, struct rmca_conn *conn)
{
	struct tcp_mr *mr = tcp_mr_from_base(base);
	struct tcp_conn *c = tcp_conn_from_base(conn);
	struct tcp_rkey *k = key_for(mr, c);

	if (!k && c && (mr->access & RMCA_MR_USE_ONCE))
		k = rmca_tcp_rkey_new(mr, c);
	return k ? k->key : 0;
}

static int tcp_key_match(struct rmca_module_mr *mr, struct rmca_conn *c,
			 uint64_t rkey)
{
	struct tcp_rkey *k =
		key_for(tcp_mr_from_base(mr), tcp_conn_from_base(c));

	return k && k->key == rkey;
}

/* The core's revoke message path (send_inv masked away). */
static int tcp_revoke(struct rmca_module_mr *mr, struct rmca_conn *c,
		      uint64_t rkey)
{
	struct tcp_rkey *k =
		key_for(tcp_mr_from_base(mr), tcp_conn_from_base(c));

	if (k && k->conn && k->key == rkey)
		rmca_tcp_rkey_free(k);
	return 0;
}

static const struct rmca_module_ops tcp_module_ops = {
	.addr = tcp_addr,
	.atomic = rmca_tcp_atomic,
	.connect_abort = rmca_tcp_connect_abort,
	.connect_poll = rmca_tcp_connect_poll,
	.connect_start = rmca_tcp_connect_start,
	.disconnect = rmca_tcp_disconnect,
	.flush = rmca_tcp_flush,
	.get = rmca_tcp_get,
	.key_match = tcp_key_match,
	.mr_dereg = rmca_tcp_mr_dereg,
	.mr_reg = rmca_tcp_mr_reg,
	.mr_rkey = rmca_tcp_mr_rkey,
	.progress = rmca_tcp_progress,
	.progress_due = rmca_tcp_progress_due,
	.put = rmca_tcp_put,
	.reachable = tcp_reachable,
	.reach = tcp_reach,
	.recv = rmca_tcp_recv,
	.revoke = tcp_revoke,
	.send = rmca_tcp_send,
	.send_inv = rmca_tcp_send_inv,
};

int rmca_tcp_module_create(const struct rmca_core *core, const char *device,
			   struct tcp_module **out)
{
	struct tcp_module *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return RMCA_ERR_NO_MEMORY;
	m->base.ops = &tcp_module_ops;
	m->base.core = core;
	snprintf(m->base.device, sizeof(m->base.device), "%s", device);
	m->base.caps = RMCA_CAP_ATOMIC | RMCA_CAP_MASKED_ATOMIC |
		       RMCA_CAP_SEND_INV | RMCA_CAP_LOOPBACK |
		       RMCA_CAP_REMOTE_COMPLETION | RMCA_CAP_ATOMIC_CPU |
		       RMCA_CAP_SHORT_READ;
	m->spare_fd = -1;
	m->want_port = (int)core->ops->param_int(core, "tcp_port");
	/* A socket waits for its connect as long as a handshake may take. */
	m->pending_ms = (int)core->ops->param_int(core, "connect_timeout");
	if (m->pending_ms <= 0)
		m->pending_ms = 10000;
	m->sndbuf = core->ops->param_size(core, "tcp_sndbuf");
	m->rcvbuf = core->ops->param_size(core, "tcp_rcvbuf");
	m->max_answers = (int)core->ops->param_int(core,
						   "tcp_max_pending_responses");
	if (m->max_answers < TCP_MIN_PENDING_RESP)
		m->max_answers = TCP_MIN_PENDING_RESP;
	rmca_list_init(&m->pending);
	rmca_list_init(&m->conns);
	rmca_list_init(&m->dirty);
	rmca_list_init(&m->held);
	rmca_list_init(&m->spare_outs);
	m->req_offset = core->req_offset;
	rmca_list_init(&m->awaiting);
	m->io_direct = rmca_tcp_io_direct_ok();
	m->scratch = malloc(TCP_SCRATCH_LEN);
	if (!m->scratch) {
		free(m);
		return RMCA_ERR_NO_MEMORY;
	}
	r = rmca_tcp_keytab_init(&m->keys, core->ops->random);
	if (r) {
		free(m->scratch);
		free(m);
		return r;
	}
	snprintf(m->base.detail, sizeof(m->base.detail),
		 "if=%s listen=on first use atomics=cpu", device);
	*out = m;
	return 0;
}

void rmca_tcp_module_destroy(struct tcp_module *m)
{
	rmca_tcp_pending_free_all(m);
	rmca_tcp_listen_close(m);
	if (m->spare_fd >= 0)
		close(m->spare_fd);
	/* Regions still registered belong to the core, which deregisters them
	 * before closing; the table only holds pointers to them. */
	rmca_tcp_keytab_fini(&m->keys);
	free(m->laddrs);
	free(m->scratch);
	rmca_tcp_spares_free(m);
	free(m);
}
