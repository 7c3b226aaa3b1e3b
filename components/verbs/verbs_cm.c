/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_cm connection setup. Each module listens on its device's address
 * (port chosen by rdma_cm, published in addr()); the active side connects
 * to the address in the peer's blob, not to the bootstrap host, because
 * only that address is served by the peer's device.
 *
 * Both sides of one rmca connection know the same 64-bit token. The active
 * side carries it in the request's private data; the passive side accepts
 * the request whose token its connect_start() names. Requests that come
 * before their connect_start() are parked until it does; a peer sends them
 * at will, so they are bounded (RMCA_handshake_max; at the bound the
 * oldest of the address that parks the most goes) and each is rejected at
 * its deadline (RMCA_connect_timeout). What remains: many addresses can
 * still take every place between them, and the peers of one address (one
 * host, a NAT) share the fate of a flooder among them.
 *
 * Nothing here blocks: connect_start() begins (rdma_cm on the module's
 * non-blocking event channel), the module's event callbacks and progress
 * op advance every connection being set up, and connect_poll() hands a
 * connection out once it is UP, or ends it at its deadline. So one silent
 * peer costs a listener one pending connection, not its time.
 *
 * iWARP lets the active side speak first only. So the passive side posts one
 * internal receive before it accepts, the active side's first work request
 * is a small "hello" send into it, and the passive side is UP only once the
 * hello has arrived: from then on either side may send. Both devices get
 * the same handshake.
 *
 * On iwarp the active side is also UP only once the hello is known to be
 * taken: siw can leave it unread for ever. siw_accept() (siw_cm.c, Linux
 * 6.1) puts the endpoint in RDMA mode and sends the MPA reply before
 * siw_qp_socket_assoc() gives the socket's data_ready upcall to the QP; an
 * FPDU that lands in between wakes siw_cm_llp_data_ready(), which ignores
 * data in RDMA mode, and then sits in the socket until more data arrives.
 * The active side, answered, saw its connection up and moved on, while the
 * passive side waited for a hello that it would get only with the
 * active side's next message. So the active side posts a READ of the
 * peer's control line behind the hello and returns once one comes back
 * (RDMAP answers a READ only after the messages before it are placed);
 * until then it posts another READ now and then, whose arrival makes siw
 * read everything queued. A device with an ORD of 1 holds the later
 * READs back, and the wait is then only as good as the first one.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <endian.h>
#include <sys/epoll.h>

#include "verbs.h"

#define RD_ATOM_MAX 16
#define LOOPBACK_PROBE_MS 3000
#define LOOPBACK_ATTEMPTS 3
#define NUDGE_FIRST_MS 20 /* then doubling, up to NUDGE_STEP_MAX_MS */
#define NUDGE_STEP_MAX_MS 320
#define NUDGE_MAX 12

/*
 * The module's listener on its device address, on a port chosen as
 * verbs_port.c explains (on iWARP a port of the host's TCP port space).
 */
int rmca_verbs_cm_listen(struct rmca_verbs_module *vm)
{
	const struct rmca_core *core = vm->m.core;
	const char *what = "bind";
	int hold, err;

	if (rdma_create_id(vm->ec, &vm->listen_id, NULL, RDMA_PS_TCP))
		return RMCA_ERR_NO_MEMORY;
	err = rmca_verbs_cm_bind(vm, vm->listen_id, &hold);
	if (!err) {
		what = "listen";
		if (rdma_listen(vm->listen_id, 64))
			err = -errno;
	}
	rmca_verbs_port_release(&hold);
	if (!err) {
		vm->ip.sin_port = rdma_get_src_port(vm->listen_id);
		return 0;
	}
	rdma_destroy_id(vm->listen_id);
	vm->listen_id = NULL;
	core->ops->log(core, RMCA_LOG_WARN, "%s: cannot %s: %s", vm->m.device,
		       what, strerror(-err));
	return RMCA_ERR_UNREACHABLE;
}

static void pdata_fill(struct rmca_verbs_conn *c, struct rmca_verbs_pdata *pd)
{
	pd->magic = htole32(RMCA_VERBS_MAGIC);
	pd->ctl_rkey = htole32(c->ctl_pub->rkey);
	pd->token = htole64(c->token);
	pd->ctl_addr = htole64((uintptr_t)&c->ctl->posted);
}

