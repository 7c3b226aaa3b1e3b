// SPDX-License-Identifier: BSD-3-Clause
/*
 * Listeners and endpoints: the bootstrap handshake, the choice of a
 * transport, and the hand-over to the chosen module.
 *
 * The active side sends its hello; the passive side validates it, applies
 * the selection rule and answers with its own hello carrying the chosen
 * pair (or with a reject and its reason). The active side checks that the
 * choice names modules it offered, then both let the module connect. An
 * answer that lists rails gets one more message from the active side, the
 * rails it takes (those its own route check accepts), so that the passive
 * side connects those and waits for no other.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rmca/info.h>

#include "bootstrap.h"
#include "ctrl.h"
#include "ep.h"
#include "rails.h"
#include "select.h"
#include "wire.h"

struct rmca_incoming;
static void incoming_drop(struct rmca_listener *l, struct rmca_incoming *in);
static void listener_cb(void *arg, uint32_t events);

/* Watch the listening socket, or stop (at the handshake bound with no
 * connection that could give way, or out of descriptors): the kernel's
 * backlog holds the peers meanwhile. */
static void listener_arm(struct rmca_listener *l, bool on)
{
	struct rmca_context *ctx = l->ctx;

	if (on == l->armed || l->fd < 0)
		return;
	if (!ctx->core.ops->fd_mod(&ctx->core, l->fd, on ? EPOLLIN : 0))
		l->armed = on;
}

int rmca_listen(rmca_context_t *ctx, const char *host_port, rmca_listener_t **out)
{
	char host[256], port[8];
	struct rmca_listener *l;
	int fd, bound;

	if (!ctx || !out)
		return RMCA_ERR_INVALID;
	if (rmca_parse_host_port(host_port, host, sizeof(host), port,
				 sizeof(port))) {
		rmca_log(0, "listen %s: " RMCA_HOST_PORT_HELP,
			 host_port ? host_port : "(null)");
		return RMCA_ERR_INVALID;
	}
	if (!strcmp(host, "*"))
		host[0] = '\0';
	fd = rmca_tcp_listen(host, port, &bound);
	if (fd < 0)
		return fd;
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	l->ctx = ctx;
	l->fd = fd;
	l->port = bound;
	/* Handshakes progress inside every call on the context. */
	if (ctx->core.ops->fd_add(&ctx->core, fd, EPOLLIN, listener_cb, l)) {
		close(fd);
		free(l);
		return RMCA_ERR_NO_MEMORY;
	}
	l->armed = true;
	l->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	rmca_list_add(&ctx->listeners, &l->link);
	*out = l;
	rmca_log(1, "listening on %s (port %d)", host_port, bound);
	return 0;
}

int rmca_listener_port(const rmca_listener_t *l)
{
	return l ? l->port : RMCA_ERR_INVALID;
}

void rmca_listener_close(rmca_listener_t *l)
{
	struct rmca_context *ctx;

	if (!l)
		return;
	ctx = l->ctx;
	while (l->incoming)
		incoming_drop(l, l->incoming);
	if (l->fd >= 0) {
		ctx->core.ops->fd_del(&ctx->core, l->fd);
		close(l->fd);
	}
	if (l->spare_fd >= 0)
		close(l->spare_fd);
	rmca_list_del(&l->link);
	free(l);
}

static void hello_fill(struct rmca_context *ctx, struct rmca_hello *h,
		       uint8_t role, uint64_t token)
{
	memset(h, 0, sizeof(*h));
	h->version = RMCA_WIRE_VERSION;
	h->kind = RMCA_WIRE_HELLO;
	h->token = token;
	h->role = role;
	h->atomic_mode = (uint8_t)ctx->atomic_resolved;
	h->choice_a = h->choice_p = RMCA_WIRE_NO_CHOICE;
	if (role != RMCA_ROLE_PASSIVE)
		h->nrails = (uint8_t)(ctx->max_rails - 1);
	h->netns = ctx->netns;
	snprintf(h->boot_id, sizeof(h->boot_id), "%s", ctx->boot_id);
	for (size_t i = 0; i < ctx->nmods && h->nmods < RMCA_HELLO_MAX_MODS; i++) {
		struct rmca_mod *mod = &ctx->mods[i];
		struct rmca_wire_mod *w = &h->mods[h->nmods];
		size_t alen = sizeof(w->addr);

		snprintf(w->component, sizeof(w->component), "%s",
			 mod->comp->comp->name);
		snprintf(w->device, sizeof(w->device), "%s", mod->m->device);
		w->caps = mod->caps;
		w->priority = mod->comp->priority;
		if (mod->m->ops->addr(mod->m, w->addr, &alen)) {
			rmca_log(1, "%s %s: no address to offer, not offered",
				 w->component, w->device);
			continue;
		}
		w->addr_len = (uint16_t)alen;
		h->nmods++;
	}
}

/* Modules are offered in ctx->mods order, less those without an address:
 * map a hello index back. */
static struct rmca_mod *offered_mod(struct rmca_context *ctx,
				    const struct rmca_hello *mine, unsigned idx)
{
	if (idx >= mine->nmods)
		return NULL;
	for (size_t i = 0; i < ctx->nmods; i++)
		if (!strcmp(ctx->mods[i].comp->comp->name,
			    mine->mods[idx].component) &&
		    !strcmp(ctx->mods[i].m->device, mine->mods[idx].device))
			return &ctx->mods[i];
	return NULL;
}

struct reach_arg {
	struct rmca_context *ctx;
	const struct rmca_hello *mine, *peer;
	const char *host; /* numeric address of the peer's bootstrap end */
};

static int reach_cb(void *arg, int li, int pi, char *why, size_t why_len)
{
	struct reach_arg *ra = arg;
	struct rmca_mod *mod = offered_mod(ra->ctx, ra->mine, (unsigned)li);
	const struct rmca_wire_mod *pm = &ra->peer->mods[pi];

	if (!mod) {
		snprintf(why, why_len, "module gone");
		return 0;
	}
	if (mod->m->ops->reach) {
		const struct rmca_reach_args a = { .peer_addr = pm->addr,
						   .peer_addr_len = pm->addr_len,
						   .peer_host = ra->host };

		return mod->m->ops->reach(mod->m, &a, why, why_len);
	}
	if (!mod->m->ops->reachable)
		return 1;
	return mod->m->ops->reachable(mod->m, pm->addr, pm->addr_len, why,
				      why_len) != 0;
}

static void log_lines(const char *what, const char *peer, const char *reasons)
{
	const char *p = reasons;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		rmca_log(1, "%s %s: %.*s", what, peer, n, p);
		p += n + (nl ? 1 : 0);
	}
}

static void ep_attr_fill(struct rmca_ep *ep, int peer_is_local)
{
	struct rmca_ep_attr *a = &ep->attr;

	memset(a, 0, sizeof(*a));
	snprintf(a->transport, sizeof(a->transport), "%s",
		 ep->mod->comp->comp->name);
	snprintf(a->device, sizeof(a->device), "%s", ep->mod->m->device);
	a->peer_is_local = peer_is_local;
	rmca_paths_choose(ep);
}

/* Both sides: a new endpoint, not yet connected. */
static struct rmca_ep *ep_new(struct rmca_context *ctx, struct rmca_mod *mod,
			      const struct rmca_wire_mod *peer_mod,
			      uint64_t token, const char *who)
{
	struct rmca_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	rmca_ep_lists_init(ep);
	ep->ctx = ctx;
	ep->mod = mod;
	ep->token = token;
	ep->peer_caps = peer_mod->caps;
	snprintf(ep->peer_device, sizeof(ep->peer_device), "%s",
		 peer_mod->device);
	/* Named once, while the peer is there to be named. */
	snprintf(ep->peer, sizeof(ep->peer), "%s", who);
	return ep;
}

/* The module's connection just handed out is its own, or it is given back
 * (ep->conn NULL) and the connect fails. */
static int ep_conn_made(struct rmca_ep *ep)
{
	struct rmca_module *m = ep->mod->m;
	int rc = rmca_registry_made_by(m, ep->conn ? ep->conn->module : NULL,
				       "connection");

	if (rc && ep->conn)
		m->ops->disconnect(ep->conn);
	if (rc)
		ep->conn = NULL;
	return rc;
}

