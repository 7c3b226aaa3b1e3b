/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The messages of the example service (service.c) and its clients
 * (rpc_client.c, rma_client.c, use_once_client.c), and the few helpers
 * every one of them needs. Copy it along with the program you start from.
 */
#ifndef RMCA_EXAMPLE_SERVICE_H
#define RMCA_EXAMPLE_SERVICE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca.h>

/* Requests a client sends; the reply carries the same kind and id. */
enum svc_kind {
	SVC_ECHO = 1,	/* reply: the same payload */
	SVC_WINDOW = 2, /* reply: addr, rkey of the server's window */
	SVC_FETCH = 3,	/* the server puts len bytes of its object, from
			 * offset, at addr/rkey (a use-once key), then
			 * replies with send_inv, which revokes that key */
};

#define SVC_PAYLOAD_MAX 1024
#define SVC_WINDOW_SIZE 65536 /* the window: puts, gets, atomics */
#define SVC_OBJECT_SIZE 65536 /* what SVC_FETCH reads from */
#define SVC_DEPTH	16    /* receives each side keeps posted ahead */

struct svc_msg {
	uint32_t kind;
	int32_t status; /* reply: 0, or the rmca status that stopped it */
	uint64_t id;
	uint64_t addr, rkey;  /* SVC_WINDOW reply; SVC_FETCH request */
	uint64_t offset, len; /* SVC_FETCH request */
	uint32_t payload_len; /* SVC_ECHO */
	char payload[SVC_PAYLOAD_MAX];
};

/* Bytes of a message worth sending: the header and the payload used. */
static inline size_t svc_msg_len(const struct svc_msg *m)
{
	return offsetof(struct svc_msg, payload) + m->payload_len;
}

/* The server's object: byte i is a function of i only, so a client can
 * check any range it fetched. */
static inline unsigned char svc_object_byte(uint64_t i)
{
	return (unsigned char)(i * 131 + (i >> 8) + 7);
}

/* What rmca_ep_query says about a path, as a word. */
static inline const char *svc_path_name(enum rmca_path p)
{
	static const char *const n[] = {"none",	    "native",	"flush",
					"cas_loop", "emulated", "revoke_msg"};

	return (unsigned)p < sizeof(n) / sizeof(n[0]) ? n[p] : "?";
}

/* Sleep until rmca may have completions; a bound so a listener or a
 * timer is looked at now and then too. */
static inline void svc_wait(rmca_context_t *ctx, int timeout_ms)
{
	struct pollfd p = {.fd = rmca_wait_fd(ctx), .events = POLLIN};

	poll(&p, 1, timeout_ms);
}

#endif