/* 0, -1 (not ours), or the wire version of a peer that speaks another */
static int pdata_parse(const void *p, size_t len, struct rmca_verbs_pdata *out)
{
	uint32_t magic;

	if (!p || len < sizeof(*out))
		return -1;
	memcpy(out, p, sizeof(*out));
	magic = le32toh(out->magic);
	if ((magic & RMCA_VERBS_MAGIC_MASK) !=
	    (RMCA_VERBS_MAGIC & RMCA_VERBS_MAGIC_MASK))
		return -1;
	if (magic != RMCA_VERBS_MAGIC)
		return magic & 0xff ? (int)(magic & 0xff) : -1;
	out->token = le64toh(out->token);
	out->ctl_rkey = le32toh(out->ctl_rkey);
	out->ctl_addr = le64toh(out->ctl_addr);
	return 0;
}

/* A peer of another rmca release: say why its connection cannot be. */
static void version_refused(struct rmca_verbs_module *vm, int version)
{
	const struct rmca_core *core = vm->m.core;

	core->ops->log(core, RMCA_LOG_WARN,
		       "%s: connection refused: the peer speaks verbs wire "
		       "version %c, this side %c (rmca releases differ)",
		       vm->m.device, version, (char)(RMCA_VERBS_MAGIC & 0xff));
}

static uint8_t rd_depth(struct rmca_verbs_module *vm, bool initiator)
{
	int v = initiator ? vm->dev->attr.max_qp_init_rd_atom :
			    vm->dev->attr.max_qp_rd_atom;

	return v < RD_ATOM_MAX ? v : RD_ATOM_MAX;
}

static void param_fill(struct rmca_verbs_conn *c, struct rdma_conn_param *p,
		       struct rmca_verbs_pdata *pd)
{
	struct rmca_verbs_module *vm = c->mod;

	memset(p, 0, sizeof(*p));
	pdata_fill(c, pd);
	p->private_data = pd;
	p->private_data_len = sizeof(*pd);
	p->initiator_depth = rd_depth(vm, true);
	p->responder_resources = rd_depth(vm, false);
	if (!c->active) {
		/* never more than the requester offered */
		if (p->initiator_depth > c->rd_out)
			p->initiator_depth = c->rd_out;
		if (p->responder_resources > c->rd_in)
			p->responder_resources = c->rd_in;
	}
	p->retry_count = 7;
	/* 7 = retry for ever; credits keep ib sends from finding no
	 * receive (verbs_post.c), the device's retry is the fallback */
	p->rnr_retry_count = 7;
}

static int post_hello_recv(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_op *op = rmca_verbs_op_new(c, RMCA_VOP_HELLO_RECV,
						     NULL);

	if (!op)
		return RMCA_ERR_NO_MEMORY;
	op->sge.addr = (uintptr_t)&c->ctl->hello;
	op->sge.length = sizeof(c->ctl->hello);
	op->sge.lkey = c->ctl_sink->lkey;
	return rmca_verbs_post(c, op);
}

static int post_hello_send(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_op *op = rmca_verbs_op_new(c, RMCA_VOP_HELLO_SEND,
						     NULL);

	if (!op)
		return RMCA_ERR_NO_MEMORY;
	c->ctl->hello_src = c->token;
	op->sge.addr = (uintptr_t)&c->ctl->hello_src;
	op->sge.length = sizeof(c->ctl->hello_src);
	op->sge.lkey = c->ctl_sink->lkey;
	return rmca_verbs_post(c, op);
}

/* One more READ behind the hello (see the top of this file). */
static void hello_nudge(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_op *op;
	long long step = (long long)NUDGE_FIRST_MS << c->nudges;

	if (c->nudges >= NUDGE_MAX)
		return;
	if (step > NUDGE_STEP_MAX_MS)
		step = NUDGE_STEP_MAX_MS;
	c->nudge_ms = rmca_now_ms() + step;
	op = rmca_verbs_op_new(c, RMCA_VOP_HELLO_READ, NULL);
	if (!op)
		return;
	if (rmca_verbs_post(c, op)) {
		/* the SQ is full: the next one will do */
		rmca_verbs_op_free(op);
		return;
	}
	c->nudges++;
}