/*
 * Hand the connection to the module: started (*h set, to be polled) where
 * the module connects without blocking, else done before returning.
 */
static int ep_connect(struct rmca_ep *ep, const struct rmca_wire_mod *peer_mod,
		      int active, int peer_is_local, const char *peer_host,
		      int64_t deadline, struct rmca_connecting **h)
{
	const struct rmca_module_ops *ops = ep->mod->m->ops;
	struct rmca_conn_args args = {
		.active = active,
		.peer_addr = peer_mod->addr,
		.peer_addr_len = peer_mod->addr_len,
		.token = ep->token,
		.timeout_ms = rmca_ms_left(deadline),
		.peer_is_local = peer_is_local,
		.cookie = ep,
	};
	int rc;

	snprintf(args.peer_host, sizeof(args.peer_host), "%s", peer_host);
	*h = NULL;
	if (ops->connect_start) {
		rc = ops->connect_start(ep->mod->m, &args, h);
		if (!rc && (rc = rmca_registry_made_by(ep->mod->m,
						       *h ? (*h)->module : NULL,
						       "connecting handle"))) {
			if (*h)
				ops->connect_abort(*h);
			*h = NULL;
		}
	} else if (ops->connect) {
		rc = ops->connect(ep->mod->m, &args, &ep->conn);
		if (!rc)
			rc = ep_conn_made(ep);
	} else {
		rc = RMCA_ERR_UNSUPPORTED;
	}
	if (rc)
		rmca_log(0, "%s: %s %s could not connect: %s", ep->peer,
			 ep->mod->comp->comp->name, ep->mod->m->device,
			 rmca_strerror(rc));
	return rc;
}

/* 0 once the module's connection is up, RMCA_ERR_AGAIN, or its error. */
static int ep_connect_poll(struct rmca_ep *ep, struct rmca_connecting **h)
{
	int rc;

	if (!*h)
		return rmca_rails_connect_poll(ep);
	rc = ep->mod->m->ops->connect_poll(*h, &ep->conn);
	if (rc == RMCA_ERR_AGAIN)
		return rc;
	*h = NULL;
	if (!rc)
		rc = ep_conn_made(ep);
	if (rc) {
		rmca_log(0, "%s: %s %s could not connect: %s", ep->peer,
			 ep->mod->comp->comp->name, ep->mod->m->device,
			 rmca_strerror(rc));
		return rc;
	}
	return rmca_rails_connect_poll(ep);
}

/* The deadline passed: with rail 0 up the endpoint is made of the rails
 * that are (true), else it failed. */
static bool ep_connect_late(struct rmca_ep *ep, struct rmca_connecting *h)
{
	if (h || !ep->conn)
		return false;
	rmca_rails_connect_drop(ep);
	return true;
}

/* An endpoint that never became one: its rails' connections go too. */
static void ep_free_unmade(struct rmca_ep *ep)
{
	rmca_rails_destroy(ep);
	free(ep);
}

static void ep_connect_abort(struct rmca_ep *ep, struct rmca_connecting **h)
{
	if (*h)
		ep->mod->m->ops->connect_abort(*h);
	*h = NULL;
}

/* Both sides, once connected: the control channel on the bootstrap
 * socket, the paths; the endpoint joins the context's list. On failure the
 * endpoint is freed (fd stays the caller's). */
static int ep_finish(struct rmca_ep *ep, int fd, int peer_is_local)
{
	struct rmca_context *ctx = ep->ctx;
	int rc;

	ep_attr_fill(ep, peer_is_local);
	ep->boot_fd = fd;
	rc = rmca_ctrl_open(ep, fd);
	if (rc) {
		ep->mod->m->ops->disconnect(ep->conn);
		ep_free_unmade(ep);
		return rc;
	}
	rmca_list_add(&ctx->eps, &ep->link);
	rmca_log(1, "%s: connected over %s %s (%s)", ep->peer,
		 ep->attr.transport, ep->attr.device,
		 peer_is_local ? "same host" : "remote host");
	if (rmca_log_verbose >= 1) {
		char paths[1024];

		rmca_paths_describe(ep, paths, sizeof(paths));
		log_lines("paths", ep->peer, paths);
	}
	rmca_rails_ready(ep);
	return 0;
}

static int peer_local(struct rmca_context *ctx, const struct rmca_hello *peer)
{
	return ctx->boot_id[0] && !strcmp(ctx->boot_id, peer->boot_id) &&
	       ctx->netns == peer->netns;
}

static const char *mode_name(unsigned m)
{
	static const char *const names[] = { "auto", "device", "cpu" };

	return m < RMCA_ARRAY_SIZE(names) ? names[m] : "unknown";
}

/*
 * The passive side's answer to a complete hello (body, len) from who:
 * decided at once, never waiting. Returns the answer to send (malloc'ed,
 * length-prefixed, *alen bytes) or NULL when the peer gets none. res says
 * what follows once it is out.
 */
struct hs_result {
	int status;  /* 0: make an endpoint; else why not (a reject, a probe) */
	bool counts; /* a refusal rmca_accept reports */
	bool probe;
	struct rmca_mod *mod;
	struct rmca_wire_mod peer_mod;
	uint64_t token;
	int local;
	struct rmca_rail_plan plan;
};

static uint8_t *reject_msg(int status, const char *reason, size_t *alen)
{
	struct rmca_hello h = { .version = RMCA_WIRE_VERSION,
				.kind = RMCA_WIRE_REJECT,
				.status = status };
	uint8_t *buf = malloc(4 + 512);
	int n;

	if (!buf)
		return NULL;
	snprintf(h.reason, sizeof(h.reason), "%s", reason);
	n = rmca_hello_encode(&h, buf + 4, 512);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	*alen = 4 + (size_t)n;
	return buf;
}

/* Lines about refused peers go through the listener's rate limit. */
static bool fail_log_allowed(struct rmca_listener *l);

