// SPDX-License-Identifier: BSD-3-Clause
/*
 * rmca_xfer - move a buffer between two processes and check it.
 *
 *   rmca_xfer -s [-l HOST:PORT] [-m BYTES]  serve (prints the port it got)
 *   rmca_xfer [-n BYTES] [-i ITERS] HOST:PORT   BYTES may say 64k, 4m, 1g
 *
 * The server registers a region and sends its address and key; the client
 * writes a pattern into it with RMCA_DELIVERED puts, reads it back with a
 * get, exchanges messages, and both sides check every byte. The transport
 * and the paths in use are printed, so the demo also shows what rmca chose.
 * The server serves until one client's session is done: peers refused at
 * the handshake and clients asking for more than -m bytes (default 256m)
 * are logged and the next one is served.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rmca.h>

#include "cli.h"

struct region_msg {
	uint64_t addr, rkey, len;
};

static const char *path_name(enum rmca_path p)
{
	static const char *const n[] = { "none", "native", "flush",
					 "cas_loop", "emulated", "revoke_msg" };

	return (unsigned)p < sizeof(n) / sizeof(n[0]) ? n[p] : "?";
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Completions that arrived while waiting for another one. */
static struct rmca_completion early[16];
static int nearly;

/* Progress until the completion for tag arrives; returns its status. */
static int wait_for(rmca_context_t *ctx, void *tag, size_t *len)
{
	double end = now_s() + 30;

	for (;;) {
		struct rmca_completion c;
		int i;

		for (i = 0; i < nearly && early[i].user_ctx != tag; i++)
			;
		if (i < nearly) {
			c = early[i];
			early[i] = early[--nearly];
			if (len)
				*len = c.len;
			return c.status;
		}
		if (now_s() > end)
			return RMCA_ERR_TIMEOUT;
		if (nearly < 16 && rmca_poll(ctx, &early[nearly], 1) == 1) {
			if (early[nearly].status)
				fprintf(stderr, "rmca_xfer: %s failed: %s\n",
					early[nearly].user_ctx == tag ? "operation" :
									"an earlier operation",
					rmca_strerror(early[nearly].status));
			nearly++;
		} else {
			struct pollfd p = { .fd = rmca_wait_fd(ctx), .events = POLLIN };

			poll(&p, 1, 100);
		}
	}
}

static void fill(unsigned char *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)(i * 31 + seed + (i >> 12));
}

static int check(const unsigned char *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != (unsigned char)(i * 31 + seed + (i >> 12))) {
			fprintf(stderr, "rmca_xfer: byte %zu differs\n", i);
			return -1;
		}
	return 0;
}

static void show(rmca_ep_t *ep)
{
	struct rmca_ep_attr a;

	if (rmca_ep_query(ep, &a))
		return;
	printf("transport %s, device %s, peer %s\n", a.transport, a.device,
	       a.peer_is_local ? "on this host" : "remote");
	printf("paths: put_delivered=%s atomic=%s masked_atomic=%s send_inv=%s\n",
	       path_name(a.put_delivered), path_name(a.atomic),
	       path_name(a.masked_atomic), path_name(a.send_inv));
}

/* On failure: "rmca_xfer: <what was being done>: <why>", and give up. */
#define CHECK(call, ...)                                                       \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_) {                                                     \
			fprintf(stderr, "rmca_xfer: ");                        \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, ": %s\n", rmca_strerror(rc_));         \
			return 1;                                              \
		}                                                              \
	} while (0)

/* One client's session. 0: done and checked; 1: failed; 2: the client
 * was refused (the server keeps serving). */