static int accept_req(struct rmca_verbs_conn *c, struct rdma_cm_id *id)
{
	struct rdma_conn_param p;
	struct rmca_verbs_pdata pd;
	int ret;

	id->context = c;
	c->id = id;
	ret = rmca_verbs_qp_create(c, id);
	if (!ret)
		ret = post_hello_recv(c);
	if (ret)
		return ret;
	param_fill(c, &p, &pd);
	if (rdma_accept(id, &p))
		return RMCA_ERR_CONNECTION;
	return 0;
}

static struct rmca_verbs_conn *waiting_for(struct rmca_verbs_module *vm,
					   uint64_t token)
{
	struct rmca_verbs_conn *c;

	for (c = vm->conns; c; c = c->next)
		if (!c->active && !c->id && c->token == token &&
		    c->state == RMCA_VCONN_CONNECTING)
			return c;
	return NULL;
}

static void park_drop(struct rmca_verbs_module *vm,
		      struct rmca_verbs_parked **pp)
{
	struct rmca_verbs_parked *p = *pp;

	*pp = p->next;
	vm->nparked--;
	rdma_reject(p->id, NULL, 0);
	rdma_destroy_id(p->id);
	free(p);
}

static void expire_parked(struct rmca_verbs_module *vm)
{
	struct rmca_verbs_parked **pp = &vm->parked;
	long long now = rmca_now_ms();

	while (*pp) {
		if (now >= (*pp)->expires)
			park_drop(vm, pp);
		else
			pp = &(*pp)->next;
	}
}

/* The address of a request's peer as 16 bytes, an IPv4 one mapped as on a
 * dual-stack socket (zeros for another family: one source). */
static void peer_key(struct rdma_cm_id *id, uint8_t *out)
{
	const struct sockaddr *sa = rdma_get_peer_addr(id);

	memset(out, 0, 16);
	if (sa->sa_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else if (sa->sa_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr,
		       4);
	}
}

/* The parked requests for fair_victim, as links (park_drop takes one):
 * the list is newest first, so the rank is the place from the oldest. */
struct park_walk {
	struct rmca_verbs_module *vm;
	unsigned left; /* requests after the one given */
};

static const void *park_next(void *arg, const void *cur,
			     struct rmca_fair_entry *e)
{
	struct park_walk *w = arg;
	struct rmca_verbs_parked **pp =
		cur ? &(*(struct rmca_verbs_parked **)cur)->next
		    : &w->vm->parked;

	if (!cur)
		w->left = (unsigned)w->vm->nparked;
	if (!*pp)
		return NULL;
	*e = (struct rmca_fair_entry){.key = (*pp)->key,
				      .len = sizeof((*pp)->key),
				      .may_go = true,
				      .rank = --w->left};
	return pp;
}

/*
 * At the bound, the parked request that gives way to one from key: the
 * oldest of the address that parks the most, the newcomer counted with
 * its own, so that one address that sends requests as fast as it can
 * pushes out its own, not a peer elsewhere whose connect is about to name
 * its request (the core's fair_victim, as the listener, tcp's data port
 * and shm's listener choose). Ties go to the address whose oldest is
 * older. Without memory for the count, or a core without fair_victim, the
 * oldest of all.
 */
static struct rmca_verbs_parked **park_victim(struct rmca_verbs_module *vm,
					      const uint8_t *key)
{
	const struct rmca_core *core = vm->m.core;
	const struct rmca_fair_entry e = {.key = key, .len = 16};
	struct park_walk w = {.vm = vm};
	struct rmca_verbs_parked **pp;

	if (!core->ops->fair_victim) {
		for (pp = &vm->parked; (*pp)->next; pp = &(*pp)->next)
			;
		return pp;
	}
	return (struct rmca_verbs_parked **)core->ops->fair_victim(
		core, (size_t)vm->nparked, park_next, &w, &e);
}

/* Room for one more parked request, from id's peer. */
static void park_make_room(struct rmca_verbs_module *vm, struct rdma_cm_id *id)
{
	uint8_t key[16];

	if (vm->nparked < vm->park_max || !vm->parked)
		return;
	peer_key(id, key);
	vm->m.core->ops->log(vm->m.core, RMCA_LOG_DEBUG,
			     "%s: %d connection requests wait for their "
			     "handshake; the oldest of the address that "
			     "holds the most is rejected",
			     vm->m.device, vm->nparked);
	park_drop(vm, park_victim(vm, key));
}