static uint8_t *hello_answer(struct rmca_context *ctx, struct rmca_listener *l,
			     const uint8_t *body, size_t len, const char *who,
			     const char *host, struct hs_result *res,
			     size_t *alen)
{
	struct rmca_hello *peer = NULL, *mine = NULL;
	struct rmca_selection sel;
	struct reach_arg ra;
	uint8_t *buf = NULL;
	char why[256];
	int rc;

	memset(res, 0, sizeof(*res));
	peer = malloc(sizeof(*peer));
	mine = malloc(sizeof(*mine));
	if (!peer || !mine) {
		res->status = RMCA_ERR_NO_MEMORY;
		goto out;
	}
	rc = rmca_hello_decode(body, len, peer, why, sizeof(why));
	if (!rc && (peer->kind != RMCA_WIRE_HELLO ||
		    peer->role == RMCA_ROLE_PASSIVE)) {
		snprintf(why, sizeof(why), "expected an active hello");
		rc = RMCA_ERR_PROTOCOL;
	}
	if (!rc && !peer->token) {
		snprintf(why, sizeof(why), "hello without a token");
		rc = RMCA_ERR_PROTOCOL;
	}
	if (rc) {
		if (fail_log_allowed(l))
			rmca_log(0, "bootstrap from %s refused: %s", who, why);
		res->status = rc;
		res->counts = true;
		if (strstr(why, "version"))
			buf = reject_msg(RMCA_ERR_PROTOCOL, why, alen);
		goto out;
	}
	res->probe = peer->role == RMCA_ROLE_PROBE;
	res->counts = !res->probe;
	if (peer->atomic_mode != ctx->atomic_resolved) {
		snprintf(why, sizeof(why),
			 "atomic mode differs: listener %s, connecting side %s "
			 "(RMCA_atomic_mode)",
			 mode_name(ctx->atomic_resolved),
			 mode_name(peer->atomic_mode));
		if (res->probe || fail_log_allowed(l))
			rmca_log(res->probe ? 1 : 0,
				 "bootstrap from %s refused: %s", who, why);
		res->status = RMCA_ERR_PROTOCOL;
		buf = reject_msg(RMCA_ERR_PROTOCOL, why, alen);
		goto out;
	}
	res->local = peer_local(ctx, peer);
	hello_fill(ctx, mine, RMCA_ROLE_PASSIVE, peer->token);
	ra = (struct reach_arg){
		.ctx = ctx, .mine = mine, .peer = peer, .host = host
	};
	rc = rmca_select(peer->mods, peer->nmods, mine->mods, mine->nmods, 0,
			 res->local, 0, reach_cb, &ra, &sel);
	log_lines("select", who, sel.reasons);
	if (rc) {
		/* the reasons matter most when nothing is left: say them */
		for (char *nl = strchr(sel.reasons, '\n'); nl && nl[1];
		     nl = strchr(nl, '\n'))
			*nl = ';';
		if (res->probe || fail_log_allowed(l))
			rmca_log(res->probe ? 1 : 0,
				 "%s: no enabled transport reaches the peer: %s",
				 who, sel.reasons);
		res->status = RMCA_ERR_UNREACHABLE;
		buf = reject_msg(RMCA_ERR_UNREACHABLE,
				 "no enabled transport reaches the peer", alen);
		goto out;
	}
	mine->choice_a = (uint8_t)sel.a;
	mine->choice_p = (uint8_t)sel.p;
	if (ctx->max_rails > 1 && peer->nrails &&
	    ctx->core.ops->list_selects(ctx->rail_transports,
					mine->mods[sel.p].component)) {
		int max = ctx->max_rails < 1 + peer->nrails ? ctx->max_rails
							    : 1 + peer->nrails;

		mine->nrails = (uint8_t)rmca_select_rails(
			peer->mods, peer->nmods, mine->mods, mine->nmods, 0,
			res->local, reach_cb, &ra, max, &sel, mine->rail_a,
			mine->rail_p);
		for (unsigned i = 0; i < mine->nrails; i++)
			rmca_log(1, "select %s: rail %u: %s %s<->%s", who,
				 i + 1, mine->mods[mine->rail_p[i]].component,
				 peer->mods[mine->rail_a[i]].device,
				 mine->mods[mine->rail_p[i]].device);
	}
	buf = malloc(4 + RMCA_HELLO_MAX);
	rc = buf ? rmca_hello_encode(mine, buf + 4, RMCA_HELLO_MAX)
		 : RMCA_ERR_NO_MEMORY;
	if (rc < 0) {
		free(buf);
		buf = NULL;
		res->status = rc;
		res->counts = false;
		goto out;
	}
	*alen = 4 + (size_t)rc;
	if (res->probe) {
		/* rmca_info --explain: it learns the choice; no endpoint */
		rmca_log(1, "bootstrap from %s: explained the choice", who);
		res->status = RMCA_ERR_AGAIN;
		res->counts = false;
		goto out;
	}
	res->mod = offered_mod(ctx, mine, (unsigned)sel.p);
	res->peer_mod = peer->mods[sel.a];
	for (unsigned i = 0; i < mine->nrails; i++) {
		res->plan.mod[i] = offered_mod(ctx, mine, mine->rail_p[i]);
		res->plan.peer[i] = peer->mods[mine->rail_a[i]];
	}
	res->plan.n = mine->nrails;
	res->token = peer->token;
	res->counts = false;
out:
	if (buf) {
		size_t n = *alen - 4;

		buf[0] = (uint8_t)n;
		buf[1] = (uint8_t)(n >> 8);
		buf[2] = (uint8_t)(n >> 16);
		buf[3] = (uint8_t)(n >> 24);
	}
	free(peer);
	free(mine);
	return buf;
}

/*
 * The passive side: the active side's reply to an answer that listed n
 * rails (wire.h, RAILS), into take[]. RMCA_ERR_PROTOCOL with why for a
 * message that is no such reply, or one that names a rail the answer did
 * not list.
 */
static int rails_taken(int n, const uint8_t *body, size_t len, bool *take,
		       char *why, size_t why_len)
{
	struct rmca_hello *t = malloc(sizeof(*t));
	int rc;

	if (!t) {
		snprintf(why, why_len, "out of memory");
		return RMCA_ERR_NO_MEMORY;
	}
	rc = rmca_hello_decode(body, len, t, why, why_len);
	if (!rc && t->kind != RMCA_WIRE_RAILS) {
		snprintf(why, why_len,
			 "message kind %u where the rails taken belong",
			 t->kind);
		rc = RMCA_ERR_PROTOCOL;
	}
	if (!rc && t->ntaken > n) {
		snprintf(why, why_len, "takes %u rails, %d listed", t->ntaken,
			 n);
		rc = RMCA_ERR_PROTOCOL;
	}
	for (int i = 0; i < n; i++)
		take[i] = false;
	for (unsigned i = 0; !rc && i < t->ntaken; i++) {
		if (t->taken[i] >= n) {
			snprintf(why, why_len, "takes rail %u, %d listed",
				 t->taken[i] + 1, n);
			rc = RMCA_ERR_PROTOCOL;
		} else {
			take[t->taken[i]] = true;
		}
	}
	free(t);
	return rc;
}

/* The peer's reply is in (body, len): the rails it does not take are
 * dropped from ep, which then waits for no other. */
static int rails_settle(struct rmca_ep *ep, int n, const uint8_t *body,
			size_t len, char *why, size_t why_len)
{
	bool take[RMCA_WIRE_MAX_RAILS];
	int rc = rails_taken(n, body, len, take, why, why_len);

	for (int i = 0; !rc && i < n; i++)
		if (!take[i])
			rmca_rails_refused(ep, i);
	return rc;
}

/*
 * One incoming bootstrap connection, from accept to the endpoint that
 * rmca_accept hands out. Every step runs from the socket's callback or the
 * listener's progress, never waiting, each against its own deadline:
 * however many peers are half-open, silent, slow or gone, the others
 * progress. Memory stays small until a hello's length is known.
 */
enum in_state {
	IN_HELLO,   /* reading the length-prefixed hello */
	IN_ANSWER,  /* writing the answer */
	IN_CONNECT, /* the module connects (and the peer says which rails) */
	IN_READY,   /* an endpoint for rmca_accept */
};

struct rmca_incoming {
	struct rmca_incoming *next;
	struct rmca_listener *l;
	enum in_state state;
	int fd; /* -1 once the endpoint's control channel owns it */
	bool watched;
	int64_t deadline;
	uint8_t pfx[4];
	uint8_t *msg;	  /* the hello, then the answer */
	size_t have, len; /* bytes of msg read or written; its length */
	struct hs_result res;
	struct rmca_ep *ep;
	struct rmca_connecting *h;
	bool await_rails; /* the answer listed rails: which does it take? */
	bool timed_out;
	uint32_t events; /* what the event loop watches its socket for */
	uintptr_t tag;	 /* a handshake set's: its owner's name for it */
	char host[64], who[96];
};

/* What the event loop watches in's socket for (0: nothing, for now). */
static void incoming_watch(struct rmca_incoming *in, uint32_t events)
{
	struct rmca_context *ctx = in->l->ctx;

	if (!ctx->core.ops->fd_mod(&ctx->core, in->fd, events))
		in->events = events;
}

static void incoming_unwatch(struct rmca_incoming *in)
{
	struct rmca_context *ctx = in->l->ctx;

	if (in->watched)
		ctx->core.ops->fd_del(&ctx->core, in->fd);
	in->watched = false;
}

static void incoming_drop(struct rmca_listener *l, struct rmca_incoming *in)
{
	struct rmca_incoming **pp;

	for (pp = &l->incoming; *pp != in; pp = &(*pp)->next)
		;
	*pp = in->next;
	l->nincoming--;
	incoming_unwatch(in);
	if (in->ep && in->state == IN_READY) {
		rmca_ep_destroy(in->ep);
	} else if (in->ep) {
		ep_connect_abort(in->ep, &in->h);
		if (in->ep->conn)
			in->ep->mod->m->ops->disconnect(in->ep->conn);
		ep_free_unmade(in->ep);
	}
	if (in->fd >= 0)
		close(in->fd);
	free(in->msg);
	free(in);
	/* A handshake set is on the context's list only while it has some:
	 * an idle one costs the event loop nothing. */
	if (l->done && !l->incoming && !l->ticking)
		rmca_list_del(&l->link);
	/* A slot is free: take the next peer from the backlog. */
	if (!l->rest_until && l->nincoming < l->ctx->handshake_max)
		listener_arm(l, true);
}

/* Lines about failed handshakes: ten a second at most per listener, so a
 * peer that churns connections cannot fill the log; what was left out is
 * counted in the next line. */
