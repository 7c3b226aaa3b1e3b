/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_pingpong - the user-space work of a spinning round trip over rmca's
 * tcp component, or over a plain TCP socket, without the waiting: one
 * thread, both ends in this process, each end polled in turn only as long
 * as it has something to find. What a spinning process does between two
 * messages (idle passes) depends on the load; everything else is the same
 * at every round trip, so the instructions one takes (valgrind --tool=
 * callgrind at N and 2N round trips, contrib/bench/syscalls.sh
 * --instructions --mode spin) do not drift with the machine.
 *
 *   tcp_pingpong TEST [N [SIZE]]
 *
 *   send   8 B (SIZE) message and reply, receives posted 64 ahead, as
 *          rmca_perf's send_lat; each side makes the pass that follows
 *          its post (which does not look at the socket) as a spinning
 *          caller does
 *   put    a put flagged RMCA_DELIVERED, post to completion (put_lat)
 *   fadd   a 64-bit fetch-add, post to completion (atomic_lat)
 *   idle   one rmca_poll that finds nothing, on a connected endpoint
 *   raw    SIZE bytes and a reply of SIZE bytes over a plain TCP socket
 *          (TCP_NODELAY, non-blocking recv(), rmca_perf --raw --spin)
 *   rawiov the same with an 80-byte header before each message, written
 *          as tcp used to write a frame: sendmsg() of two iovecs, header
 *          and payload; each side reads with recv() into a 32 KiB buffer
 *   rawcopy the same frames copied whole and written with send(), as tcp
 *          writes a frame of up to TCP_TX_COPY bytes: with rawiov, what
 *          the kernel's share of the two ways costs (timed: ns printed)
 *
 * Prints "TEST,SIZE,N,NS,ns_per_round_trip" (one CPU: no cache line moves
 * between cores, so the time is not the two-process latency), then
 * "idle_passes,N": the passes of send's waits that found nothing.
 *
 * PINGPONG_ADDR names another address than 127.0.0.1 for both ends: with
 * RMCA_transports=ib or iwarp and an RDMA device's address, the same
 * round trips run over verbs (contrib/bench/instr-vm.sh). A device
 * completes a message on its own time, so send's waits there make passes
 * that find nothing, as many as it takes: counted, so that their share
 * (the idle test's pass each) can be taken out.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define PINGPONG_NAME "tcp_pingpong"
#include "pingpong.h"

#define DEPTH 64

/* One pass of ctx; how many completions of op it returned (all OK). */
static int poll_once(rmca_context_t *ctx, enum rmca_op op)
{
	struct rmca_completion c[8];
	int n = rmca_poll(ctx, c, 8), got = 0;

	if (n < 0)
		die("poll", n);
	for (int i = 0; i < n; i++) {
		if (c[i].status)
			die("completion", c[i].status);
		got += c[i].op == op;
	}
	return got;
}

static long idle_passes;

static void poll_until(rmca_context_t *ctx, enum rmca_op op)
{
	while (!poll_once(ctx, op))
		idle_passes++;
}

static void xfer(int fd, void *buf, size_t len, int out)
{
	for (char *p = buf; len;) {
		ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL)
				: recv(fd, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n == 0 || (out && n < 0)) {
			perror("tcp_pingpong: raw socket");
			exit(1);
		}
	}
}

static int raw_pair(int *a, int *b)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&sa, &sl))
		return -1;
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	*b = accept(l, NULL, NULL);
	close(l);
	if (*b < 0)
		return -1;
	setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* A frame of an 80-byte header and size bytes out on fd: with sendmsg()
 * from two iovecs (iov), or copied whole and with send(). */
static void frame_out(int fd, const char *hdr, const char *pl, size_t size,
		      int iov)
{
	static char whole[80 + 4096];
	struct iovec v[2] = {{(void *)hdr, 80}, {(void *)pl, size}};
	struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
	ssize_t n;

	if (iov) {
		n = sendmsg(fd, &m, MSG_NOSIGNAL);
	} else {
		memcpy(whole, hdr, 80);
		memcpy(whole + 80, pl, size);
		n = send(fd, whole, 80 + size, MSG_NOSIGNAL);
	}
	if (n != (ssize_t)(80 + size)) {
		perror("tcp_pingpong: frame write");
		exit(1);
	}
}

/* A frame in from fd, read as tcp reads: into a 32 KiB buffer. */
static void frame_in(int fd, size_t size)
{
	static char rb[32768];

	for (size_t got = 0; got < 80 + size;) {
		ssize_t n = recv(fd, rb, sizeof(rb), MSG_DONTWAIT);

		if (n > 0) {
			got += (size_t)n;
		} else if (n == 0) {
			perror("tcp_pingpong: frame read");
			exit(1);
		}
	}
}

/* framed: 0 plain messages, 1 frames by sendmsg() of two iovecs, 2 frames
 * copied and written with send(). */