static int session(rmca_context_t *ctx, rmca_ep_t *ep, size_t max)
{
	rmca_mr_t *mr, *cmr, *rmr;
	struct region_msg rm, req;
	unsigned char *buf;
	int iters;

	show(ep);
	CHECK(rmca_mr_reg(ctx, &req, sizeof(req), RMCA_ACCESS_LOCAL, &cmr),
	      "registering the request buffer");
	CHECK(rmca_mr_reg(ctx, &rm, sizeof(rm), RMCA_ACCESS_LOCAL, &rmr),
	      "registering the reply buffer");
	CHECK(rmca_recv(ep, &req, sizeof(req), cmr, &req),
	      "posting the receive for the client's request");
	CHECK(wait_for(ctx, &req, NULL), "receiving the client's request");
	/* The client names the size: never more than -m, nor 0. */
	if (!req.len || req.len > max || req.addr < 1 || req.addr > INT32_MAX) {
		fprintf(stderr,
			"rmca_xfer: client refused: %" PRIu64
			" bytes x %" PRIu64 " (1..%zu bytes, -m)\n",
			req.len, req.addr, max);
		rmca_mr_dereg(cmr);
		rmca_mr_dereg(rmr);
		return 2;
	}
	buf = calloc(1, req.len);
	if (!buf)
		return 1;
	CHECK(rmca_mr_reg(ctx, buf, req.len,
			  RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE,
			  &mr),
	      "registering %zu bytes for the client's puts and gets",
	      (size_t)req.len);
	rm = (struct region_msg){ .addr = (uintptr_t)buf,
				  .rkey = rmca_mr_rkey(mr, ep), .len = req.len };
	iters = (int)req.addr;
	CHECK(rmca_recv(ep, &req, sizeof(req), cmr, &req),
	      "posting the receive for the client's next message");
	CHECK(rmca_send(ep, &rm, sizeof(rm), rmr, &rm),
	      "sending the region's address and key");
	CHECK(wait_for(ctx, &rm, NULL), "sending the region's address and key");
	for (int i = 0; i < iters; i++) {
		/* the client says "written", we check, and answer */
		CHECK(wait_for(ctx, &req, NULL),
		      "waiting for the client's round %d", i);
		if (check(buf, rm.len, (unsigned)i))
			return 1;
		CHECK(rmca_recv(ep, &req, sizeof(req), cmr, &req),
		      "posting the receive for round %d", i + 1);
		CHECK(rmca_send(ep, &rm, sizeof(rm), rmr, &rm),
		      "answering round %d", i);
		CHECK(wait_for(ctx, &rm, NULL), "answering round %d", i);
	}
	printf("server: %d x %zu bytes received and checked\n", iters,
	       (size_t)rm.len);
	wait_for(ctx, &req, NULL); /* the client's goodbye, or its close */
	rmca_mr_dereg(mr);
	free(buf);
	return 0;
}

/* Serve until one client's session is done. A peer refused at the
 * handshake, or a client asking for too much, is logged and the next one
 * served. */
static int serve(rmca_context_t *ctx, const char *where, size_t max)
{
	rmca_listener_t *l;
	rmca_ep_t *ep;
	int rc;

	CHECK(rmca_listen(ctx, where, &l), "listening on %s", where);
	printf("listening on port %d\n", rmca_listener_port(l));
	fflush(stdout);
	for (;;) {
		rc = rmca_accept(l, -1, &ep);
		if (rc == RMCA_ERR_NO_MEMORY || rc == RMCA_ERR_INVALID) {
			fprintf(stderr,
				"rmca_xfer: accepting a client on %s: %s\n",
				where, rmca_strerror(rc));
			break;
		}
		if (rc) {
			fprintf(stderr,
				"rmca_xfer: a peer of %s was refused: %s\n",
				where, rmca_strerror(rc));
			continue;
		}
		rc = session(ctx, ep, max);
		rmca_ep_close(ep);
		if (rc != 2)
			break;
	}
	rmca_listener_close(l);
	return rc;
}