static bool fail_log_allowed(struct rmca_listener *l)
{
	int64_t now = rmca_now_ms();

	if (now >= l->log_window + 1000) {
		if (l->log_suppressed)
			rmca_log(0,
				 "listener on port %d: %u more failed "
				 "handshakes not logged (ten a second at most)",
				 l->port, l->log_suppressed);
		l->log_window = now;
		l->log_lines = 0;
		l->log_suppressed = 0;
	}
	if (l->log_lines < 10) {
		l->log_lines++;
		return true;
	}
	l->log_suppressed++;
	return false;
}

/* in's handshake ends without an endpoint: say why (once), drop it. */
static void incoming_fail(struct rmca_incoming *in, int status, int level,
			  const char *why)
{
	struct rmca_listener *l = in->l;
	uintptr_t tag = in->tag;
	int end = status;

	if (!end)
		end = in->timed_out ? RMCA_ERR_TIMEOUT : RMCA_ERR_CONNECTION;

	if (why && (level > 0 || fail_log_allowed(l)))
		rmca_log(level, "bootstrap from %s: %s", in->who, why);
	if (status && in->res.counts) {
		l->refused++;
		l->refused_status = status;
	}
	incoming_drop(l, in);
	/* last: the owner may look at the set, in is no part of it */
	if (l->done)
		l->done(l->owner, tag, end, NULL);
}

/* Read what there is. 1: the hello is complete; 0: not yet; -1: in is
 * gone. */
static int incoming_read(struct rmca_incoming *in)
{
	char why[128];

	for (;;) {
		uint8_t *dst =
			in->msg ? in->msg + in->have : in->pfx + in->have;
		size_t want = in->msg ? in->len : sizeof(in->pfx);
		ssize_t got;

		if (in->have == want) {
			if (in->msg)
				return 1;
			in->len = in->pfx[0] | in->pfx[1] << 8 |
				  in->pfx[2] << 16 | (size_t)in->pfx[3] << 24;
			if (in->len > RMCA_HELLO_MAX || !in->len) {
				snprintf(why, sizeof(why),
					 "refused: message of %zu bytes, "
					 "at most %d",
					 in->len, RMCA_HELLO_MAX);
				in->res.counts = true;
				incoming_fail(in, RMCA_ERR_PROTOCOL, 0, why);
				return -1;
			}
			/* Only now, and only what the hello needs. */
			in->msg = malloc(in->len);
			if (!in->msg) {
				incoming_fail(in, 0, 0, "out of memory");
				return -1;
			}
			in->have = 0;
			continue;
		}
		got = recv(in->fd, dst, want - in->have, MSG_DONTWAIT);
		if (got > 0) {
			in->have += (size_t)got;
			continue;
		}
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
				errno == EINTR))
			return 0;
		if (!in->have && !in->msg) {
			/* Connected and left: a port scan, a client that
			 * gave up; after the answer, a peer that cannot use
			 * the choice. Nothing to refuse. */
			incoming_fail(in, 0, 0,
				      in->state == IN_HELLO
					      ? "closed before its hello"
					      : "closed before saying which "
						"rails it takes");
			return -1;
		}
		snprintf(why, sizeof(why), "closed after %zu bytes of its %s",
			 in->have + (in->msg ? sizeof(in->pfx) : 0),
			 in->state == IN_HELLO ? "hello" : "rails message");
		incoming_fail(in, 0, 0, why);
		return -1;
	}
}

/* Write what fits of the answer. 1: all out; 0: not yet; -1: gone. */
static int incoming_write(struct rmca_incoming *in)
{
	while (in->have < in->len) {
		ssize_t n = send(in->fd, in->msg + in->have, in->len - in->have,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			in->have += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			incoming_watch(in, EPOLLOUT);
			return 0;
		}
		incoming_fail(in, 0, 0, "peer went away during the hello");
		return -1;
	}
	return 1;
}

/* The endpoint is connected: ready for rmca_accept, or handed to the
 * owner of a handshake set. */
static void incoming_ready(struct rmca_incoming *in)
{
	struct rmca_listener *l = in->l;
	uintptr_t tag = in->tag;
	struct rmca_ep *ep = in->ep;
	int fd = in->fd;
	int rc;

	incoming_unwatch(in);
	rc = ep_finish(ep, fd, in->res.local);
	if (rc) {
		in->ep = NULL;
		incoming_fail(in, 0, 0, "cannot open the control channel");
		return;
	}
	in->fd = -1; /* the control channel's now */
	in->state = IN_READY;
	if (!l->done)
		return;
	in->ep = NULL;
	incoming_drop(l, in);
	l->done(l->owner, tag, 0, ep);
}

/* The peer's reply to the rails listed. False: in is gone (refused). */
static bool incoming_rails(struct rmca_incoming *in)
{
	char why[256], line[300];
	int rc = rails_settle(in->ep, in->res.plan.n, in->msg, in->len, why,
			      sizeof(why));

	free(in->msg);
	in->msg = NULL;
	if (rc) {
		snprintf(line, sizeof(line), "refused: %s", why);
		in->res.counts = true;
		incoming_fail(in, RMCA_ERR_PROTOCOL, 0, line);
		return false;
	}
	in->await_rails = false;
	/* Quiet until the control channel takes the socket over. */
	incoming_watch(in, 0);
	return true;
}

/* IN_CONNECT: the peer's rails reply while it is awaited (it comes before
 * the control channel's bytes), and the module's connections. */
static void incoming_connecting(struct rmca_incoming *in)
{
	int rc;

	if (in->await_rails) {
		rc = incoming_read(in);
		if (rc < 0 || (rc > 0 && !incoming_rails(in)))
			return;
	}
	rc = ep_connect_poll(in->ep, &in->h);
	if (rc == RMCA_ERR_AGAIN || (!rc && in->await_rails))
		return;
	if (rc) {
		incoming_fail(in, 0, 0, NULL);
		return;
	}
	incoming_ready(in);
}

/* Once the answer is out: an endpoint, or the end of a probe or reject. */
static void incoming_answered(struct rmca_incoming *in)
{
	struct rmca_context *ctx = in->l->ctx;
	int rc;

	free(in->msg);
	in->msg = NULL;
	if (in->res.status) {
		/* Logged when decided; a probe changes nothing here. */
		incoming_fail(in, in->res.status, 0, NULL);
		return;
	}
	/* Quiet until the control channel takes the socket over, but for
	 * the peer's rails reply. */
	in->await_rails = in->res.plan.n > 0;
	in->have = in->len = 0;
	incoming_watch(in, in->await_rails ? EPOLLIN : 0);
	in->ep = ep_new(ctx, in->res.mod, &in->res.peer_mod, in->res.token,
			in->who);
	if (in->ep && rmca_rails_new(in->ep, &in->res.plan)) {
		free(in->ep);
		in->ep = NULL;
	}
	if (!in->ep) {
		incoming_fail(in, 0, 0, "out of memory");
		return;
	}
	in->state = IN_CONNECT;
	/* All listed rails start at once; those the peer does not take are
	 * dropped when it says so. */
	rc = ep_connect(in->ep, &in->res.peer_mod, 0, in->res.local, in->host,
			in->deadline, &in->h);
	if (rc) {
		incoming_fail(in, 0, 0, NULL);
		return;
	}
	rmca_rails_connect(in->ep, 0, in->res.local, in->host, in->deadline);
	incoming_connecting(in);
}

static void incoming_step(struct rmca_incoming *in)
{
	uint8_t *answer;
	size_t alen = 0;
	int rc;

	switch (in->state) {
	case IN_HELLO:
		if (incoming_read(in) <= 0)
			return;
		answer = hello_answer(in->l->ctx, in->l, in->msg, in->len,
				      in->who, in->host, &in->res, &alen);
		free(in->msg);
		in->msg = answer;
		in->len = alen;
		in->have = 0;
		if (!answer) {
			incoming_fail(in, in->res.status, 0, NULL);
			return;
		}
		in->state = IN_ANSWER;
		/* fall through */
	case IN_ANSWER:
		rc = incoming_write(in);
		if (rc > 0)
			incoming_answered(in);
		return;
	case IN_CONNECT:
		/* watched only for the peer's rails reply */
		incoming_connecting(in);
		return;
	case IN_READY:
		return;
	}
}

static void incoming_cb(void *arg, uint32_t events)
{
	incoming_step(arg);
}

