// SPDX-License-Identifier: BSD-3-Clause
/*
 * rpc_client - requests and replies against the example service, with
 * SVC_DEPTH requests in flight and a receive posted ahead for every reply.
 *
 *   rpc_client HOST:PORT [REQUESTS]
 *
 * Each request is an SVC_ECHO with its own payload; every reply is checked
 * against its request. One poll loop drives everything: post what can be
 * posted, rmca_poll, handle completions, sleep on the wait fd when idle.
 *
 * Build: cc -o rpc_client rpc_client.c $(pkg-config --cflags --libs rmca)
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rmca.h>

#include "service.h"

/* One request slot: free once its send has completed and its reply came. */
struct req_slot {
	struct svc_msg msg;
	bool sending, awaiting_reply;
};

struct client {
	rmca_context_t *ctx;
	rmca_ep_t *ep;
	rmca_mr_t *mr;
	/* one region for both arrays */
	struct bufs {
		struct req_slot req[SVC_DEPTH];
		struct svc_msg rep[SVC_DEPTH];
	} * b;
	uint64_t next_id, answered, total;
	int failed;
};

static void fill_payload(struct svc_msg *m)
{
	m->payload_len = (uint32_t)snprintf(
		m->payload, sizeof(m->payload),
		"request %" PRIu64 ", %" PRIu64 " bytes of padding: %*s", m->id,
		m->id % 200, (int)(m->id % 200), "");
}

/* Post the next request in slot i. */
static int send_request(struct client *c, int i)
{
	struct req_slot *s = &c->b->req[i];
	int rc;

	memset(&s->msg, 0, offsetof(struct svc_msg, payload));
	s->msg.kind = SVC_ECHO;
	s->msg.id = c->next_id;
	fill_payload(&s->msg);
	rc = rmca_send(c->ep, &s->msg, svc_msg_len(&s->msg), c->mr, s);
	if (rc)
		return rc;
	c->next_id++;
	s->sending = s->awaiting_reply = true;
	return 0;
}

/* A reply in receive buffer r: check it against its request. */
static int take_reply(struct client *c, struct svc_msg *r, size_t len)
{
	struct svc_msg want = {.id = r->id};
	struct req_slot *s;

	if (len < offsetof(struct svc_msg, payload) || len != svc_msg_len(r) ||
	    r->id >= c->next_id) {
		fprintf(stderr,
			"rpc_client: a reply of %zu bytes that answers nothing "
			"sent\n",
			len);
		return -1;
	}
	s = &c->b->req[r->id % SVC_DEPTH];
	fill_payload(&want);
	if (!s->awaiting_reply || s->msg.id != r->id || r->status ||
	    r->payload_len != want.payload_len ||
	    memcmp(r->payload, want.payload, want.payload_len)) {
		fprintf(stderr,
			"rpc_client: the reply to request %" PRIu64
			" is wrong (status %d)\n",
			r->id, r->status);
		return -1;
	}
	s->awaiting_reply = false;
	c->answered++;
	return 0;
}

static int run(struct client *c)
{
	int rc;

	/* Receives before the first request: a reply never waits. */
	for (int i = 0; i < SVC_DEPTH; i++) {
		rc = rmca_recv(c->ep, &c->b->rep[i], sizeof(c->b->rep[i]),
			       c->mr, &c->b->rep[i]);
		if (rc) {
			fprintf(stderr, "rpc_client: posting receive %d: %s\n",
				i, rmca_strerror(rc));
			return -1;
		}
	}
	while (c->answered < c->total) {
		struct rmca_completion cq[16];
		int n;

		/* Fill every free slot while requests remain. */
		while (c->next_id < c->total) {
			struct req_slot *s = &c->b->req[c->next_id % SVC_DEPTH];

			if (s->sending || s->awaiting_reply)
				break;
			rc = send_request(c, (int)(c->next_id % SVC_DEPTH));
			if (rc == RMCA_ERR_AGAIN)
				break; /* progress first, then retry */
			if (rc) {
				fprintf(stderr,
					"rpc_client: sending request %" PRIu64
					": %s\n",
					c->next_id, rmca_strerror(rc));
				return -1;
			}
		}
		n = rmca_poll(c->ctx, cq, 16);
		if (n < 0) {
			fprintf(stderr, "rpc_client: progressing: %s\n",
				rmca_strerror(n));
			return -1;
		}
		for (int i = 0; i < n; i++) {
			if (cq[i].status) {
				fprintf(stderr, "rpc_client: a %s failed: %s\n",
					cq[i].op == RMCA_OP_RECV ? "receive"
								 : "send",
					rmca_strerror(cq[i].status));
				return -1;
			}
			if (cq[i].op == RMCA_OP_SEND) {
				((struct req_slot *)cq[i].user_ctx)->sending =
					false;
				continue;
			}
			if (take_reply(c, cq[i].user_ctx, cq[i].len))
				return -1;
			/* The buffer is free again: post it ahead once more. */
			rc = rmca_recv(c->ep, cq[i].user_ctx,
				       sizeof(struct svc_msg), c->mr,
				       cq[i].user_ctx);
			if (rc) {
				fprintf(stderr,
					"rpc_client: posting a receive: %s\n",
					rmca_strerror(rc));
				return -1;
			}
		}
		if (!n)
			svc_wait(c->ctx, 1000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct client c = {.total = 1000};
	struct timespec t0, t1;
	int rc;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s HOST:PORT [REQUESTS]\n", argv[0]);
		return 2;
	}
	if (argc == 3)
		c.total = strtoull(argv[2], NULL, 10);
	c.b = calloc(1, sizeof(*c.b));
	if (!c.b)
		return 1;
	rc = rmca_init(&c.ctx);
	if (rc) {
		fprintf(stderr, "rpc_client: rmca could not start: %s\n",
			rmca_strerror(rc));
		return 1;
	}
	rc = rmca_connect(c.ctx, argv[1], 10000, &c.ep);
	if (rc) {
		fprintf(stderr, "rpc_client: connecting to %s: %s\n", argv[1],
			rmca_strerror(rc));
		rmca_finalize(c.ctx);
		return 1;
	}
	rc = rmca_mr_reg(c.ctx, c.b, sizeof(*c.b), RMCA_ACCESS_LOCAL, &c.mr);
	if (rc) {
		fprintf(stderr, "rpc_client: registering buffers: %s\n",
			rmca_strerror(rc));
		rmca_finalize(c.ctx);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = run(&c);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!rc)
		printf("%" PRIu64
		       " requests answered and checked, %.1f us each\n",
		       c.answered,
		       c.answered ? ((double)(t1.tv_sec - t0.tv_sec) * 1e6 +
				     (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) /
					    (double)c.answered
				  : 0.0);
	/* Outstanding receives complete RMCA_ERR_CANCELED; nobody needs them.
	 */
	rmca_ep_close(c.ep);
	rmca_finalize(c.ctx);
	free(c.b);
	return rc ? 1 : 0;
}
