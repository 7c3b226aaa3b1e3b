// SPDX-License-Identifier: BSD-3-Clause
/*
 * service - a request/response server over rmca, the shape most middleware
 * has: every client connection keeps SVC_DEPTH receives posted ahead, one
 * poll loop serves all connections and accepts new ones, and a reply's
 * receive slot is posted again once the reply has gone.
 *
 *   service [-l HOST:PORT] [-c CLIENTS]
 *
 * Prints "listening on port N" (port 0, the default, lets the kernel pick).
 * With -c it exits after that many clients have come and gone.
 *
 * Requests (service.h): SVC_ECHO answers with the payload; SVC_WINDOW hands
 * out the address and key of a window clients put, get and run atomics on;
 * SVC_FETCH writes part of the server's object into the client's buffer
 * under a use-once key and replies with rmca_send_inv, which revokes the
 * key (RDS's pattern: the key serves one transaction).
 *
 * Build: cc -o service service.c $(pkg-config --cflags --libs rmca)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rmca.h>

#include "service.h"

struct conn;

/* One request in progress: its receive, then the put (SVC_FETCH) and the
 * reply. The slot goes back to a posted receive when the reply is sent. */
enum slot_state { RECEIVING, PUTTING, REPLYING };

struct slot {
	struct conn *conn;
	enum slot_state state;
	struct svc_msg req, rep;
};

struct conn {
	int id;
	rmca_ep_t *ep;
	rmca_mr_t *mr;	 /* covers slots */
	int outstanding; /* posted, not yet completed */
	bool closed;
	struct slot slots[SVC_DEPTH];
};

struct server {
	rmca_context_t *ctx;
	unsigned char *window, *object;
	rmca_mr_t *window_mr, *object_mr;
	int clients_seen, clients_gone;
	int live; /* connections not yet freed */
};

static const char *op_name(enum rmca_op op)
{
	static const char *const n[] = {"send", "receive", "put",
					"get",	"atomic",  "flush"};

	return (unsigned)op < sizeof(n) / sizeof(n[0]) ? n[op] : "operation";
}

static int post_recv(struct slot *s)
{
	int rc;

	s->state = RECEIVING;
	rc = rmca_recv(s->conn->ep, &s->req, sizeof(s->req), s->conn->mr, s);
	if (!rc)
		s->conn->outstanding++;
	return rc;
}

/* Every outstanding operation completes (RMCA_ERR_CANCELED) after this;
 * the connection is freed when the last one has. */
static void conn_close(struct server *srv, struct conn *c, const char *why)
{
	if (c->closed)
		return;
	printf("client %d: %s\n", c->id, why);
	fflush(stdout);
	c->closed = true;
	rmca_ep_close(c->ep);
	srv->clients_gone++;
}

static void conn_free_if_done(struct server *srv, struct conn *c)
{
	if (!c->closed || c->outstanding)
		return;
	rmca_mr_dereg(c->mr);
	free(c);
	srv->live--;
}

static void conn_open(struct server *srv, rmca_ep_t *ep)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct rmca_ep_attr a;
	int rc;

	if (!c) {
		fprintf(stderr, "service: out of memory for a client\n");
		rmca_ep_close(ep);
		return;
	}
	c->id = ++srv->clients_seen;
	c->ep = ep;
	srv->live++;
	rc = rmca_mr_reg(srv->ctx, c->slots, sizeof(c->slots),
			 RMCA_ACCESS_LOCAL, &c->mr);
	if (rc) {
		fprintf(stderr,
			"service: registering client %d's buffers: %s\n", c->id,
			rmca_strerror(rc));
		rmca_ep_close(ep);
		free(c);
		srv->live--;
		srv->clients_gone++;
		return;
	}
	if (!rmca_ep_query(ep, &a))
		printf("client %d: connected over %s (%s)\n", c->id,
		       a.transport, a.device);
	/* Receives first: a request that arrives before them waits, but
	 * posting them ahead is what lets the client stream requests. */
	for (int i = 0; i < SVC_DEPTH; i++) {
		c->slots[i].conn = c;
		rc = post_recv(&c->slots[i]);
		if (rc) {
			fprintf(stderr,
				"service: posting receives for client %d: %s\n",
				c->id, rmca_strerror(rc));
			conn_close(srv, c, "closed");
			break;
		}
	}
	conn_free_if_done(srv, c);
}

/* Answer req in s->rep; SVC_FETCH first puts the data, then replies. */
static int handle_request(struct server *srv, struct slot *s, size_t len)
{
	struct conn *c = s->conn;
	const struct svc_msg *q = &s->req;
	struct svc_msg *r = &s->rep;
	int rc;

	if (len < offsetof(struct svc_msg, payload) ||
	    q->payload_len > SVC_PAYLOAD_MAX || len != svc_msg_len(q))
		return RMCA_ERR_PROTOCOL;
	memset(r, 0, offsetof(struct svc_msg, payload));
	r->kind = q->kind;
	r->id = q->id;
	switch (q->kind) {
	case SVC_ECHO:
		r->payload_len = q->payload_len;
		memcpy(r->payload, q->payload, q->payload_len);
		break;
	case SVC_WINDOW:
		r->addr = (uintptr_t)srv->window;
		r->rkey = rmca_mr_rkey(srv->window_mr, c->ep);
		break;
	case SVC_FETCH:
		if (q->offset > SVC_OBJECT_SIZE ||
		    q->len > SVC_OBJECT_SIZE - q->offset) {
			r->status = RMCA_ERR_INVALID;
			break;
		}
		/* RMCA_DELIVERED: the put completes once the data is in the
		 * client's memory, so the reply cannot overtake it. */
		s->state = PUTTING;
		rc = rmca_put(c->ep, srv->object + q->offset, q->len,
			      srv->object_mr, q->addr, q->rkey, RMCA_DELIVERED,
			      s);
		if (!rc)
			c->outstanding++;
		return rc;
	default:
		r->status = RMCA_ERR_UNSUPPORTED;
	}
	s->state = REPLYING;
	rc = rmca_send(c->ep, r, svc_msg_len(r), c->mr, s);
	if (!rc)
		c->outstanding++;
	return rc;
}

