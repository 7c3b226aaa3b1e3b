// SPDX-License-Identifier: BSD-3-Clause
/*
 * rmca_xfer - move a buffer between two processes and check it.
 *
 *   rmca_xfer -s [-l HOST:PORT]             serve (prints the port it got)
 *   rmca_xfer [-n BYTES] [-i ITERS] HOST:PORT
 *
 * The server registers a region and sends its address and key; the client
 * writes a pattern into it with RMCA_DELIVERED puts, reads it back with a
 * get, exchanges messages, and both sides check every byte. The transport
 * and the paths in use are printed, so the demo also shows what rmca chose.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rmca.h>

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

#define CHECK(call)                                                        \
	do {                                                               \
		int rc_ = (call);                                          \
		if (rc_) {                                                 \
			fprintf(stderr, "rmca_xfer: %s: %s\n", #call,      \
				rmca_strerror(rc_));                       \
			return 1;                                          \
		}                                                          \
	} while (0)

static int serve(rmca_context_t *ctx, const char *where)
{
	rmca_listener_t *l;
	rmca_ep_t *ep;
	rmca_mr_t *mr, *cmr, *rmr;
	struct region_msg rm, req;
	unsigned char *buf;
	int iters;

	CHECK(rmca_listen(ctx, where, &l));
	printf("listening on port %d\n", rmca_listener_port(l));
	fflush(stdout);
	CHECK(rmca_accept(l, -1, &ep));
	show(ep);
	CHECK(rmca_mr_reg(ctx, &req, sizeof(req), RMCA_ACCESS_LOCAL, &cmr));
	CHECK(rmca_mr_reg(ctx, &rm, sizeof(rm), RMCA_ACCESS_LOCAL, &rmr));
	CHECK(rmca_recv(ep, &req, sizeof(req), cmr, &req));
	CHECK(wait_for(ctx, &req, NULL));
	buf = calloc(1, req.len);
	if (!buf)
		return 1;
	CHECK(rmca_mr_reg(ctx, buf, req.len,
			  RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE, &mr));
	rm = (struct region_msg){ .addr = (uintptr_t)buf,
				  .rkey = rmca_mr_rkey(mr, ep), .len = req.len };
	iters = (int)req.addr;
	CHECK(rmca_recv(ep, &req, sizeof(req), cmr, &req));
	CHECK(rmca_send(ep, &rm, sizeof(rm), rmr, &rm));
	CHECK(wait_for(ctx, &rm, NULL));
	for (int i = 0; i < iters; i++) {
		/* the client says "written", we check, and answer */
		CHECK(wait_for(ctx, &req, NULL));
		if (check(buf, rm.len, (unsigned)i))
			return 1;
		CHECK(rmca_recv(ep, &req, sizeof(req), cmr, &req));
		CHECK(rmca_send(ep, &rm, sizeof(rm), rmr, &rm));
		CHECK(wait_for(ctx, &rm, NULL));
	}
	printf("server: %d x %zu bytes received and checked\n", iters,
	       (size_t)rm.len);
	wait_for(ctx, &req, NULL); /* the client's goodbye, or its close */
	rmca_ep_close(ep);
	rmca_listener_close(l);
	free(buf);
	return 0;
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
	CHECK(rmca_connect(ctx, where, 10000, &ep));
	show(ep);
	CHECK(rmca_mr_reg(ctx, &rm, sizeof(rm), RMCA_ACCESS_LOCAL, &cmr));
	CHECK(rmca_mr_reg(ctx, &req, sizeof(req), RMCA_ACCESS_LOCAL, &qmr));
	CHECK(rmca_recv(ep, &rm, sizeof(rm), cmr, &rm));
	CHECK(rmca_send(ep, &req, sizeof(req), qmr, &req));
	CHECK(wait_for(ctx, &req, NULL));
	CHECK(wait_for(ctx, &rm, NULL));
	CHECK(rmca_mr_reg(ctx, src, len, RMCA_ACCESS_LOCAL, &mr));
	CHECK(rmca_mr_reg(ctx, back, len, RMCA_ACCESS_LOCAL, &bmr));
	t0 = now_s();
	for (int i = 0; i < iters; i++) {
		fill(src, len, (unsigned)i);
		CHECK(rmca_put(ep, src, len, mr, rm.addr, rm.rkey, RMCA_DELIVERED, src));
		CHECK(wait_for(ctx, src, NULL));
		CHECK(rmca_get(ep, back, len, bmr, rm.addr, rm.rkey, back));
		CHECK(wait_for(ctx, back, NULL));
		if (check(back, len, (unsigned)i))
			return 1;
		CHECK(rmca_recv(ep, &rm, sizeof(rm), cmr, &rm));
		CHECK(rmca_send(ep, &req, sizeof(req), qmr, &req));
		CHECK(wait_for(ctx, &req, NULL));
		CHECK(wait_for(ctx, &rm, NULL));
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
	fprintf(f, "usage: rmca_xfer -s [-l HOST:PORT]\n"
		   "       rmca_xfer [-n BYTES] [-i ITERATIONS] HOST:PORT\n");
}

int main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0";
	size_t len = 1 << 20;
	int iters = 4, server = 0, rc, opt;
	rmca_context_t *ctx;

	while ((opt = getopt(argc, argv, "sl:n:i:h")) != -1) {
		switch (opt) {
		case 's':
			server = 1;
			break;
		case 'l':
			listen_at = optarg;
			break;
		case 'n':
			len = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			iters = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if ((server && optind != argc) || (!server && optind != argc - 1) ||
	    !len || iters < 1) {
		usage(stderr);
		return 2;
	}
	rc = rmca_init(&ctx);
	if (rc) {
		fprintf(stderr, "rmca_xfer: rmca_init: %s\n", rmca_strerror(rc));
		return 1;
	}
	rc = server ? serve(ctx, listen_at) : client(ctx, argv[optind], len, iters);
	rmca_finalize(ctx);
	return rc;
}
