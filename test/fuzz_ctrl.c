// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for the control channel's framing and flow (ctrl.c):
 * the byte stream a peer's core sends on it, cut wherever the input says
 * (down to a byte at a time), with this side's own requests in flight,
 * and a peer that reads our answers slowly or not at all, so that the
 * pushback (RMCA_ctrl_max_queued, here from the input) comes and goes.
 * The decoder alone is fuzz_wire's; here the rest of the core is a model
 * that answers each request as the core does and takes an answer only
 * for the oldest request of its kind in flight.
 *
 * What must hold: every message handed over is whole and one the decoder
 * accepts (the model encodes and decodes it again); a refused one closes the channel, after which nothing is handed over and
 * a send says RMCA_ERR_CONNECTION; the bytes queued for the peer stay
 * within the bound, one more answer and our own requests; once the peer
 * reads, everything queued goes.
 *
 * make check replays it (fuzz_ctrl_replay, with fuzz_replay.c); libFuzzer
 * runs it under `make check-fuzz` (test/fuzz.am).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctrl.h"
#include "ep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap);

/* The peer's script: one byte of command, then its arguments. */
enum fz_cmd {
	FZ_WRITE,  /* the next n bytes of the input, on the wire */
	FZ_READ,   /* the peer reads n * 64 bytes of what we sent */
	FZ_ASK,	   /* this side's core asks the peer something */
	FZ_EVENT,  /* the event loop looks at the channel */
	FZ_HANGUP, /* the peer shuts its side down */
	FZ_NCMD,
};

/* Ours in flight, by kind: the ids, oldest first. */
#define FZ_ASKED 64

struct fz_fifo {
	uint64_t id[FZ_ASKED];
	unsigned head, n;
};

static struct fz_fifo asked[4]; /* atomics, gets, verifies, revokes */
static uint64_t next_id;
static bool lost;
static unsigned handed; /* messages the model took */

static struct {
	int fd;
	uint32_t events;
	rmca_fd_cb cb;
	void *arg;
} watched = {.fd = -1};

static int fz_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		     rmca_fd_cb cb, void *arg)
{
	(void)core;
	if (watched.cb)
		__builtin_trap();
	watched.fd = fd;
	watched.events = events;
	watched.cb = cb;
	watched.arg = arg;
	return 0;
}

static int fz_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	(void)core;
	if (!watched.cb || watched.fd != fd)
		__builtin_trap();
	watched.events = events;
	return 0;
}

static void fz_fd_del(const struct rmca_core *core, int fd)
{
	(void)core;
	if (!watched.cb || watched.fd != fd)
		__builtin_trap();
	watched.cb = NULL;
	watched.fd = -1;
}

static const struct rmca_core_ops fz_ops = {
	.fd_add = fz_fd_add,
	.fd_del = fz_fd_del,
	.fd_mod = fz_fd_mod,
};