/* A request for our listener; returns an id to destroy once acked. */
static struct rdma_cm_id *on_request(struct rmca_verbs_module *vm,
				     struct rdma_cm_event *ev)
{
	struct rmca_verbs_pdata pd;
	struct rmca_verbs_parked *p;
	struct rmca_verbs_conn *c;
	int ret;

	ret = pdata_parse(ev->param.conn.private_data,
			  ev->param.conn.private_data_len, &pd);
	if (ret > 0)
		version_refused(vm, ret);
	if (ret || !pd.token) {
		rdma_reject(ev->id, NULL, 0);
		return ev->id;
	}
	c = waiting_for(vm, pd.token);
	if (c) {
		c->peer_ctl_addr = pd.ctl_addr;
		c->peer_ctl_rkey = pd.ctl_rkey;
		c->rd_in = ev->param.conn.initiator_depth;
		c->rd_out = ev->param.conn.responder_resources;
		if (accept_req(c, ev->id)) {
			c->id = NULL; /* destroyed by the caller */
			c->state = RMCA_VCONN_FAILED;
			c->fail_status = RMCA_ERR_CONNECTION;
			if (c->qp) {
				rdma_destroy_qp(ev->id);
				c->qp = NULL;
				vm->cq_used -= c->cq_share;
			}
			rdma_reject(ev->id, NULL, 0);
			return ev->id;
		}
		return NULL;
	}
	park_make_room(vm, ev->id);
	p = vm->park_max > 0 ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		rdma_reject(ev->id, NULL, 0);
		return ev->id;
	}
	p->id = ev->id;
	peer_key(ev->id, p->key);
	p->pd = pd;
	p->pd.magic = (uint32_t)ev->param.conn.initiator_depth << 8 |
		      ev->param.conn.responder_resources;
	p->expires = rmca_now_ms() + vm->park_ms;
	p->next = vm->parked;
	vm->parked = p;
	vm->nparked++;
	return NULL;
}

static void on_established(struct rmca_verbs_conn *c, struct rdma_cm_event *ev)
{
	struct rmca_verbs_pdata pd;

	if (c->active) {
		int ret = pdata_parse(ev->param.conn.private_data,
				      ev->param.conn.private_data_len, &pd);

		if (ret > 0)
			version_refused(c->mod, ret);
		if (ret || pd.token != c->token) {
			c->fail_status = RMCA_ERR_PROTOCOL;
			c->state = RMCA_VCONN_FAILED;
			return;
		}
		c->peer_ctl_addr = pd.ctl_addr;
		c->peer_ctl_rkey = pd.ctl_rkey;
		if (post_hello_send(c)) {
			c->fail_status = RMCA_ERR_CONNECTION;
			c->state = RMCA_VCONN_FAILED;
			return;
		}
		if (rmca_verbs_flavour(c->mod)->hello_read) {
			c->state = RMCA_VCONN_CONFIRM;
			hello_nudge(c);
		} else {
			c->state = RMCA_VCONN_UP;
		}
		return;
	}
	c->state = c->hello_seen ? RMCA_VCONN_UP : RMCA_VCONN_WAIT_HELLO;
}

static void on_conn_event(struct rmca_verbs_conn *c, struct rdma_cm_event *ev)
{
	struct rdma_conn_param p;
	struct rmca_verbs_pdata pd;
	bool setup = c->state == RMCA_VCONN_CONNECTING ||
		     c->state == RMCA_VCONN_RESOLVING;
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(c->id, 2000))
			goto unreachable;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rmca_verbs_qp_create(c, c->id))
			goto broken;
		param_fill(c, &p, &pd);
		ret = rdma_connect(c->id, &p);
		/* siw's socket is bound now: it holds the port */
		rmca_verbs_port_release(&c->port_hold);
		if (ret)
			goto broken;
		c->state = RMCA_VCONN_CONNECTING;
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(c, ev);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		goto unreachable;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		goto broken;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rmca_verbs_conn_fail(c, RMCA_ERR_CONNECTION);
		break;
	default:
		break;
	}
	return;
unreachable:
	if (setup) {
		c->state = RMCA_VCONN_FAILED;
		c->fail_status = RMCA_ERR_UNREACHABLE;
		return;
	}
broken:
	rmca_verbs_conn_fail(c, RMCA_ERR_CONNECTION);
}