static int client(rmca_context_t *ctx, const char *where, size_t len, int iters)
{
	struct region_msg rm, req = { .addr = (uint64_t)iters, .len = len };
	unsigned char *src, *back;
	rmca_mr_t *mr, *bmr, *cmr, *qmr;
	rmca_ep_t *ep;
	double t0, t;

	src = malloc(len);
	back = malloc(len);
	if (!src || !back)
		return 1;
	CHECK(rmca_connect(ctx, where, 10000, &ep), "connecting to %s", where);
	show(ep);
	CHECK(rmca_mr_reg(ctx, &rm, sizeof(rm), RMCA_ACCESS_LOCAL, &cmr),
	      "registering the reply buffer");
	CHECK(rmca_mr_reg(ctx, &req, sizeof(req), RMCA_ACCESS_LOCAL, &qmr),
	      "registering the request buffer");
	CHECK(rmca_recv(ep, &rm, sizeof(rm), cmr, &rm),
	      "posting the receive for %s's region", where);
	CHECK(rmca_send(ep, &req, sizeof(req), qmr, &req),
	      "asking %s for %zu bytes", where, len);
	CHECK(wait_for(ctx, &req, NULL), "asking %s for %zu bytes", where, len);
	CHECK(wait_for(ctx, &rm, NULL), "waiting for %s's region", where);
	CHECK(rmca_mr_reg(ctx, src, len, RMCA_ACCESS_LOCAL, &mr),
	      "registering %zu bytes to put from", len);
	CHECK(rmca_mr_reg(ctx, back, len, RMCA_ACCESS_LOCAL, &bmr),
	      "registering %zu bytes to get into", len);
	t0 = now_s();
	for (int i = 0; i < iters; i++) {
		fill(src, len, (unsigned)i);
		CHECK(rmca_put(ep, src, len, mr, rm.addr, rm.rkey,
			       RMCA_DELIVERED, src),
		      "putting %zu bytes to %s (round %d)", len, where, i);
		CHECK(wait_for(ctx, src, NULL),
		      "putting %zu bytes to %s (round %d)", len, where, i);
		CHECK(rmca_get(ep, back, len, bmr, rm.addr, rm.rkey, back),
		      "reading %zu bytes back from %s (round %d)", len, where,
		      i);
		CHECK(wait_for(ctx, back, NULL),
		      "reading %zu bytes back from %s (round %d)", len, where,
		      i);
		if (check(back, len, (unsigned)i))
			return 1;
		CHECK(rmca_recv(ep, &rm, sizeof(rm), cmr, &rm),
		      "posting the receive for %s's answer (round %d)", where,
		      i);
		CHECK(rmca_send(ep, &req, sizeof(req), qmr, &req),
		      "telling %s that round %d is written", where, i);
		CHECK(wait_for(ctx, &req, NULL),
		      "telling %s that round %d is written", where, i);
		CHECK(wait_for(ctx, &rm, NULL),
		      "waiting for %s's check of round %d", where, i);
	}
	t = now_s() - t0;
	printf("client: %d x %zu bytes put, read back and checked in %.3f s (%.1f MB/s put+get)\n",
	       iters, len, t, t > 0 ? 2.0 * (double)len * iters / t / 1e6 : 0.0);
	rmca_send(ep, &req, sizeof(req), qmr, &req);
	wait_for(ctx, &req, NULL);
	rmca_ep_close(ep);
	free(src);
	free(back);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rmca_xfer -s [-l HOST:PORT] [-m BYTES]\n"
		"       rmca_xfer [-n BYTES] [-i ITERATIONS] HOST:PORT\n"
		"       rmca_xfer -h | --help | -V | --version\n"
		"Move a buffer between two processes with puts, gets and "
		"messages,\n"
		"check every byte, and show the transport and paths rmca "
		"chose.\n"
		"\n"
		"  -s, --server          serve one client; prints "
		"\"listening on port N\"\n"
		"  -m, --max BYTES       the largest buffer a client may ask "
		"the server for (256m)\n"
		"  -l, --listen HOST:PORT  where to listen (127.0.0.1:0: "
		"any free port)\n"
		"  -n, --size BYTES      buffer size (1m); suffixes k, m, "
		"g: 64k, 4m\n"
		"  -i, --iterations N    rounds of put, get and check (4)\n"
		"  -h, --help            this text\n"
		"  -V, --version         the version of rmca_xfer and of "
		"librmca\n"
		"\n"
		"Exit status: 0 all bytes checked, 1 a failure, 2 bad "
		"usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"iterations", required_argument, NULL, 'i'},
		{"listen", required_argument, NULL, 'l'},
		{"max", required_argument, NULL, 'm'},
		{"server", no_argument, NULL, 's'},
		{"size", required_argument, NULL, 'n'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *listen_at = "127.0.0.1:0", *why;
	size_t len = 1 << 20, max = (size_t)256 << 20;
	int iters = 4, server = 0, rc, opt;
	rmca_context_t *ctx;
	uint64_t size;
	long n;

	while ((opt = getopt_long(argc, argv, "sl:m:n:i:hV", lopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 's':
			server = 1;
			break;
		case 'l':
			listen_at = optarg;
			break;
		case 'm':
			if (cli_size(optarg, &size, &why))
				return cli_bad("rmca_xfer", "-m", optarg, why);
			if (!size || size > SIZE_MAX / 2)
				return cli_bad("rmca_xfer", "-m", optarg,
					       "at least one byte, and what "
					       "fits in memory");
			max = (size_t)size;
			break;
		case 'n':
			if (cli_size(optarg, &size, &why))
				return cli_bad("rmca_xfer", "-n", optarg, why);
			if (!size || size > SIZE_MAX / 2)
				return cli_bad("rmca_xfer", "-n", optarg,
					       "the buffer must hold at least "
					       "one byte and fit in memory");
			len = (size_t)size;
			break;
		case 'i':
			if (cli_long(optarg, 1, 1000000000, &n, &why))
				return cli_bad("rmca_xfer", "-i", optarg, why);
			iters = (int)n;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			cli_version("rmca_xfer");
			return 0;
		default:
			return cli_hint("rmca_xfer"); /* getopt said why */
		}
	}
	if (server && optind != argc) {
		fprintf(stderr,
			"rmca_xfer: -s takes no HOST:PORT ('%s'); use -l %s to "
			"choose where to listen\n",
			argv[optind], argv[optind]);
		return cli_hint("rmca_xfer");
	}
	if (!server && optind == argc) {
		fprintf(stderr, "rmca_xfer: missing HOST:PORT of a server "
				"started with rmca_xfer -s\n");
		return cli_hint("rmca_xfer");
	}
	if (!server && optind != argc - 1) {
		fprintf(stderr,
			"rmca_xfer: one HOST:PORT only ('%s' is one too "
			"many)\n",
			argv[optind + 1]);
		return cli_hint("rmca_xfer");
	}
	rc = rmca_init(&ctx);
	if (rc) {
		fprintf(stderr, "rmca_xfer: rmca could not start: %s\n",
			rmca_strerror(rc));
		return 1;
	}
	rc = server ? serve(ctx, listen_at, max)
		    : client(ctx, argv[optind], len, iters);
	rmca_finalize(ctx);
	return rc;
}