/* Out of descriptors (err) at the listening socket lfd: one waiting peer
 * closed with the spare *spare given up for it, so that nobody hangs and
 * lfd does not stay readable. False: there was no spare, or no peer; the
 * caller rests. Said (as what) once a minute at most. */
bool rmca_listen_shed(int lfd, int *spare, int64_t *said, const char *what,
		      int port, int err)
{
	int64_t now = rmca_now_ms();
	int fd;

	if (now >= *said) {
		rmca_log(0,
			 "%s on port %d: out of file descriptors (%s): "
			 "closing new connections at once",
			 what, port, strerror(err));
		*said = now + 60000;
	}
	if (*spare < 0)
		return false;
	close(*spare);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	*spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

/* Out of descriptors: shed one peer with the spare, so that nobody hangs
 * and the listener does not spin; without a spare, rest a second. */
static bool listener_shed(struct rmca_listener *l, int err)
{
	if (rmca_listen_shed(l->fd, &l->spare_fd, &l->shed_said, "listener",
			     l->port, err))
		return true;
	listener_arm(l, false);
	l->rest_until = rmca_now_ms() + 1000;
	return false;
}

/*
 * At the handshake bound, every handshake under way is stepped once more
 * first, so that a hello (or the rest of a handshake) already in its
 * socket is served, not lost. True: a slot came free (one that was stepped
 * ended).
 */
static bool listener_step_all(struct rmca_listener *l)
{
	struct rmca_incoming *in, *next;

	for (in = l->incoming; in; in = next) {
		int n = l->nincoming;

		next = in->next;
		if (in->state == IN_READY)
			continue;
		/* a listener's own: this touches no other entry */
		incoming_step(in);
		if (l->nincoming < n)
			return true;
	}
	return false;
}

/* Whether some connection could give way: one whose handshake is not done
 * (a made endpoint waiting for rmca_accept never does). */
static bool listener_evictable(const struct rmca_listener *l)
{
	for (const struct rmca_incoming *in = l->incoming; in; in = in->next)
		if (in->state != IN_READY)
			return true;
	return false;
}

/* The listener's connections for fair_victim: the oldest first, the
 * silent (rank 0) before those whose handshake is under way. */
static const void *incoming_next(void *arg, const void *cur,
				 struct rmca_fair_entry *e)
{
	const struct rmca_listener *l = arg;
	const struct rmca_incoming *in =
		cur ? ((const struct rmca_incoming *)cur)->next : l->incoming;

	if (in)
		*e = (struct rmca_fair_entry){.key = in->host,
					      .len = strlen(in->host),
					      .may_go = in->state != IN_READY,
					      .rank = in->state != IN_HELLO};
	return in;
}

const void *rmca_core_fair_victim(const struct rmca_core *core, size_t n,
				  rmca_fair_next next, void *arg,
				  const struct rmca_fair_entry *newcomer)
{
	return rmca_fair_victim(&rmca_core_ctx(core)->fair, n, next, arg,
				newcomer);
}

/*
 * At the handshake bound, the connection that gives way to a new one, from
 * host (fair_victim, as every listener chooses). Fair to sources first: it
 * comes from the address that holds the most slots, the newcomer counted
 * with its own, so that one address that connects and sends whole hellos
 * as fast as it can pushes out its own connections, never a client from
 * elsewhere in the middle of its handshake. Among the connections of the
 * addresses that hold the most, the oldest that has not sent its whole
 * hello: the silent and the slow go first, as sshd's MaxStartups and a SYN
 * backlog let half-open peers go. With none of those, the oldest whose
 * handshake is under way (answered, its answer, rails reply or transport
 * connections still due): a peer that sends whole hellos and never makes
 * its data connection would hold every slot until RMCA_connect_timeout
 * otherwise. The ib and iwarp modules' connection requests and tcp's
 * waiting data sockets give way the same way. A made endpoint waiting for
 * rmca_accept never gives way: it did all that was asked, as a connection
 * in the kernel's accept queue or a CM connect request handed to the
 * application did; it counts in its address's slots all the same.
 *
 * What remains: many addresses can still take every slot between them
 * (one slot each, the oldest silent one goes first), and the peers of one
 * address share its fate: honest clients behind the address of a flooder
 * (the same host, a NAT, every peer on loopback at 127.0.0.1) give way as
 * its connections do. Slots are counted per address (the cost: two passes
 * over the connections, only at the bound, at most one eviction a pass of
 * the event loop, no allocation once the context's counts are sized).
 */
static struct rmca_incoming *listener_victim(struct rmca_listener *l,
					     const char *host)
{
	const struct rmca_fair_entry e = {.key = host, .len = strlen(host)};

	return (struct rmca_incoming *)rmca_fair_victim(
		&l->ctx->fair, (size_t)l->nincoming, incoming_next, l, &e);
}

/* The victim gives way to a connection just accepted: said (rate-limited
 * with the other failed handshakes), and its socket closed. */
static void listener_evict(struct rmca_listener *l, struct rmca_incoming *in)
{
	char what[64], why[192];

	if (in->state == IN_HELLO)
		snprintf(what, sizeof(what), "no hello after %zu bytes",
			 in->have + (in->msg ? sizeof(in->pfx) : 0));
	else
		snprintf(what, sizeof(what), "handshake not done (%s)",
			 in->state == IN_ANSWER ? "its answer not read"
			 : in->await_rails	? "no reply to the rails"
						: "no transport connection");
	snprintf(why, sizeof(why),
		 "%s, closed for a newer connection: all %d handshake slots "
		 "taken (RMCA_handshake_max)",
		 what, l->ctx->handshake_max);
	incoming_fail(in, 0, 0, why);
}

/*
 * New connections, while there is a slot. At the bound, one new connection
 * per call (thus per pass of the event loop) takes the slot of a victim,
 * so that peers that connect and say nothing, drip their hello or never
 * finish their handshake cannot keep everyone else in the backlog until
 * RMCA_connect_timeout: among the connections of one address, a newcomer
 * outlives handshake_max - 1 later ones before its turn to give way comes
 * (listener_victim: those of the address holding the most slots go
 * first), and its hello, if in by then, is read first. Bounded still:
 * never more than handshake_max connections, and one eviction a pass.
 */
static void listener_cb(void *arg, uint32_t events)
{
	struct rmca_listener *l = arg;
	struct rmca_context *ctx = l->ctx;
	bool evicted = false;

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct rmca_incoming *in, **pp;
		bool full = false;
		int fd;

		if (l->nincoming >= ctx->handshake_max) {
			if (evicted)
				return; /* armed: the next pass takes more */
			if (!listener_step_all(l) && !listener_evictable(l))
				break;
			full = l->nincoming >= ctx->handshake_max;
		}
		fd = accept4(l->fd, (struct sockaddr *)&ss, &sl,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE ||
			     errno == ENOBUFS || errno == ENOMEM) &&
			    listener_shed(l, errno))
				continue;
			return;
		}
		in = calloc(1, sizeof(*in));
		if (!in) {
			close(fd);
			continue;
		}
		in->l = l;
		in->fd = fd;
		in->deadline = rmca_now_ms() + ctx->connect_timeout_ms;
		rmca_sockaddr_name((struct sockaddr *)&ss, sl, in->host,
				   sizeof(in->host), in->who, sizeof(in->who));
		if (full) {
			/* nothing was stepped since: some can give way */
			listener_evict(l, listener_victim(l, in->host));
			evicted = true;
		}
		if (ctx->core.ops->fd_add(&ctx->core, fd, EPOLLIN, incoming_cb,
					  in)) {
			close(fd);
			free(in);
			continue;
		}
		in->watched = true;
		in->events = EPOLLIN;
		/* Oldest first: endpoints are handed out in arrival order. */
		for (pp = &l->incoming; *pp; pp = &(*pp)->next)
			;
		*pp = in;
		l->nincoming++;
	}
	/* At the bound, nobody to give way: the backlog holds the next
	 * peers until a slot comes free. */
	listener_arm(l, false);
}