static void completed(struct server *srv, const struct rmca_completion *cq)
{
	struct slot *s = cq->user_ctx;
	struct conn *c = s->conn;
	int rc = cq->status;

	c->outstanding--;
	if (c->closed) {
		conn_free_if_done(srv, c);
		return;
	}
	if (rc) {
		/* A client that closes shows up as the posted receives (and
		 * a reply whose acknowledgement it did not wait for) failing
		 * with RMCA_ERR_CONNECTION: that is the normal end. */
		char why[160];

		if (rc == RMCA_ERR_CONNECTION)
			snprintf(why, sizeof(why), "disconnected");
		else
			snprintf(why, sizeof(why), "%s failed: %s; closing",
				 op_name(cq->op), rmca_strerror(rc));
		conn_close(srv, c, why);
		conn_free_if_done(srv, c);
		return;
	}
	switch (s->state) {
	case RECEIVING:
		rc = handle_request(srv, s, cq->len);
		break;
	case PUTTING: /* the data is there: the reply revokes the key */
		s->state = REPLYING;
		rc = rmca_send_inv(c->ep, &s->rep, svc_msg_len(&s->rep), c->mr,
				   s->req.rkey, s);
		if (!rc)
			c->outstanding++;
		break;
	case REPLYING:
		rc = post_recv(s);
		break;
	}
	if (rc) {
		char why[160];

		snprintf(why, sizeof(why), "request %llu: %s; closing",
			 (unsigned long long)s->req.id, rmca_strerror(rc));
		conn_close(srv, c, why);
	}
	conn_free_if_done(srv, c);
}

/* Poll once and handle what completed; the count, or < 0 on failure. */
static int progress(struct server *srv)
{
	struct rmca_completion cq[16];
	int n = rmca_poll(srv->ctx, cq, 16);

	if (n < 0)
		fprintf(stderr, "service: progressing the connections: %s\n",
			rmca_strerror(n));
	for (int i = 0; i < n; i++)
		completed(srv, &cq[i]);
	return n;
}

static int setup(struct server *srv)
{
	int rc;

	srv->window = aligned_alloc(4096, SVC_WINDOW_SIZE);
	srv->object = aligned_alloc(4096, SVC_OBJECT_SIZE);
	if (!srv->window || !srv->object)
		return RMCA_ERR_NO_MEMORY;
	memset(srv->window, 0, SVC_WINDOW_SIZE);
	for (uint64_t i = 0; i < SVC_OBJECT_SIZE; i++)
		srv->object[i] = svc_object_byte(i);
	rc = rmca_mr_reg(srv->ctx, srv->window, SVC_WINDOW_SIZE,
			 RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE |
				 RMCA_ACCESS_REMOTE_ATOMIC,
			 &srv->window_mr);
	if (rc)
		return rc;
	return rmca_mr_reg(srv->ctx, srv->object, SVC_OBJECT_SIZE,
			   RMCA_ACCESS_LOCAL, &srv->object_mr);
}

int main(int argc, char **argv)
{
	const char *where = "127.0.0.1:0";
	struct server srv = {0};
	rmca_listener_t *l;
	long clients = 0;
	int opt, rc;

	while ((opt = getopt(argc, argv, "l:c:h")) != -1) {
		switch (opt) {
		case 'l':
			where = optarg;
			break;
		case 'c':
			clients = strtol(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-l HOST:PORT] [-c CLIENTS]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	rc = rmca_init(&srv.ctx);
	if (rc) {
		fprintf(stderr, "service: rmca could not start: %s\n",
			rmca_strerror(rc));
		return 1;
	}
	rc = setup(&srv);
	if (rc) {
		fprintf(stderr,
			"service: setting up the window and object: %s\n",
			rmca_strerror(rc));
		rmca_finalize(srv.ctx);
		return 1;
	}
	rc = rmca_listen(srv.ctx, where, &l);
	if (rc) {
		fprintf(stderr, "service: listening on %s: %s\n", where,
			rmca_strerror(rc));
		rmca_finalize(srv.ctx);
		return 1;
	}
	printf("listening on port %d\n", rmca_listener_port(l));
	fflush(stdout);

	while (!clients || srv.clients_gone < clients) {
		rmca_ep_t *ep;
		int n;

		/* A new client? (0: do not wait) A bad handshake is that
		 * peer's problem: the listener goes on. */
		rc = rmca_accept(l, 0, &ep);
		if (!rc)
			conn_open(&srv, ep);
		else if (rc != RMCA_ERR_TIMEOUT)
			fprintf(stderr,
				"service: a client's connection failed: %s\n",
				rmca_strerror(rc));
		/* Progress: on tcp the server's rmca_poll also serves the
		 * clients' puts, gets and atomics on the window. */
		n = progress(&srv);
		if (n < 0)
			break;
		if (!n)
			svc_wait(srv.ctx,
				 50); /* the listener is not in the wait fd */
	}
	/* The last connections' cancelled operations, so each is freed. */
	while (srv.live > 0 && progress(&srv) >= 0)
		svc_wait(srv.ctx, 50);
	printf("served %d clients\n", srv.clients_seen);
	rmca_listener_close(l);
	rmca_finalize(srv.ctx); /* closes and deregisters what is left */
	free(srv.window);
	free(srv.object);
	return 0;
}