/* What ctrl.c needs of the rest of the core. */
void rmca_log(int level, const char *fmt, ...)
{
	va_list ap;

	(void)level;
	if (!getenv("FUZZ_CTRL_LOG"))
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void rmca_progress_ctrl_busy(struct rmca_context *ctx)
{
	(void)ctx;
}

static int kind_of(uint8_t type)
{
	switch (type) {
	case RMCA_CTRL_ATOMIC_RESP:
		return 0;
	case RMCA_CTRL_GET_RESP:
		return 1;
	case RMCA_CTRL_VERIFY_RESP:
		return 2;
	default:
		return 3; /* REVOKE_ACK */
	}
}

static int answered(const struct rmca_ctrl_msg *m)
{
	struct fz_fifo *f = &asked[kind_of(m->type)];

	if (!f->n || f->id[f->head % FZ_ASKED] != m->id)
		return RMCA_ERR_PROTOCOL;
	f->head++;
	f->n--;
	return 0;
}

/* The core, as core_msg.c hands messages to it: requests answered at
 * once, answers taken for the oldest of their kind. */
int rmca_emul_ctrl_msg(struct rmca_ep *ep, const struct rmca_ctrl_msg *m)
{
	struct rmca_ctrl_msg a = {.id = m->id};
	uint8_t buf[4 + RMCA_CTRL_MAX];
	struct rmca_ctrl_msg again;
	char why[160];
	int n;

	if (lost || !ep->ctrl)
		__builtin_trap();
	/* It is a message the decoder takes, as it was encoded. */
	n = rmca_ctrl_encode(m, buf, sizeof(buf));
	if (n < 5 ||
	    rmca_ctrl_decode(buf + 4, (size_t)n - 4, &again, why, sizeof(why)))
		__builtin_trap();
	handed++;
	switch (m->type) {
	case RMCA_CTRL_ATOMIC_REQ:
		a.type = RMCA_CTRL_ATOMIC_RESP;
		a.old = m->op.operand;
		break;
	case RMCA_CTRL_GET_REQ:
		a.type = RMCA_CTRL_GET_RESP;
		a.len = m->len;
		memset(a.data, 0x5a, sizeof(a.data));
		break;
	case RMCA_CTRL_VERIFY:
		a.type = RMCA_CTRL_VERIFY_RESP;
		break;
	case RMCA_CTRL_REVOKE:
		a.type = RMCA_CTRL_REVOKE_ACK;
		a.status = RMCA_ERR_INVALID;
		break;
	case RMCA_CTRL_RAIL_KEY:
		return RMCA_ERR_PROTOCOL; /* no rails here */
	default:
		return answered(m);
	}
	if (rmca_ctrl_send(ep, &a) && ep->ctrl)
		__builtin_trap();
	return 0;
}

void rmca_emul_ctrl_lost(struct rmca_ep *ep, int status)
{
	(void)status;
	if (lost || ep->ctrl)
		__builtin_trap();
	lost = true;
}

/* The input, read as it is used; zeros past its end. */
struct fz_in {
	const uint8_t *p;
	size_t left;
};

static uint64_t take(struct fz_in *in, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n && in->left; i++, in->left--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

static void event(void)
{
	struct pollfd p = {.fd = watched.fd, .events = (short)watched.events};

	if (watched.cb && poll(&p, 1, 0) > 0)
		watched.cb(watched.arg, (uint32_t)p.revents);
}

/* This side's core asks: an atomic, a get, a verify or a revoke. */
static void ask(struct rmca_ep *ep, unsigned k, unsigned len)
{
	struct fz_fifo *f = &asked[k % 4];
	struct rmca_ctrl_msg m = {.id = ++next_id};
	int rc;

	if (f->n == FZ_ASKED)
		return;
	switch (k % 4) {
	case 0:
		m.type = RMCA_CTRL_ATOMIC_REQ;
		m.op.kind = RMCA_ATOMIC_FADD;
		break;
	case 1:
		m.type = RMCA_CTRL_GET_REQ;
		m.len = 1 + len % RMCA_CTRL_GET_MAX;
		break;
	case 2:
		m.type = RMCA_CTRL_VERIFY;
		m.access = RMCA_ACCESS_REMOTE_READ;
		break;
	default:
		m.type = RMCA_CTRL_REVOKE;
		break;
	}
	rc = rmca_ctrl_send(ep, &m);
	if (lost ? rc != RMCA_ERR_CONNECTION : rc != 0)
		__builtin_trap();
	if (!rc)
		f->id[(f->head + f->n++) % FZ_ASKED] = m.id;
}

/* What may be queued for the peer: the bound, then the answer to the
 * frame that reached it, and each request of ours (each frame at most
 * 4 + RMCA_CTRL_MAX bytes). */
static void check_bounded(const struct rmca_ep *ep, size_t max)
{
	if (rmca_ctrl_queued_bytes(ep) >
	    max + (size_t)(4 + RMCA_CTRL_MAX) * (1 + next_id))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rmca_context ctx;
	static struct rmca_ep ep;
	struct fz_in in = {data, size};
	int sv[2], one = 1;
	char sink[4096];

	memset(asked, 0, sizeof(asked));
	next_id = 0;
	lost = false;
	handed = 0;
	memset(&ctx, 0, sizeof(ctx));
	memset(&ep, 0, sizeof(ep));
	ctx.core.ops = &fz_ops;
	/* small, so that the pushback comes: 64 bytes to 16 KiB */
	ctx.ctrl_max_queued = 64 + (size_t)take(&in, 2) % 16384;
	ep.ctx = &ctx;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv))
		__builtin_trap();
	/* A small socket buffer: a peer that does not read stalls us soon. */
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
	(void)setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
	if (rmca_ctrl_open(&ep, sv[0]))
		__builtin_trap();
	while (in.left) {
		switch (take(&in, 1) % FZ_NCMD) {
		case FZ_WRITE: {
			size_t n = 1 + (size_t)take(&in, 1);

			if (n > in.left)
				n = in.left;
			if (send(sv[1], in.p, n, MSG_NOSIGNAL | MSG_DONTWAIT) >
			    0)
				event();
			in.p += n;
			in.left -= n;
			break;
		}
		case FZ_READ: {
			size_t n = 64 * (1 + (size_t)take(&in, 1) % 64);

			if (n > sizeof(sink))
				n = sizeof(sink);
			(void)recv(sv[1], sink, n, MSG_DONTWAIT);
			event();
			break;
		}
		case FZ_ASK: {
			unsigned k = (unsigned)take(&in, 1);

			ask(&ep, k, (unsigned)take(&in, 1));
			break;
		}
		case FZ_HANGUP:
			shutdown(sv[1], take(&in, 1) & 1 ? SHUT_RDWR : SHUT_WR);
			event();
			break;
		default:
			event();
			break;
		}
		check_bounded(&ep, ctx.ctrl_max_queued);
	}
	/* The peer reads everything now: what we queued drains. */
	for (int round = 0; round < 1024 && ep.ctrl && !lost; round++) {
		ssize_t n = recv(sv[1], sink, sizeof(sink), MSG_DONTWAIT);

		event();
		if (n <= 0 && !rmca_ctrl_queued_bytes(&ep))
			break;
	}
	if (ep.ctrl && rmca_ctrl_queued_bytes(&ep))
		__builtin_trap();
	if (getenv("FUZZ_CTRL_LOG"))
		fprintf(stderr, "%u messages handed over, channel %s\n", handed,
			lost ? "lost" : "up");
	rmca_ctrl_close(&ep);
	close(sv[1]);
	return 0;
}