/* A listener that rests or handshakes: its deadlines and module connects. */
static __attribute__((noinline)) void
listener_progress(struct rmca_context *ctx, struct rmca_listener *l,
		  int64_t *now)
{
	struct rmca_incoming *in, *next;

	if (*now < 0)
		*now = rmca_now_ms();
	if (l->ticking && l->tick)
		l->tick(l->owner, *now); /* may leave the list: nothing else */
	if (l->rest_until && *now >= l->rest_until) {
		l->rest_until = 0;
		if (l->nincoming < ctx->handshake_max)
			listener_arm(l, true);
	}
	for (in = l->incoming; in; in = next) {
		int rc;

		next = in->next;
		if (in->state == IN_READY)
			continue;
		if (in->state == IN_CONNECT) {
			rc = ep_connect_poll(in->ep, &in->h);
			if (!rc && in->await_rails)
				rc = RMCA_ERR_AGAIN;
			if (!rc)
				incoming_ready(in);
			else if (rc != RMCA_ERR_AGAIN)
				incoming_fail(in, 0, 0, NULL);
			if (rc != RMCA_ERR_AGAIN)
				continue;
		}
		if (*now >= in->deadline && in->state == IN_CONNECT &&
		    !in->await_rails && ep_connect_late(in->ep, in->h)) {
			incoming_ready(in);
			continue;
		}
		if (*now >= in->deadline) {
			char why[96];

			in->timed_out = true;
			snprintf(why, sizeof(why),
				 "%s within %d ms "
				 "(RMCA_connect_timeout)",
				 in->state == IN_HELLO ? "no hello"
						       : "handshake not done",
				 ctx->connect_timeout_ms);
			incoming_fail(in, 0, 0, why);
		}
	}
}

void rmca_listeners_progress(struct rmca_context *ctx,
			     struct rmca_listener *busy)
{
	int64_t now = -1;
	struct rmca_list *ll, *tmp = busy->link.next;

	/* The pass found busy the first listener with work: the rest are
	 * asked here, and the clock is read only for one that has some. A
	 * handshake set with nothing left to do leaves the list. */
	listener_progress(ctx, busy, &now);
	for (ll = tmp; ll != &ctx->listeners; ll = tmp) {
		struct rmca_listener *l =
			rmca_list_entry(ll, struct rmca_listener, link);

		tmp = ll->next;
		if (rmca_listener_busy(l))
			listener_progress(ctx, l, &now);
	}
}

/*
 * Handshakes run inside every call on the context (rmca_poll included);
 * this one hands out the endpoints they made, oldest first, waiting for
 * one up to timeout_ms. A peer refused for what it sent during this call
 * makes it return that refusal (logged), so the caller learns of it.
 */
int rmca_accept(rmca_listener_t *l, int timeout_ms, rmca_ep_t **ep)
{
	struct rmca_context *ctx;
	int64_t deadline;
	unsigned refused;
	bool waited = false;

	if (!l || !ep)
		return RMCA_ERR_INVALID;
	ctx = l->ctx;
	deadline = timeout_ms < 0 ? INT64_MAX : rmca_now_ms() + timeout_ms;
	refused = l->refused;
	for (;;) {
		struct rmca_incoming *in;
		int slice;

		for (in = l->incoming; in && in->state != IN_READY;
		     in = in->next)
			;
		if (in) {
			*ep = in->ep;
			in->ep = NULL;
			incoming_drop(l, in);
			return 0;
		}
		if (l->refused != refused)
			return l->refused_status;
		if (waited && rmca_now_ms() >= deadline)
			return RMCA_ERR_TIMEOUT;
		/* Wake for the handshakes' deadlines too. */
		slice = waited ? rmca_ms_left(deadline) : 0;
		rmca_progress(ctx, slice > 100 ? 100 : slice);
		waited = true;
	}
}

/*
 * Handshake sets (jobs): the passive half of the handshake on connections
 * that another layer accepted and matched itself, run as a listener's
 * incoming ones, every step from the socket's callback or the progress
 * loop, never waiting, each against its own deadline. A set is a listener
 * without a socket, on the context's list while it has handshakes (or its
 * owner's tick is on), so that every pass of the event loop advances them;
 * rmca_accept never sees it,
 * and it hands no endpoint out to one: its owner hears once of
 * each handshake's end, with the endpoint or why there is none, from the
 * event loop (never from the call that added it).
 */
struct rmca_listener *
rmca_handshakes_open(struct rmca_context *ctx, rmca_handshake_done_fn done,
		     void (*tick)(void *owner, int64_t now), void *owner)
{
	struct rmca_listener *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->ctx = ctx;
	l->fd = -1;
	l->spare_fd = -1;
	l->done = done;
	l->tick = tick;
	l->owner = owner;
	rmca_list_init(&l->link); /* on ctx->listeners while it has work */
	return l;
}

void rmca_handshakes_tick(struct rmca_listener *l, bool on)
{
	l->ticking = on;
	if (on && !rmca_list_linked(&l->link))
		rmca_list_add(&l->ctx->listeners, &l->link);
	else if (!on && !l->incoming)
		rmca_list_del(&l->link);
}

int rmca_handshakes_add(struct rmca_listener *l, int fd, uintptr_t tag)
{
	struct rmca_context *ctx = l->ctx;
	struct rmca_incoming *in, **pp;

	in = calloc(1, sizeof(*in));
	if (!in) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	in->l = l;
	in->fd = fd;
	in->tag = tag;
	in->deadline = rmca_now_ms() + ctx->connect_timeout_ms;
	rmca_peer_name(fd, in->host, sizeof(in->host), in->who,
		       sizeof(in->who));
	if (ctx->core.ops->fd_add(&ctx->core, fd, EPOLLIN, incoming_cb, in)) {
		close(fd);
		free(in);
		return RMCA_ERR_NO_MEMORY;
	}
	in->watched = true;
	in->events = EPOLLIN;
	for (pp = &l->incoming; *pp; pp = &(*pp)->next)
		;
	*pp = in;
	l->nincoming++;
	if (!rmca_list_linked(&l->link))
		rmca_list_add(&ctx->listeners, &l->link);
	return 0;
}

bool rmca_handshakes_cancel(struct rmca_listener *l, uintptr_t tag)
{
	for (struct rmca_incoming *in = l->incoming; in; in = in->next) {
		if (in->tag == tag) {
			incoming_drop(l, in);
			return true;
		}
	}
	return false;
}

int rmca_handshakes_pollfds(const struct rmca_listener *l, struct pollfd *pfd,
			    int max)
{
	int n = 0;

	for (const struct rmca_incoming *in = l->incoming; in && n < max;
	     in = in->next) {
		if (!in->watched || !in->events)
			continue;
		pfd[n++] = (struct pollfd){
			.fd = in->fd,
			.events =
				(short)((in->events & EPOLLIN ? POLLIN : 0) |
					(in->events & EPOLLOUT ? POLLOUT : 0)),
		};
	}
	return n;
}

/* The active side's handshake, shared by rmca_connect and the probe of
 * rmca_info_explain. */
struct active_hs {
	int fd;
	int64_t deadline;
	uint64_t token;
	int local;
	struct rmca_hello *peer, *mine;
	struct rmca_selection sel;
	struct rmca_mod *mod;
	struct rmca_rail_plan plan;
	char host[64]; /* numeric address of the listener */
	char who[96];
	char why[320]; /* on failure: the reason, for the log line */
};

/* The status a listener's reject carries, as this side reports it: only
 * statuses a listener may give pass through. */
static int reject_status(int status)
{
	switch (status) {
	case RMCA_ERR_UNREACHABLE:
	case RMCA_ERR_PROTOCOL:
	case RMCA_ERR_AGAIN:
		return status;
	default:
		return RMCA_ERR_PROTOCOL;
	}
}

static void hs_release(struct active_hs *hs)
{
	if (hs->fd >= 0)
		close(hs->fd);
	free(hs->peer);
	free(hs->mine);
}

static void readable_cb(void *arg, uint32_t events)
{
	*(bool *)arg = true;
}

/* Wait for fd to become readable, progressing the context meanwhile (its
 * endpoints, and its own listeners: a context may connect to itself). */
static int wait_readable(struct rmca_context *ctx, int fd, int64_t deadline)
{
	bool ready = false;
	int rc;

	rc = ctx->core.ops->fd_add(&ctx->core, fd, EPOLLIN, readable_cb,
				   &ready);
	if (rc)
		return rc;
	while (!ready && rmca_now_ms() < deadline) {
		int left = rmca_ms_left(deadline);

		rmca_progress(ctx, left > 100 ? 100 : left);
	}
	ctx->core.ops->fd_del(&ctx->core, fd);
	return ready ? 0 : RMCA_ERR_TIMEOUT;
}