void rmca_verbs_cm_dispatch(struct rmca_verbs_module *vm)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(vm->ec, &ev)) {
		struct rdma_cm_id *dead = NULL;

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			dead = on_request(vm, ev);
		else if (ev->id && ev->id->context)
			on_conn_event(ev->id->context, ev);
		rdma_ack_cm_event(ev);
		if (dead)
			rdma_destroy_id(dead);
	}
	rmca_verbs_cm_tick(vm);
}

/* What time advances: parked requests expire, and an iwarp active side
 * that waits for its hello's confirmation posts its next READ. */
void rmca_verbs_cm_tick(struct rmca_verbs_module *vm)
{
	struct rmca_verbs_conn *c;
	long long now = rmca_now_ms();

	expire_parked(vm);
	for (c = vm->conns; c; c = c->next)
		if (c->state == RMCA_VCONN_CONFIRM && now >= c->nudge_ms)
			hello_nudge(c);
}

static struct rmca_verbs_parked *unpark(struct rmca_verbs_module *vm,
					uint64_t token)
{
	struct rmca_verbs_parked **pp, *p;

	for (pp = &vm->parked; (p = *pp); pp = &p->next)
		if (p->pd.token == token) {
			*pp = p->next;
			vm->nparked--;
			return p;
		}
	return NULL;
}

static int start_passive(struct rmca_verbs_conn *c)
{
	struct rmca_verbs_parked *p = unpark(c->mod, c->token);
	int ret;

	if (!p)
		return 0; /* on_request() accepts it when it comes */
	c->peer_ctl_addr = p->pd.ctl_addr;
	c->peer_ctl_rkey = p->pd.ctl_rkey;
	c->rd_in = p->pd.magic >> 8;
	c->rd_out = p->pd.magic & 0xff;
	ret = accept_req(c, p->id);
	if (ret) {
		if (c->qp) {
			rdma_destroy_qp(p->id);
			c->qp = NULL;
			c->mod->cq_used -= c->cq_share;
		}
		rdma_reject(p->id, NULL, 0);
		rdma_destroy_id(p->id);
		c->id = NULL;
	}
	free(p);
	return ret;
}

static int start_active(struct rmca_verbs_conn *c,
			const struct rmca_verbs_addr *a, int timeout_ms)
{
	struct rmca_verbs_module *vm = c->mod;
	struct sockaddr_in dst = {.sin_family = AF_INET};

	memcpy(&dst.sin_addr, a->ip, 4);
	dst.sin_port = a->port;
	if (rdma_create_id(vm->ec, &c->id, c, RDMA_PS_TCP))
		return RMCA_ERR_NO_MEMORY;
	c->state = RMCA_VCONN_RESOLVING;
	if (timeout_ms > 5000 || timeout_ms <= 0)
		timeout_ms = 5000;
	/* the port is held until rdma_connect() has bound siw's socket */
	if (rmca_verbs_cm_bind(vm, c->id, &c->port_hold))
		return RMCA_ERR_UNREACHABLE;
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&dst, timeout_ms))
		return RMCA_ERR_UNREACHABLE;
	return 0;
}

static long long deadline_of(int timeout_ms)
{
	/* negative: no limit of our own; rdma_cm's timeouts still apply */
	return rmca_now_ms() + (timeout_ms < 0 ? 3600 * 1000LL : timeout_ms);
}

static struct rmca_verbs_conn *conn_of(struct rmca_verbs_connecting *h)
{
	return rmca_container_of(h, struct rmca_verbs_conn, hs);
}

int rmca_verbs_connect_start(struct rmca_module *m,
			     const struct rmca_conn_args *args,
			     struct rmca_verbs_connecting **out)
{
	struct rmca_verbs_module *vm = rmca_verbs_mod(m);
	struct rmca_verbs_conn *c;
	int ret;

	/* token 0 is never a connection's name (on_request refuses it) */
	if (!args->token)
		return RMCA_ERR_INVALID;
	if (args->active &&
	    (args->peer_addr_len != sizeof(struct rmca_verbs_addr) ||
	     !rmca_verbs_reachable(m, args->peer_addr, args->peer_addr_len,
				   NULL, 0)))
		return RMCA_ERR_INVALID;
	c = rmca_verbs_conn_new(vm, args->token, args->active, NULL);
	if (!c)
		return RMCA_ERR_NO_MEMORY;
	c->hs.deadline = deadline_of(args->timeout_ms);
	c->hs.cookie = args->cookie;
	if (args->active)
		ret = start_active(c, args->peer_addr, args->timeout_ms);
	else
		ret = start_passive(c);
	if (ret) {
		rmca_verbs_conn_destroy(c, RMCA_ERR_CANCELED);
		return ret;
	}
	*out = &c->hs;
	return 0;
}