static void seed_put(uint8_t **p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

/* Scripts to start from: one request of each kind from the peer, in
 * frames cut at every byte or whole; our own requests, answered. */
size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap)
{
	static const struct rmca_ctrl_msg reqs[] = {
		{.type = RMCA_CTRL_ATOMIC_REQ, .id = 1},
		{.type = RMCA_CTRL_GET_REQ, .id = 2, .len = 8},
		{.type = RMCA_CTRL_VERIFY,
		 .id = 3,
		 .access = RMCA_ACCESS_REMOTE_WRITE},
		{.type = RMCA_CTRL_REVOKE, .id = 4},
		{.type = RMCA_CTRL_ATOMIC_RESP, .id = 1},
		{.type = RMCA_CTRL_GET_RESP, .id = 2, .len = 4},
		{.type = RMCA_CTRL_VERIFY_RESP, .id = 3},
		{.type = RMCA_CTRL_REVOKE_ACK, .id = 4},
	};
	uint8_t frame[4 + RMCA_CTRL_MAX], *p = buf;

	if (i >= 3 || cap < 1024)
		return 0;
	seed_put(&p, i == 2 ? 0 : 4096, 2); /* the bound */
	/* ours: atomic 1, get 2 of 4 bytes, verify 3, revoke 4 */
	for (unsigned k = 0; k < 4; k++) {
		seed_put(&p, FZ_ASK, 1);
		seed_put(&p, k, 1);
		seed_put(&p, 3, 1);
	}
	for (unsigned r = 0; r < sizeof(reqs) / sizeof(reqs[0]); r++) {
		int n = rmca_ctrl_encode(&reqs[r], frame, sizeof(frame));

		for (int at = 0; at < n;) {
			int cut = i == 1 ? 1 : n - at;

			seed_put(&p, FZ_WRITE, 1);
			seed_put(&p, (uint64_t)cut - 1, 1);
			memcpy(p, frame + at, (size_t)cut);
			p += cut;
			at += cut;
		}
		seed_put(&p, FZ_READ, 1);
		seed_put(&p, 0, 1);
	}
	seed_put(&p, FZ_EVENT, 1);
	return (size_t)(p - buf);
}