static int rails_plan(struct rmca_context *ctx, struct active_hs *hs,
		      struct reach_arg *ra);
static int rails_reply(struct active_hs *hs, uint8_t *buf, size_t cap);

/* fd >= 0: a bootstrap connection already open (jobs), host_port unused. */
static int handshake_active(struct rmca_context *ctx, const char *host_port,
			    int fd, int timeout_ms, uint8_t role,
			    struct active_hs *hs)
{
	char host[256], port[8], why[256];
	struct reach_arg ra;
	uint8_t *buf = NULL;
	size_t len;
	int rc;

	memset(hs, 0, sizeof(*hs));
	hs->fd = fd;
	hs->deadline = rmca_now_ms() +
		       (timeout_ms < 0 ? ctx->connect_timeout_ms : timeout_ms);
	if (hs->fd >= 0)
		goto connected;
	if (rmca_parse_host_port(host_port, host, sizeof(host), port,
				 sizeof(port))) {
		snprintf(hs->why, sizeof(hs->why), RMCA_HOST_PORT_HELP);
		rc = RMCA_ERR_INVALID;
		goto fail;
	}
	if (!strtol(port, NULL, 10)) {
		snprintf(hs->why, sizeof(hs->why), "port 0 names no listener");
		rc = RMCA_ERR_INVALID;
		goto fail;
	}
	hs->fd = rmca_tcp_connect(host, port, hs->deadline, hs->why,
				  sizeof(hs->why));
	if (hs->fd < 0) {
		rc = hs->fd;
		hs->fd = -1;
		goto fail;
	}
connected:
	rmca_peer_name(hs->fd, hs->host, sizeof(hs->host), hs->who,
		       sizeof(hs->who));
	hs->peer = malloc(sizeof(*hs->peer));
	hs->mine = malloc(sizeof(*hs->mine));
	buf = malloc(RMCA_HELLO_MAX);
	if (!hs->peer || !hs->mine || !buf) {
		rc = RMCA_ERR_NO_MEMORY;
		goto out;
	}
	while (!hs->token)
		ctx->core.ops->random(&hs->token, sizeof(hs->token));
	hello_fill(ctx, hs->mine, role, hs->token);
	rc = rmca_hello_encode(hs->mine, buf, RMCA_HELLO_MAX);
	if (rc < 0)
		goto out;
	rc = rmca_msg_send(hs->fd, buf, (size_t)rc, hs->deadline);
	if (!rc)
		rc = wait_readable(ctx, hs->fd, hs->deadline);
	if (!rc)
		rc = rmca_msg_recv(hs->fd, buf, RMCA_HELLO_MAX, &len,
				   hs->deadline, why, sizeof(why));
	if (rc == RMCA_ERR_CONNECTION || rc == RMCA_ERR_TIMEOUT) {
		snprintf(hs->why, sizeof(hs->why), "%s during the hello",
			 rc == RMCA_ERR_TIMEOUT ? "no answer in time"
						: "the listener closed");
		goto out;
	}
	if (rc == RMCA_ERR_PROTOCOL && strstr(why, "closed")) {
		/* A listener at its limits closes before answering. */
		snprintf(hs->why, sizeof(hs->why),
			 "the listener closed during the hello (%s)", why);
		rc = RMCA_ERR_CONNECTION;
		goto out;
	}
	if (!rc)
		rc = rmca_hello_decode(buf, len, hs->peer, why, sizeof(why));
	if (rc) {
		snprintf(hs->why, sizeof(hs->why), "bad hello: %s", why);
		goto out;
	}
	if (hs->peer->kind == RMCA_WIRE_REJECT) {
		snprintf(hs->why, sizeof(hs->why), "refused by the peer: %s",
			 hs->peer->reason);
		rc = reject_status(hs->peer->status);
		goto out;
	}
	if (hs->peer->role != RMCA_ROLE_PASSIVE ||
	    hs->peer->token != hs->token ||
	    hs->peer->choice_a >= hs->mine->nmods ||
	    hs->peer->choice_p >= hs->peer->nmods ||
	    strcmp(hs->mine->mods[hs->peer->choice_a].component,
		   hs->peer->mods[hs->peer->choice_p].component)) {
		snprintf(hs->why, sizeof(hs->why),
			 "the peer's answer names no valid transport");
		rc = RMCA_ERR_PROTOCOL;
		goto out;
	}
	hs->local = peer_local(ctx, hs->peer);
	/* The passive side decides (it alone can judge reachability of its
	 * own modules); our own view is logged so a disagreement shows. */
	ra = (struct reach_arg){
		.ctx = ctx, .mine = hs->mine, .peer = hs->peer, .host = hs->host
	};
	if (!rmca_select(hs->mine->mods, hs->mine->nmods, hs->peer->mods,
			 hs->peer->nmods, 1, hs->local, 0, reach_cb, &ra,
			 &hs->sel) &&
	    (hs->sel.a != hs->peer->choice_a || hs->sel.p != hs->peer->choice_p))
		rmca_log(1, "connect %s: the peer chose %s %s; this side would have chosen %s %s",
			 hs->who, hs->mine->mods[hs->peer->choice_a].component,
			 hs->mine->mods[hs->peer->choice_a].device,
			 hs->mine->mods[hs->sel.a].component,
			 hs->mine->mods[hs->sel.a].device);
	log_lines("select", hs->who, hs->sel.reasons);
	/* But a module of ours that cannot reach the peer's (its route leaves
	 * through another device) is not used, whoever chose it. */
	if (!reach_cb(&ra, hs->peer->choice_a, hs->peer->choice_p, why,
		      sizeof(why))) {
		snprintf(hs->why, sizeof(hs->why),
			 "the peer chose %s %s<->%s, which this side cannot "
			 "use: %s",
			 hs->mine->mods[hs->peer->choice_a].component,
			 hs->mine->mods[hs->peer->choice_a].device,
			 hs->peer->mods[hs->peer->choice_p].device, why);
		rc = RMCA_ERR_UNREACHABLE;
		goto out;
	}
	hs->mod = offered_mod(ctx, hs->mine, hs->peer->choice_a);
	if (!hs->mod) {
		snprintf(hs->why, sizeof(hs->why),
			 "the peer chose a module this side did not offer");
		rc = RMCA_ERR_PROTOCOL;
	}
	if (!rc)
		rc = rails_plan(ctx, hs, &ra);
	if (!rc && role == RMCA_ROLE_ACTIVE && hs->peer->nrails)
		rc = rails_reply(hs, buf, RMCA_HELLO_MAX);
out:
	free(buf);
fail:
	if (rc && !hs->why[0])
		snprintf(hs->why, sizeof(hs->why), "%s", rmca_strerror(rc));
	return rc;
}

/* Are the peer's rails pairs that this side offered, of the chosen
 * transport, no module of either side in two? */
static bool rails_valid(const struct rmca_hello *mine,
			const struct rmca_hello *peer, int max)
{
	const char *comp = mine->mods[peer->choice_a].component;

	if (peer->nrails > max - 1)
		return false;
	for (unsigned i = 0; i < peer->nrails; i++) {
		unsigned a = peer->rail_a[i], p = peer->rail_p[i];

		if (a >= mine->nmods || p >= peer->nmods ||
		    a == peer->choice_a || p == peer->choice_p ||
		    strcmp(mine->mods[a].component, comp) ||
		    strcmp(peer->mods[p].component, comp))
			return false;
		for (unsigned j = 0; j < i; j++)
			if (peer->rail_a[j] == a || peer->rail_p[j] == p)
				return false;
	}
	return true;
}

/* The active side's plan of the rails the peer listed. A pair this side
 * cannot use (its route leaves through another device) keeps its index,
 * without a module: the rails are numbered alike on both sides. */
static int rails_plan(struct rmca_context *ctx, struct active_hs *hs,
		      struct reach_arg *ra)
{
	const struct rmca_hello *peer = hs->peer;