void rmca_verbs_connect_abort(struct rmca_verbs_connecting *h)
{
	rmca_verbs_conn_destroy(conn_of(h), RMCA_ERR_CANCELED);
}

static const char *setup_step(const struct rmca_verbs_conn *c)
{
	switch (c->state) {
	case RMCA_VCONN_RESOLVING:
		return "resolving the peer's address";
	case RMCA_VCONN_CONNECTING:
		if (!c->active && !c->id)
			return "no connection request came";
		return "not established";
	case RMCA_VCONN_CONFIRM:
		return "the hello was not confirmed";
	case RMCA_VCONN_WAIT_HELLO:
		return "no hello came";
	default:
		return "not established";
	}
}

int rmca_verbs_connect_poll(struct rmca_verbs_connecting *h,
			    struct rmca_verbs_conn **out)
{
	struct rmca_verbs_conn *c = conn_of(h);
	struct rmca_verbs_module *vm = c->mod;
	const struct rmca_core *core = vm->m.core;
	int ret;

	if (c->state == RMCA_VCONN_UP || c->made) {
		if (c->nudges > 1)
			core->ops->log(core, RMCA_LOG_DEBUG,
				       "%s: hello confirmed after %d READs",
				       vm->m.device, c->nudges);
		/* the core has it now: failures are reported from here on */
		c->cookie = c->hs.cookie;
		*out = c;
		/* Made, then lost before the core looked (a peer that
		 * connected and left at once): the connection was, and its
		 * loss is reported as for any, not as a failed connect that
		 * the peer never saw. */
		if (c->state == RMCA_VCONN_FAILED && c->cookie &&
		    !c->failed_reported) {
			c->failed_reported = true;
			core->ops->conn_failed(core, c->cookie, c->fail_status);
		}
		return 0;
	}
	if (c->state == RMCA_VCONN_FAILED) {
		ret = c->fail_status ? c->fail_status : RMCA_ERR_CONNECTION;
		rmca_verbs_conn_destroy(c, RMCA_ERR_CANCELED);
		return ret;
	}
	if (rmca_now_ms() < c->hs.deadline)
		return RMCA_ERR_AGAIN;
	core->ops->log(core, RMCA_LOG_INFO, "%s: %s connection timed out (%s)",
		       vm->m.device, c->active ? "active" : "passive",
		       setup_step(c));
	rmca_verbs_conn_destroy(c, RMCA_ERR_CANCELED);
	return RMCA_ERR_TIMEOUT;
}

/*
 * Can each device reach itself? Every module connects a passive and an
 * active end on its own listener, all at once, through the same
 * non-blocking connect as any peer's: the answer comes from the device,
 * not from its name. The wait sleeps in poll() on the modules' event
 * channels, CQs and async fds, waking early only for an iwarp hello READ
 * that is due; an attempt ends at its deadline at the latest.
 */
struct lb_probe {
	struct rmca_verbs_connecting *h[2]; /* passive, active: being set up */
	struct rmca_verbs_conn *c[2]; /* handed out, waiting for the other */
	bool failed;
};

static void lb_start(struct rmca_verbs_module *vm, struct lb_probe *p)
{
	struct rmca_verbs_addr a;
	size_t len = sizeof(a);
	struct rmca_conn_args args = {.timeout_ms = LOOPBACK_PROBE_MS};

	p->failed = true;
	if (vm->m.core->ops->random(&args.token, sizeof(args.token)) ||
	    !args.token || rmca_verbs_addr(&vm->m, &a, &len))
		return;
	if (rmca_verbs_connect_start(&vm->m, &args, &p->h[0]))
		return;
	args.active = 1;
	args.peer_addr = &a;
	args.peer_addr_len = len;
	if (rmca_verbs_connect_start(&vm->m, &args, &p->h[1])) {
		rmca_verbs_connect_abort(p->h[0]);
		p->h[0] = NULL;
		return;
	}
	p->failed = false;
}

