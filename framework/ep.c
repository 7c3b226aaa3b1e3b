// SPDX-License-Identifier: BSD-3-Clause
/*
 * Listeners and endpoints: the bootstrap handshake, the choice of a
 * transport, and the hand-over to the chosen module.
 *
 * The active side sends its hello; the passive side validates it, applies
 * the selection rule and answers with its own hello carrying the chosen
 * pair (or with a reject and its reason). The active side checks that the
 * choice names modules it offered, then both let the module connect.
 */
#include <errno.h>
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
#include "select.h"
#include "wire.h"

struct rmca_incoming;
static void incoming_drop(struct rmca_listener *l, struct rmca_incoming *in);

int rmca_listen(rmca_context_t *ctx, const char *host_port, rmca_listener_t **out)
{
	char host[256], port[8];
	struct rmca_listener *l;
	int fd, bound;

	if (!ctx || !out ||
	    rmca_parse_host_port(host_port, host, sizeof(host), port, sizeof(port)))
		return RMCA_ERR_INVALID;
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
	RMCA_LIST_ADD(ctx->listeners, l);
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
	if (!l)
		return;
	while (l->incoming)
		incoming_drop(l, l->incoming);
	close(l->fd);
	RMCA_LIST_DEL(l->ctx->listeners, l);
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
	if (!mod->m->ops->reachable)
		return 1;
	return mod->m->ops->reachable(mod->m, pm->addr, pm->addr_len, why,
				      why_len);
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

/* Both sides: hand the connection to the module and make the endpoint. */
static int ep_establish(struct rmca_context *ctx, int fd, struct rmca_mod *mod,
			const struct rmca_wire_mod *peer_mod, int active,
			uint64_t token, int peer_is_local, int64_t deadline,
			rmca_ep_t **out)
{
	struct rmca_conn_args args = {
		.active = active,
		.peer_addr = peer_mod->addr,
		.peer_addr_len = peer_mod->addr_len,
		.token = token,
		.timeout_ms = rmca_ms_left(deadline),
		.peer_is_local = peer_is_local,
	};
	struct rmca_ep *ep = calloc(1, sizeof(*ep));
	int rc;

	if (!ep)
		return RMCA_ERR_NO_MEMORY;
	ep->ctx = ctx;
	ep->mod = mod;
	ep->token = token;
	ep->peer_caps = peer_mod->caps;
	rmca_peer_name(fd, args.peer_host, sizeof(args.peer_host), ep->peer,
		       sizeof(ep->peer));
	args.cookie = ep;
	rc = mod->m->ops->connect(mod->m, &args, &ep->conn);
	if (rc) {
		rmca_log(0, "%s: %s %s could not connect: %s", ep->peer,
			 mod->comp->comp->name, mod->m->device, rmca_strerror(rc));
		free(ep);
		return rc;
	}
	ep_attr_fill(ep, peer_is_local);
	rc = rmca_ctrl_open(ep, fd);
	if (rc) {
		mod->m->ops->disconnect(ep->conn);
		free(ep);
		return rc;
	}
	RMCA_LIST_ADD(ctx->eps, ep);
	rmca_log(1, "%s: connected over %s %s (%s)", ep->peer,
		 ep->attr.transport, ep->attr.device,
		 peer_is_local ? "same host" : "remote host");
	if (rmca_log_verbose >= 1) {
		char paths[1024];

		rmca_paths_describe(ep, paths, sizeof(paths));
		log_lines("paths", ep->peer, paths);
	}
	*out = ep;
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

static void send_reject(int fd, int status, const char *reason, int64_t deadline)
{
	struct rmca_hello h = { .version = RMCA_WIRE_VERSION,
				.kind = RMCA_WIRE_REJECT,
				.status = status };
	uint8_t buf[512];
	int n;

	snprintf(h.reason, sizeof(h.reason), "%s", reason);
	n = rmca_hello_encode(&h, buf, sizeof(buf));
	if (n > 0)
		rmca_msg_send(fd, buf, (size_t)n, deadline);
}

/*
 * The passive side of the handshake, once the peer's hello (body, len) is
 * in. Returns 0 with *out, RMCA_ERR_AGAIN after answering a probe (no
 * endpoint), or an error; fd is consumed either way.
 */
static int handshake_passive(struct rmca_context *ctx, int fd,
			     const uint8_t *body, size_t len, int64_t deadline,
			     rmca_ep_t **out)
{
	struct rmca_hello *peer = NULL, *mine = NULL;
	struct rmca_selection sel;
	struct reach_arg ra;
	char host[64], who[96], why[256];
	uint8_t *buf = NULL;
	int rc, local;

	rmca_peer_name(fd, host, sizeof(host), who, sizeof(who));
	peer = malloc(sizeof(*peer));
	mine = malloc(sizeof(*mine));
	buf = malloc(RMCA_HELLO_MAX);
	if (!peer || !mine || !buf) {
		rc = RMCA_ERR_NO_MEMORY;
		goto out;
	}
	rc = rmca_hello_decode(body, len, peer, why, sizeof(why));
	if (!rc && (peer->kind != RMCA_WIRE_HELLO ||
		    peer->role == RMCA_ROLE_PASSIVE)) {
		snprintf(why, sizeof(why), "expected an active hello");
		rc = RMCA_ERR_PROTOCOL;
	}
	if (rc) {
		rmca_log(0, "bootstrap from %s refused: %s", who, why);
		if (strstr(why, "version"))
			send_reject(fd, RMCA_ERR_PROTOCOL, why, deadline);
		goto out;
	}
	if (peer->atomic_mode != ctx->atomic_resolved) {
		snprintf(why, sizeof(why),
			 "atomic mode differs: listener %s, connecting side %s "
			 "(RMCA_atomic_mode)",
			 mode_name(ctx->atomic_resolved),
			 mode_name(peer->atomic_mode));
		rmca_log(0, "bootstrap from %s refused: %s", who, why);
		send_reject(fd, RMCA_ERR_PROTOCOL, why, deadline);
		rc = RMCA_ERR_PROTOCOL;
		goto out;
	}
	local = peer_local(ctx, peer);
	hello_fill(ctx, mine, RMCA_ROLE_PASSIVE, peer->token);
	ra = (struct reach_arg){ .ctx = ctx, .mine = mine, .peer = peer };
	rc = rmca_select(peer->mods, peer->nmods, mine->mods, mine->nmods, 0,
			 local, 0, reach_cb, &ra, &sel);
	log_lines("select", who, sel.reasons);
	if (rc) {
		/* the reasons matter most when nothing is left: say them */
		for (char *nl = strchr(sel.reasons, '\n'); nl && nl[1];
		     nl = strchr(nl, '\n'))
			*nl = ';';
		rmca_log(0, "%s: no enabled transport reaches the peer: %s",
			 who, sel.reasons);
		send_reject(fd, RMCA_ERR_UNREACHABLE,
			    "no enabled transport reaches the peer", deadline);
		goto out;
	}
	mine->choice_a = (uint8_t)sel.a;
	mine->choice_p = (uint8_t)sel.p;
	rc = rmca_hello_encode(mine, buf, RMCA_HELLO_MAX);
	if (rc < 0)
		goto out;
	rc = rmca_msg_send(fd, buf, (size_t)rc, deadline);
	if (rc) {
		rmca_log(0, "bootstrap from %s: peer went away during the hello",
			 who);
		rc = RMCA_ERR_CONNECTION;
		goto out;
	}
	if (peer->role == RMCA_ROLE_PROBE) {
		/* rmca_info --explain: it learnt the choice; no endpoint */
		rmca_log(1, "bootstrap from %s: explained the choice", who);
		rc = RMCA_ERR_AGAIN;
		goto out;
	}
	rc = ep_establish(ctx, fd, offered_mod(ctx, mine, (unsigned)sel.p),
			  &peer->mods[sel.a], 0, peer->token, local, deadline,
			  out);
	if (!rc)
		fd = -1;
out:
	if (fd >= 0)
		close(fd);
	free(peer);
	free(mine);
	free(buf);
	return rc;
}

/* An incoming bootstrap connection whose hello is still arriving. */
struct rmca_incoming {
	struct rmca_incoming *next;
	int fd;
	int64_t deadline;
	size_t have;
	uint8_t buf[4 + RMCA_HELLO_MAX];
};

static void incoming_drop(struct rmca_listener *l, struct rmca_incoming *in)
{
	struct rmca_incoming **pp;

	for (pp = &l->incoming; *pp != in; pp = &(*pp)->next)
		;
	*pp = in->next;
	if (in->fd >= 0)
		close(in->fd);
	free(in);
}

/*
 * Read what in's peer sent so far. 1: the hello is complete; 0: not yet;
 * negative: the peer is refused (why says so).
 */
static int incoming_read(struct rmca_incoming *in, char *why, size_t why_len)
{
	for (;;) {
		size_t want = 4, n;
		ssize_t got;

		if (in->have >= 4) {
			n = in->buf[0] | in->buf[1] << 8 | in->buf[2] << 16 |
			    (size_t)in->buf[3] << 24;
			if (n > RMCA_HELLO_MAX) {
				snprintf(why, why_len,
					 "message of %zu bytes, at most %d", n,
					 RMCA_HELLO_MAX);
				return RMCA_ERR_PROTOCOL;
			}
			want = 4 + n;
			if (in->have == want)
				return 1;
		}
		got = recv(in->fd, in->buf + in->have, want - in->have,
			   MSG_DONTWAIT);
		if (got > 0) {
			in->have += (size_t)got;
			continue;
		}
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
				errno == EINTR))
			return 0;
		snprintf(why, why_len, "closed after %zu bytes of its hello",
			 in->have);
		return RMCA_ERR_PROTOCOL;
	}
}