static void run_raw(long warmup, long n, size_t size, int framed)
{
	static const char *name[] = {"raw", "rawiov", "rawcopy"};
	static char buf[2][4096], hdr[80];
	double t0 = 0;
	int a, b;

	if (raw_pair(&a, &b)) {
		perror("tcp_pingpong: raw socket pair");
		exit(1);
	}
	for (long i = 0; i < warmup + n; i++) {
		if (i == warmup)
			t0 = now_ns();
		if (framed) {
			frame_out(a, hdr, buf[0], size, framed == 1);
			frame_in(b, size);
			frame_out(b, hdr, buf[1], size, framed == 1);
			frame_in(a, size);
			continue;
		}
		xfer(a, buf[0], size, 1);
		xfer(b, buf[1], size, 0);
		xfer(b, buf[1], size, 1);
		xfer(a, buf[0], size, 0);
	}
	printf("%s,%zu,%ld,%.1f,ns_per_round_trip\n", name[framed], size, n,
	       (now_ns() - t0) / (double)n);
	close(a);
	close(b);
}

int main(int argc, char **argv)
{
	const char *test = argc > 1 ? argv[1] : "send";
	long n = argc > 2 ? atol(argv[2]) : 100000, warmup;
	size_t size = argc > 3 ? strtoul(argv[3], NULL, 0) : 8;
	static char buf[4][4096];
	static uint64_t word, result;
	rmca_context_t *a, *b;
	rmca_mr_t *mr[4], *wmr, *resmr;
	rmca_ep_t *ea, *eb;
	uint64_t rkey, wkey;
	double t0 = 0;
	int rc, kind;

	if (n < 1 || size > sizeof(buf[0]))
		return 2;
	warmup = n / 10 + 1;
	if (!strcmp(test, "raw") || !strcmp(test, "rawiov") ||
	    !strcmp(test, "rawcopy")) {
		int framed = !strcmp(test, "rawiov")	? 1
			     : !strcmp(test, "rawcopy") ? 2
							: 0;

		run_raw(warmup, n, size, framed);
		return 0;
	}
	pingpong_pair(&a, &b, &ea, &eb);
	for (int i = 0; i < 4; i++)
		if ((rc = rmca_mr_reg(i < 2 ? a : b, buf[i], sizeof(buf[i]),
				      i == 2 ? RMCA_ACCESS_REMOTE_WRITE
					     : RMCA_ACCESS_LOCAL,
				      &mr[i])))
			die("mr_reg", rc);
	if ((rc = rmca_mr_reg(b, &word, sizeof(word), RMCA_ACCESS_REMOTE_ATOMIC,
			      &wmr)) ||
	    (rc = rmca_mr_reg(a, &result, sizeof(result), RMCA_ACCESS_LOCAL,
			      &resmr)))
		die("regions", rc);
	/* b's regions, for a's operations through eb's connection */
	rkey = rmca_mr_rkey(mr[2], eb);
	wkey = rmca_mr_rkey(wmr, eb);
	if (!rkey || !wkey)
		die("rkey", RMCA_ERR_INVALID);
	kind = !strcmp(test, "send")   ? 's'
	       : !strcmp(test, "put")  ? 'p'
	       : !strcmp(test, "fadd") ? 'f'
	       : !strcmp(test, "idle") ? 'i'
				       : 0;
	if (!kind) {
		fprintf(stderr, "tcp_pingpong: no test %s\n", test);
		return 2;
	}
	if (kind == 's') {
		for (int i = 0; i < DEPTH; i++)
			if ((rc = rmca_recv(eb, buf[2], size, mr[2], NULL)) ||
			    (rc = rmca_recv(ea, buf[0], size, mr[0], NULL)))
				die("recv", rc);
		/* each side learns of the other's receives */
		for (int i = 0; i < 4; i++) {
			poll_once(a, RMCA_OP_RECV);
			poll_once(b, RMCA_OP_RECV);
		}
	}
	for (long i = 0; i < warmup + n; i++) {
		if (i == warmup)
			t0 = now_ns();
		if (kind == 's') {
			if ((rc = rmca_send(ea, buf[1], size, mr[1], NULL)))
				die("send", rc);
			poll_once(a,
				  RMCA_OP_RECV); /* the pass after the post */
			poll_until(b, RMCA_OP_RECV);
			if ((rc = rmca_send(eb, buf[3], size, mr[3], NULL)) ||
			    (rc = rmca_recv(eb, buf[2], size, mr[2], NULL)))
				die("send", rc);
			poll_once(b, RMCA_OP_RECV);
			poll_until(a, RMCA_OP_RECV);
			if ((rc = rmca_recv(ea, buf[0], size, mr[0], NULL)))
				die("recv", rc);
		} else if (kind == 'p' || kind == 'f') {
			struct rmca_atomic op = {.kind = RMCA_ATOMIC_FADD,
						 .raddr = (uintptr_t)&word,
						 .rkey = wkey,
						 .operand = 1};
			enum rmca_op want = RMCA_OP_ATOMIC;

			if (kind == 'p') {
				want = RMCA_OP_PUT;
				rc = rmca_put(ea, buf[1], size, mr[1],
					      (uintptr_t)buf[2], rkey,
					      RMCA_DELIVERED, NULL);
			} else {
				rc = rmca_atomic(ea, &op, &result, resmr, NULL);
			}
			if (rc)
				die("post", rc);
			/* the initiator's pass after the post, the target's
			 * that serves it, the initiator's that completes */
			while (!poll_once(a, want))
				poll_once(b, RMCA_OP_RECV);
		} else {
			poll_once(a, RMCA_OP_RECV);
		}
	}
	printf("%s,%zu,%ld,%.1f,ns_per_round_trip\n", test, size, n,
	       (now_ns() - t0) / (double)n);
	printf("idle_passes,%ld\n", idle_passes);
	pingpong_unpair(a, b, ea, eb);
	return 0;
}