/* Both ends up, or either failed: the probe's answer; all of it goes. */
static bool lb_step(struct lb_probe *p, bool *ok)
{
	int i, ret;

	for (i = 0; i < 2; i++) {
		if (p->h[i]) {
			ret = rmca_verbs_connect_poll(p->h[i], &p->c[i]);
			if (ret != RMCA_ERR_AGAIN) {
				p->h[i] = NULL;
				p->failed |= ret != 0;
			}
		}
		if (p->c[i] && p->c[i]->state != RMCA_VCONN_UP)
			p->failed = true;
	}
	if (!p->failed && !(p->c[0] && p->c[1]))
		return false;
	*ok = !p->failed;
	for (i = 0; i < 2; i++) {
		if (p->h[i])
			rmca_verbs_connect_abort(p->h[i]);
		if (p->c[i])
			rmca_verbs_conn_destroy(p->c[i], RMCA_ERR_CANCELED);
		p->h[i] = NULL;
		p->c[i] = NULL;
	}
	return true;
}

/* The next time a probe's connection needs a look without an event. */
static long long lb_next_due(struct rmca_verbs_module *vm, long long due)
{
	struct rmca_verbs_conn *c;

	for (c = vm->conns; c; c = c->next) {
		if (c->state == RMCA_VCONN_CONFIRM && c->nudge_ms < due)
			due = c->nudge_ms;
		if (c->state != RMCA_VCONN_UP && c->hs.deadline < due)
			due = c->hs.deadline;
	}
	return due;
}

static void lb_attempt(struct rmca_verbs_module **vms, int n, bool *ok)
{
	struct lb_probe p[RMCA_VERBS_MAX_MODULES];
	struct pollfd fds[3 * RMCA_VERBS_MAX_MODULES];
	bool done[RMCA_VERBS_MAX_MODULES];
	int i, pending = 0;

	memset(p, 0, sizeof(p));
	for (i = 0; i < n; i++) {
		vms[i]->self_wait = true; /* its CQ is armed before each poll */
		done[i] = ok[i];
		if (done[i])
			continue;
		lb_start(vms[i], &p[i]);
		done[i] = lb_step(&p[i], &ok[i]);
	}
	for (;;) {
		long long due = rmca_now_ms() + LOOPBACK_PROBE_MS, wait;

		pending = 0;
		for (i = 0; i < n; i++) {
			struct rmca_verbs_module *vm = vms[i];

			if (done[i])
				continue;
			rmca_verbs_cm_dispatch(vm);
			rmca_verbs_async_drain(vm->dev);
			rmca_verbs_cq_poll(vm);
			done[i] = lb_step(&p[i], &ok[i]);
			if (done[i])
				continue;
			fds[3 * pending] = (struct pollfd){.fd = vm->ec->fd,
							   .events = POLLIN};
			fds[3 * pending + 1] = (struct pollfd){
				.fd = vm->chan->fd, .events = POLLIN};
			fds[3 * pending + 2] = (struct pollfd){
				.fd = vm->dev->ctx->async_fd, .events = POLLIN};
			pending++;
			due = lb_next_due(vm, due);
		}
		if (!pending)
			break;
		wait = due - rmca_now_ms();
		if (wait <= 0 || poll(fds, 3 * pending, (int)wait) <= 0)
			continue;
		/* a readable completion channel stays so until it is read */
		for (i = 0; i < n; i++)
			if (!done[i])
				rmca_verbs_cq_event(vms[i], EPOLLIN);
	}
	for (i = 0; i < n; i++)
		vms[i]->self_wait = false;
}

void rmca_verbs_loopback_probe(struct rmca_verbs_module **vms, int n, bool *ok)
{
	const struct rmca_core *core;
	int i, attempt;

	for (i = 0; i < n; i++)
		ok[i] = false;
	/* One attempt can fail for reasons that are not the device's (a
	 * slow host): a device keeps the cap if any of a few works. */
	for (attempt = 1; attempt <= LOOPBACK_ATTEMPTS; attempt++) {
		bool all = true;

		lb_attempt(vms, n, ok);
		for (i = 0; i < n; i++) {
			if (ok[i])
				continue;
			all = false;
			core = vms[i]->m.core;
			core->ops->log(core, RMCA_LOG_INFO,
				       "%s: loopback probe %d of %d failed",
				       vms[i]->m.device, attempt,
				       LOOPBACK_ATTEMPTS);
		}
		if (all)
			break;
	}
}