/*
 * Accept waits for connections and for their hellos together, so a peer
 * that connects and stays silent holds up nobody: its hello has
 * RMCA_connect_timeout to arrive, while this call keeps its own timeout.
 */
int rmca_accept(rmca_listener_t *l, int timeout_ms, rmca_ep_t **ep)
{
	struct rmca_context *ctx;
	int64_t deadline;

	if (!l || !ep)
		return RMCA_ERR_INVALID;
	ctx = l->ctx;
	deadline = timeout_ms < 0 ? INT64_MAX : rmca_now_ms() + timeout_ms;
	for (;;) {
		struct rmca_incoming *in, *next;
		struct pollfd pfd[65];
		int fd, npfd = 0, slice;
		char why[256];

		while ((fd = accept4(l->fd, NULL, NULL,
				     SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
			in = malloc(sizeof(*in));
			if (!in) {
				close(fd);
				return RMCA_ERR_NO_MEMORY;
			}
			in->fd = fd;
			in->have = 0;
			in->deadline = rmca_now_ms() + ctx->connect_timeout_ms;
			in->next = l->incoming;
			l->incoming = in;
		}
		for (in = l->incoming; in; in = next) {
			char host[64], who[96];
			int rc = incoming_read(in, why, sizeof(why));

			next = in->next;
			if (!rc && rmca_now_ms() >= in->deadline) {
				snprintf(why, sizeof(why),
					 "no hello within %d ms (RMCA_connect_timeout)",
					 ctx->connect_timeout_ms);
				rc = RMCA_ERR_TIMEOUT;
			}
			if (!rc)
				continue;
			if (rc < 0) {
				rmca_peer_name(in->fd, host, sizeof(host), who,
					       sizeof(who));
				rmca_log(0, "bootstrap from %s refused: %s", who,
					 why);
				incoming_drop(l, in);
				if (rc == RMCA_ERR_PROTOCOL)
					return rc;
				continue;
			}
			fd = in->fd;
			in->fd = -1;
			rc = handshake_passive(ctx, fd, in->buf + 4, in->have - 4,
					       in->deadline, ep);
			incoming_drop(l, in);
			if (rc != RMCA_ERR_AGAIN)
				return rc;
		}
		if (rmca_now_ms() >= deadline)
			return RMCA_ERR_TIMEOUT;
		/* Wait for the listener, the hellos and the context's own
		 * events, in slices, keeping the context moving. */
		pfd[npfd++] = (struct pollfd){ .fd = l->fd, .events = POLLIN };
		for (in = l->incoming; in && npfd < 64; in = in->next)
			pfd[npfd++] = (struct pollfd){ .fd = in->fd,
						       .events = POLLIN };
		pfd[npfd++] = (struct pollfd){ .fd = ctx->epfd, .events = POLLIN };
		slice = rmca_ms_left(deadline);
		poll(pfd, (nfds_t)npfd, slice > 50 ? 50 : slice);
		rmca_progress(ctx, 0);
	}
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

/* fd >= 0: a bootstrap connection already open (jobs), host_port unused. */
static int handshake_active(struct rmca_context *ctx, const char *host_port,
			    int fd, int timeout_ms, uint8_t role,
			    struct active_hs *hs)
{
	char host[256], port[8], why[256], phost[64];
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
	rmca_peer_name(hs->fd, phost, sizeof(phost), hs->who, sizeof(hs->who));
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
	ra = (struct reach_arg){ .ctx = ctx, .mine = hs->mine, .peer = hs->peer };
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
	hs->mod = offered_mod(ctx, hs->mine, hs->peer->choice_a);
	if (!hs->mod) {
		snprintf(hs->why, sizeof(hs->why),
			 "the peer chose a module this side did not offer");
		rc = RMCA_ERR_PROTOCOL;
	}
out:
	free(buf);
fail:
	if (rc && !hs->why[0])
		snprintf(hs->why, sizeof(hs->why), "%s", rmca_strerror(rc));
	return rc;
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
	if (!rc) {
		rc = ep_establish(ctx, hs.fd, hs.mod,
				  &hs.peer->mods[hs.peer->choice_p], 1, hs.token,
				  hs.local, hs.deadline, out);
		if (!rc)
			hs.fd = -1;
	}
	hs_release(&hs);
	return rc;
}

/*
 * Jobs (job.c): the two halves of the handshake on a bootstrap connection
 * that the job layer opened and matched to a rank itself. fd is consumed.
 */
int rmca_ep_connect_fd(struct rmca_context *ctx, int fd, int timeout_ms,
		       struct rmca_ep **out)
{
	struct active_hs hs;
	int rc;

	rc = handshake_active(ctx, NULL, fd, timeout_ms, RMCA_ROLE_ACTIVE, &hs);
	if (rc)
		rmca_log(0, "connect %s: %s", hs.who, hs.why);
	if (!rc) {
		rc = ep_establish(ctx, hs.fd, hs.mod,
				  &hs.peer->mods[hs.peer->choice_p], 1, hs.token,
				  hs.local, hs.deadline, out);
		if (!rc)
			hs.fd = -1;
	}
	hs_release(&hs);
	return rc;
}

int rmca_ep_accept_fd(struct rmca_context *ctx, int fd, int timeout_ms,
		      struct rmca_ep **out)
{
	int64_t deadline = rmca_now_ms() + timeout_ms;
	uint8_t *buf = malloc(RMCA_HELLO_MAX);
	char why[256], host[64], who[96];
	size_t len;
	int rc;

	if (!buf) {
		close(fd);
		return RMCA_ERR_NO_MEMORY;
	}
	rc = rmca_msg_recv(fd, buf, RMCA_HELLO_MAX, &len, deadline, why,
			   sizeof(why));
	if (rc) {
		rmca_peer_name(fd, host, sizeof(host), who, sizeof(who));
		rmca_log(0, "bootstrap from %s refused: %s", who, why);
		close(fd);
	} else {
		rc = handshake_passive(ctx, fd, buf, len, deadline, out);
		if (rc == RMCA_ERR_AGAIN) /* a probe makes no endpoint */
			rc = RMCA_ERR_PROTOCOL;
	}
	free(buf);
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
	struct rmca_context *ctx = ep->ctx;

	rmca_ctrl_close(ep);
	ep->mod->m->ops->disconnect(ep->conn);
	ep->conn = NULL;
	/* What waited on the peer's core is in the request list too. */
	for (struct rmca_req *r = ep->am_wait, *n; r; r = n) {
		n = r->am_next;
		r->am_next = NULL;
	}
	ep->am_wait = NULL;
	for (struct rmca_req *r = ep->deferred, *n; r; r = n) {
		n = r->defer_next;
		r->defer_next = NULL;
	}
	ep->deferred = ep->deferred_tail = NULL;
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
	RMCA_LIST_DEL(ctx->eps, ep);
	free(ep);
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
