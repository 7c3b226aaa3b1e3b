// SPDX-License-Identifier: BSD-3-Clause
/*
 * use_once_client - fetch data into a buffer under a key that serves one
 * transaction (RDS's use-once keys).
 *
 *   use_once_client HOST:PORT [TRANSACTIONS]
 *
 * The buffer is registered RMCA_MR_USE_ONCE. For each transaction the
 * client asks rmca_mr_rkey for a key, sends it in an SVC_FETCH request, and
 * the server puts the data there and replies with rmca_send_inv naming the
 * key. By the time the reply's receive completes, rmca has revoked the key
 * (the completion says which, in revoked_rkey): a late or replayed write
 * with it fails at the client instead of landing in memory that is being
 * reused. The next transaction gets a fresh key for the same buffer.
 *
 * Build: cc -o use_once_client use_once_client.c $(pkg-config --cflags --libs
 * rmca)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca.h>

#include "service.h"

#define FETCH 8192

struct bufs {
	struct svc_msg req, rep;
	unsigned char data[FETCH];
};

/* Progress until both the request's send and the reply's receive have
 * completed; 0, or the first error. *reply is the receive's completion. */
static int transact(rmca_context_t *ctx, struct bufs *b,
		    struct rmca_completion *reply)
{
	int sent = 0, got = 0;

	while (!sent || !got) {
		struct rmca_completion c;
		int n = rmca_poll(ctx, &c, 1);

		if (n < 0)
			return n;
		if (!n) {
			svc_wait(ctx, 1000);
			continue;
		}
		if (c.status)
			return c.status;
		if (c.user_ctx == &b->req) {
			sent = 1;
		} else {
			*reply = c;
			got = 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	long transactions = 4;
	rmca_context_t *ctx;
	rmca_mr_t *mr;
	rmca_ep_t *ep;
	struct bufs *b;
	struct rmca_ep_attr attr;
	int rc;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s HOST:PORT [TRANSACTIONS]\n",
			argv[0]);
		return 2;
	}
	if (argc == 3)
		transactions = strtol(argv[2], NULL, 10);
	b = aligned_alloc(4096, sizeof(*b) + 4095 - (sizeof(*b) + 4095) % 4096);
	if (!b)
		return 1;
	memset(b, 0, sizeof(*b));
	rc = rmca_init(&ctx);
	if (rc) {
		fprintf(stderr, "use_once_client: rmca could not start: %s\n",
			rmca_strerror(rc));
		return 1;
	}
	rc = rmca_connect(ctx, argv[1], 10000, &ep);
	if (rc) {
		fprintf(stderr, "use_once_client: connecting to %s: %s\n",
			argv[1], rmca_strerror(rc));
		rmca_finalize(ctx);
		return 1;
	}
	if (!rmca_ep_query(ep, &attr))
		printf("transport %s, send with invalidate: %s\n",
		       attr.transport, svc_path_name(attr.send_inv));
	/* The whole struct is one region: request, reply and the data the
	 * server writes. Only the peer's writes need the use-once key. */
	rc = rmca_mr_reg(ctx, b, sizeof(*b),
			 RMCA_ACCESS_REMOTE_WRITE | RMCA_MR_USE_ONCE, &mr);
	if (rc) {
		fprintf(stderr, "use_once_client: registering the buffer: %s\n",
			rmca_strerror(rc));
		rmca_finalize(ctx);
		return 1;
	}

	for (long t = 0; t < transactions; t++) {
		uint64_t key = rmca_mr_rkey(mr, ep);
		uint64_t offset =
			(uint64_t)t * 1000 % (SVC_OBJECT_SIZE - FETCH);
		struct rmca_completion reply = {0};

		if (!key) {
			fprintf(stderr,
				"use_once_client: no key for the buffer\n");
			break;
		}
		memset(b->data, 0, sizeof(b->data));
		b->req = (struct svc_msg){.kind = SVC_FETCH,
					  .id = (uint64_t)t,
					  .addr = (uintptr_t)b->data,
					  .rkey = key,
					  .offset = offset,
					  .len = FETCH};
		rc = rmca_recv(ep, &b->rep, sizeof(b->rep), mr, &b->rep);
		if (!rc)
			rc = rmca_send(ep, &b->req, svc_msg_len(&b->req), mr,
				       &b->req);
		if (!rc)
			rc = transact(ctx, b, &reply);
		if (rc) {
			fprintf(stderr,
				"use_once_client: transaction %ld with %s: "
				"%s\n",
				t, argv[1], rmca_strerror(rc));
			break;
		}
		if (b->rep.status || b->rep.id != (uint64_t)t) {
			fprintf(stderr,
				"use_once_client: transaction %ld refused: "
				"%s\n",
				t, rmca_strerror(b->rep.status));
			rc = 1;
			break;
		}
		/* The reply revoked exactly the key of this transaction. */
		if (reply.revoked_rkey != key) {
			fprintf(stderr,
				"use_once_client: transaction %ld: key "
				"%#" PRIx64 " not revoked (revoked: %#" PRIx64
				")\n",
				t, key, reply.revoked_rkey);
			rc = 1;
			break;
		}
		for (uint64_t i = 0; i < FETCH; i++) {
			if (b->data[i] != svc_object_byte(offset + i)) {
				fprintf(stderr,
					"use_once_client: transaction %ld: "
					"byte %" PRIu64 " differs\n",
					t, i);
				rc = 1;
				break;
			}
		}
		if (rc)
			break;
		printf("transaction %ld: %d bytes from offset %" PRIu64
		       " checked; key %#" PRIx64 " revoked by the reply\n",
		       t, FETCH, offset, key);
	}
	rmca_ep_close(ep);
	rmca_finalize(ctx);
	free(b);
	return rc ? 1 : 0;
}
