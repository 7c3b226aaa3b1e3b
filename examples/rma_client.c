// SPDX-License-Identifier: BSD-3-Clause
/*
 * rma_client - one-sided operations on the example service's window: put,
 * flush, get, and 64-bit atomics, each checked.
 *
 *   rma_client HOST:PORT
 *
 * The window's address and key come in the reply to an SVC_WINDOW request;
 * after that the server's application code does nothing for these
 * operations (on tcp its rmca_poll calls execute them; on RDMA its NIC does).
 *
 * Build: cc -o rma_client rma_client.c $(pkg-config --cflags --libs rmca)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca.h>

#include "service.h"

#define PIECES 8 /* puts in flight before one flush */
#define PIECE  4096

static rmca_context_t *ctx;
static rmca_ep_t *ep;
static const char *peer;

/* Completions that arrived while another was awaited: operations on one
 * endpoint may complete in any order. */
static struct rmca_completion early[64];
static int nearly;

/* Progress until the operation posted with tag completes; its status.
 * Failures of other operations are reported as they are seen. */
static int wait_for(void *tag)
{
	int n;

	for (;;) {
		for (int i = 0; i < nearly; i++) {
			if (early[i].user_ctx == tag) {
				int st = early[i].status;

				early[i] = early[--nearly];
				return st;
			}
		}
		if (nearly == (int)(sizeof(early) / sizeof(early[0])))
			return RMCA_ERR_NO_MEMORY; /* a tag nobody posted */
		n = rmca_poll(ctx, &early[nearly], 1);
		if (n < 0)
			return n;
		if (n == 1)
			nearly++;
		else
			svc_wait(ctx, 1000);
	}
}

#define TRY(what, call)                                                        \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_) {                                                     \
			fprintf(stderr, "rma_client: %s, peer %s: %s\n", what, \
				peer, rmca_strerror(rc_));                     \
			return 1;                                              \
		}                                                              \
	} while (0)

int main(int argc, char **argv)
{
	struct bufs {
		struct svc_msg req, rep;
		unsigned char src[PIECES * PIECE], back[PIECES * PIECE];
		uint64_t result;
	} * b;
	struct rmca_ep_attr attr;
	rmca_mr_t *mr;
	uint64_t win, key, counter, old;
	struct rmca_atomic fadd, cas;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
		return 2;
	}
	peer = argv[1];
	/* aligned_alloc wants a size that is a multiple of the alignment */
	b = aligned_alloc(64, (sizeof(*b) + 63) & ~(size_t)63);
	if (!b)
		return 1;
	memset(b, 0, sizeof(*b));
	rc = rmca_init(&ctx);
	if (rc) {
		fprintf(stderr, "rma_client: rmca could not start: %s\n",
			rmca_strerror(rc));
		return 1;
	}
	TRY("connecting", rmca_connect(ctx, peer, 10000, &ep));
	if (!rmca_ep_query(ep, &attr))
		printf("transport %s, atomics %s\n", attr.transport,
		       svc_path_name(attr.atomic));
	TRY("registering buffers",
	    rmca_mr_reg(ctx, b, sizeof(*b), RMCA_ACCESS_LOCAL, &mr));

	/* 1. Ask for the window: the receive for the reply first. */
	b->req.kind = SVC_WINDOW;
	b->req.id = 1;
	TRY("posting the receive for the window",
	    rmca_recv(ep, &b->rep, sizeof(b->rep), mr, &b->rep));
	TRY("asking for the window",
	    rmca_send(ep, &b->req, svc_msg_len(&b->req), mr, &b->req));
	TRY("asking for the window", wait_for(&b->req));
	TRY("receiving the window", wait_for(&b->rep));
	if (b->rep.kind != SVC_WINDOW || b->rep.status) {
		fprintf(stderr, "rma_client: %s refused the window (%d)\n",
			peer, b->rep.status);
		return 1;
	}
	win = b->rep.addr;
	key = b->rep.rkey;

	/* 2. Several puts, then one flush: when the flush completes, every
	 * put before it has completed and its data is in the window. */
	for (int i = 0; i < PIECES * PIECE; i++)
		b->src[i] = (unsigned char)(i * 7 + 3);
	for (int p = 0; p < PIECES; p++)
		TRY("putting", rmca_put(ep, b->src + p * PIECE, PIECE, mr,
					win + (uint64_t)p * PIECE, key, 0,
					b->src + p * PIECE));
	TRY("flushing", rmca_flush(ep, ep));
	for (int p = 0; p < PIECES; p++)
		TRY("putting", wait_for(b->src + p * PIECE));
	TRY("flushing", wait_for(ep));

	/* 3. Read it back. */
	TRY("getting",
	    rmca_get(ep, b->back, sizeof(b->back), mr, win, key, b->back));
	TRY("getting", wait_for(b->back));
	if (memcmp(b->src, b->back, sizeof(b->back))) {
		fprintf(stderr,
			"rma_client: the window does not hold what was put\n");
		return 1;
	}
	printf("put %d x %d bytes, flushed, read back: equal\n", PIECES, PIECE);

	/* 4. Atomics on the last word of the window: fetch-and-add, then a
	 * compare-and-swap that expects the value the add left. */
	counter = win + SVC_WINDOW_SIZE - 8;
	fadd = (struct rmca_atomic){.kind = RMCA_ATOMIC_FADD,
				    .raddr = counter,
				    .rkey = key,
				    .operand = 5};
	TRY("fetch-and-add", rmca_atomic(ep, &fadd, &b->result, mr, &fadd));
	TRY("fetch-and-add", wait_for(&fadd));
	old = b->result;
	cas = (struct rmca_atomic){.kind = RMCA_ATOMIC_CSWAP,
				   .raddr = counter,
				   .rkey = key,
				   .compare = old + 5,
				   .operand = 1000};
	TRY("compare-and-swap", rmca_atomic(ep, &cas, &b->result, mr, &cas));
	TRY("compare-and-swap", wait_for(&cas));
	if (b->result != old + 5) {
		fprintf(stderr,
			"rma_client: compare-and-swap found %" PRIu64
			", expected %" PRIu64 "\n",
			b->result, old + 5);
		return 1;
	}
	printf("fetch-and-add: %" PRIu64 " -> %" PRIu64
	       "; compare-and-swap: %" PRIu64 " -> 1000\n",
	       old, old + 5, old + 5);
	rmca_ep_close(ep);
	rmca_finalize(ctx);
	free(b);
	return 0;
}