	if (!rails_valid(hs->mine, peer, ctx->max_rails)) {
		snprintf(hs->why, sizeof(hs->why),
			 "the peer's answer names rails that are no pairs of "
			 "the chosen transport");
		return RMCA_ERR_PROTOCOL;
	}
	hs->plan.n = peer->nrails;
	for (unsigned i = 0; i < peer->nrails; i++) {
		char why[256];

		hs->plan.peer[i] = peer->mods[peer->rail_p[i]];
		if (!reach_cb(ra, peer->rail_a[i], peer->rail_p[i], why,
			      sizeof(why))) {
			rmca_log(0,
				 "connect %s: rail %u (%s<->%s) left out: %s",
				 hs->who, i + 1,
				 hs->mine->mods[peer->rail_a[i]].device,
				 peer->mods[peer->rail_p[i]].device, why);
			continue;
		}
		hs->plan.mod[i] = offered_mod(ctx, hs->mine, peer->rail_a[i]);
	}
	return 0;
}

/* Tell the passive side which of the rails it listed this side takes (the
 * plan's, those with a module), before connecting any: it waits for those
 * and no other. */
static int rails_reply(struct active_hs *hs, uint8_t *buf, size_t cap)
{
	struct rmca_hello t = {.version = RMCA_WIRE_VERSION,
			       .kind = RMCA_WIRE_RAILS};
	int n;

	for (int i = 0; i < hs->plan.n; i++)
		if (hs->plan.mod[i])
			t.taken[t.ntaken++] = (uint8_t)i;
	n = rmca_hello_encode(&t, buf, cap);
	if (n < 0)
		return n;
	n = rmca_msg_send(hs->fd, buf, (size_t)n, hs->deadline);
	if (n)
		snprintf(hs->why, sizeof(hs->why),
			 "the listener closed before the rails were settled");
	return n;
}

/* The module connects while the context progresses (its other endpoints
 * keep moving); then the endpoint is made. */
static int establish_active(struct rmca_context *ctx, struct active_hs *hs,
			    rmca_ep_t **out)
{
	const struct rmca_wire_mod *pm = &hs->peer->mods[hs->peer->choice_p];
	struct rmca_connecting *h = NULL;
	struct rmca_ep *ep;
	int rc;

	ep = ep_new(ctx, hs->mod, pm, hs->token, hs->who);
	if (ep && rmca_rails_new(ep, &hs->plan)) {
		free(ep);
		ep = NULL;
	}
	if (!ep)
		return RMCA_ERR_NO_MEMORY;
	rc = ep_connect(ep, pm, 1, hs->local, hs->host, hs->deadline, &h);
	if (!rc)
		rmca_rails_connect(ep, 1, hs->local, hs->host, hs->deadline);
	if (!rc)
		rc = ep_connect_poll(ep, &h);
	while (rc == RMCA_ERR_AGAIN) {
		int left = rmca_ms_left(hs->deadline);

		if (!left && ep_connect_late(ep, h)) {
			rc = 0;
			break;
		}
		if (!left) {
			ep_connect_abort(ep, &h);
			rmca_log(0, "%s: %s %s could not connect: %s", ep->peer,
				 ep->mod->comp->comp->name, ep->mod->m->device,
				 rmca_strerror(RMCA_ERR_TIMEOUT));
			rc = RMCA_ERR_TIMEOUT;
			break;
		}
		rmca_progress(ctx, left > 100 ? 100 : left);
		rc = ep_connect_poll(ep, &h);
	}
	if (rc) {
		if (ep->conn)
			ep->mod->m->ops->disconnect(ep->conn);
		ep_free_unmade(ep);
		return rc;
	}
	rc = ep_finish(ep, hs->fd, hs->local);
	if (rc)
		return rc;
	hs->fd = -1;
	*out = ep;
	return 0;
}

int rmca_connect(rmca_context_t *ctx, const char *host_port, int timeout_ms,
		 rmca_ep_t **out)
{
	struct active_hs hs;
	int rc;

	if (!ctx || !out)
		return RMCA_ERR_INVALID;
	rc = handshake_active(ctx, host_port, -1, timeout_ms, RMCA_ROLE_ACTIVE,
			      &hs);
	if (rc)
		rmca_log(0, "connect %s: %s", host_port, hs.why);
	if (!rc)
		rc = establish_active(ctx, &hs, out);
	hs_release(&hs);
	return rc;
}

/*
 * Jobs (job.c): the active half of the handshake on a bootstrap connection
 * that the job layer opened and matched to a rank itself, inside the rank's
 * rmca_job_ep. fd is consumed. The passive half is a handshake set's
 * (rmca_handshakes_add).
 */
int rmca_ep_connect_fd(struct rmca_context *ctx, int fd, int timeout_ms,
		       struct rmca_ep **out)
{
	struct active_hs hs;
	int rc;

	rc = handshake_active(ctx, NULL, fd, timeout_ms, RMCA_ROLE_ACTIVE, &hs);
	if (rc)
		rmca_log(0, "connect %s: %s", hs.who, hs.why);
	if (!rc)
		rc = establish_active(ctx, &hs, out);
	hs_release(&hs);
	return rc;
}

int rmca_info_explain(rmca_context_t *ctx, const char *host_port,
		      int timeout_ms, char *out, size_t out_len)
{
	struct active_hs hs;
	struct rmca_ep probe;
	size_t used;
	int rc;

	if (!ctx || !out || !out_len)
		return RMCA_ERR_INVALID;
	out[0] = '\0';
	rc = handshake_active(ctx, host_port, -1, timeout_ms, RMCA_ROLE_PROBE,
			      &hs);
	if (rc && hs.peer && hs.peer->kind == RMCA_WIRE_REJECT)
		snprintf(out, out_len, "refused by the listener: %s\n",
			 hs.peer->reason);
	else if (rc)
		snprintf(out, out_len, "cannot reach the listener: %s\n",
			 hs.why);
	if (!rc) {
		/* Paths come from the same code an endpoint uses. */
		memset(&probe, 0, sizeof(probe));
		probe.ctx = ctx;
		probe.mod = hs.mod;
		probe.peer_caps = hs.peer->mods[hs.peer->choice_p].caps;
		ep_attr_fill(&probe, hs.local);
		snprintf(out, out_len,
			 "peer %s (%s)\ntransport %s, device %s <-> %s\n",
			 hs.who, hs.local ? "same host" : "remote host",
			 probe.attr.transport, probe.attr.device,
			 hs.peer->mods[hs.peer->choice_p].device);
		used = strlen(out);
		for (unsigned i = 0; i < hs.peer->nrails; i++) {
			snprintf(out + used, out_len - used,
				 "rail %u: device %s <-> %s\n", i + 1,
				 hs.mine->mods[hs.peer->rail_a[i]].device,
				 hs.peer->mods[hs.peer->rail_p[i]].device);
			used = strlen(out);
		}
		rmca_paths_describe(&probe, out + used, out_len - used);
		used = strlen(out);
		snprintf(out + used, out_len - used, "selection:\n%s",
			 hs.sel.reasons);
	}
	hs_release(&hs);
	return rc;
}

void rmca_ep_destroy(struct rmca_ep *ep)
{
	rmca_ctrl_close(ep);
	ep->mod->m->ops->disconnect(ep->conn);
	ep->conn = NULL;
	rmca_rails_destroy(ep); /* their parts complete into requests */
	/* its fences completed in there; what waits on the peer's core is
	 * in the request list too */
	rmca_get_core_close(ep);
	while (!rmca_list_empty(&ep->deferred))
		rmca_list_del(ep->deferred.next);
	for (struct rmca_req *r = ep->verify_wait, *n; r; r = n) {
		n = r->verify_next;
		r->verify_next = NULL;
		r->verifying = false;
	}
	ep->verify_wait = NULL;
	rmca_ep_cancel_all(ep, RMCA_ERR_CANCELED);
	while (ep->revokes) {
		struct rmca_revoke_note *n = ep->revokes->next;

		free(ep->revokes);
		ep->revokes = n;
	}
	rmca_list_del(&ep->link);
	free(ep);
}

bool rmca_ep_peer_closed(const struct rmca_ep *ep)
{
	uint8_t b;

	/* Both ends of a peer close together; its control channel shows
	 * which way (it is gone already if its end came first). */
	return !ep->ctrl ||
	       recv(ep->boot_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void rmca_ep_close(rmca_ep_t *ep)
{
	if (ep)
		rmca_ep_destroy(ep);
}

int rmca_ep_query(const rmca_ep_t *ep, struct rmca_ep_attr *attr)
{
	if (!ep || !attr)
		return RMCA_ERR_INVALID;
	*attr = ep->attr;
	return 0;
}
