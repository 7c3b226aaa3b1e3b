// SPDX-License-Identifier: BSD-3-Clause
/*
 * libFuzzer target for the tcp data port's accept-match state machine: the
 * sockets a listener accepted, their hellos, the tokens they park under,
 * the passive connects that claim them (or give up), newer hellos that
 * supersede older ones, expiry. The input is a script of operations on
 * real loopback sockets against a real tcp module, with a minimal core
 * (an fd table polled after each step). From a
 * configured build tree, make -C test check-fuzz builds and runs it (with
 * the others), or by hand:
 *
 *   make -C test fuzz-accept && ./test/fuzz-accept -max_total_time=60
 *
 * make check replays it (fuzz_accept_replay) from the seeds below, the
 * first of which is the sequence that once freed a parked socket twice.
 *
 *   operations (one byte: the low three bits, then their arguments; with
 *   bit 7 set, the module does not run before the next one, so that
 *   several sockets are ready in one pass):
 *     0 k      connect client k (0..7) to the data port
 *     1 k t    client k sends a hello with token t (0..3)
 *     2 k n .. client k sends n (0..15) raw bytes
 *     3 k      client k closes
 *     4 j t    passive connect j (0..3) starts for token t
 *     5 j      connect j is polled (a connection made is disconnected)
 *     6 j      connect j is aborted
 *     7        parked sockets expire (all are due at once)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap);

#define NFD 1024

static struct {
	rmca_fd_cb cb;
	void *arg;
	uint32_t events;
} fds[NFD];

static void f_log(const struct rmca_core *core, int level, const char *fmt, ...)
{
}

static int f_param_register(const struct rmca_core *core,
			    const struct rmca_param_def *def)
{
	return 0;
}

static bool f_param_bool(const struct rmca_core *core, const char *name)
{
	return false;
}

static long long f_param_int(const struct rmca_core *core, const char *name)
{
	return 0;
}

static size_t f_param_size(const struct rmca_core *core, const char *name)
{
	return 0;
}

static const char *f_param_string(const struct rmca_core *core,
				  const char *name)
{
	return "";
}

static int f_param_enum(const struct rmca_core *core, const char *name)
{
	return 0;
}

static int f_list_selects(const char *list, const char *name)
{
	return 1;
}

static int f_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		    rmca_fd_cb cb, void *arg)
{
	if (fd < 0 || fd >= NFD || fds[fd].cb)
		abort(); /* a module registering a socket twice is a bug */
	fds[fd].cb = cb;
	fds[fd].arg = arg;
	fds[fd].events = events;
	return 0;
}

static int f_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	if (fd < 0 || fd >= NFD || !fds[fd].cb)
		abort();
	fds[fd].events = events;
	return 0;
}

static void f_fd_del(const struct rmca_core *core, int fd)
{
	if (fd >= 0 && fd < NFD)
		memset(&fds[fd], 0, sizeof(fds[fd]));
}

static void f_complete(const struct rmca_core *core, void *req, int status,
		       size_t len, uint64_t revoked_rkey)
{
}

static void f_conn_failed(const struct rmca_core *core, void *cookie,
			  int status)
{
}

static int f_random(void *buf, size_t len)
{
	memset(buf, 0x5a, len);
	return 0;
}

static const struct rmca_core_ops f_ops = {
	.complete = f_complete,
	.conn_failed = f_conn_failed,
	.fd_add = f_fd_add,
	.fd_del = f_fd_del,
	.fd_mod = f_fd_mod,
	.list_selects = f_list_selects,
	.log = f_log,
	.param_bool = f_param_bool,
	.param_enum = f_param_enum,
	.param_int = f_param_int,
	.param_register = f_param_register,
	.param_size = f_param_size,
	.param_string = f_param_string,
	.random = f_random,
};

static const struct rmca_core f_core = {.ops = &f_ops};

/* One pass of the event loop: every ready socket's callback, looked up
 * anew (a callback may close others). */
static void dispatch(void)
{
	struct pollfd p[NFD];
	int n = 0;

	for (int fd = 0; fd < NFD; fd++)
		if (fds[fd].cb && fds[fd].events)
			p[n++] = (struct pollfd){
				.fd = fd,
				.events = (short)((fds[fd].events & EPOLLIN
							   ? POLLIN
							   : 0) |
						  (fds[fd].events & EPOLLOUT
							   ? POLLOUT
							   : 0)),
			};
	if (poll(p, (nfds_t)n, 0) <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (p[i].revents && fds[p[i].fd].cb)
			fds[p[i].fd].cb(
				fds[p[i].fd].arg,
				(p[i].revents & POLLIN ? EPOLLIN : 0) |
					(p[i].revents & POLLOUT ? EPOLLOUT
								: 0) |
					(p[i].revents & POLLHUP ? EPOLLHUP
								: 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t tokens[] = {0, 0x11, 0x22, 0x33};
	struct rmca_connecting *h[4] = {0};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int cl[8], port;
	struct tcp_module *m;
	size_t i = 0;
	uint8_t buf[TCP_HDR_LEN];

	for (int k = 0; k < 8; k++)
		cl[k] = -1;
	if (rmca_tcp_module_create(&f_core, "lo", &m))
		return 0;
	/* Every parked socket is due at once: op 7 expires them all. */
	m->pending_ms = 0;
	if (rmca_tcp_listen(m)) {
		rmca_tcp_module_destroy(m);
		return 0;
	}
	port = m->port;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)port);

	while (i < size) {
		bool hold = data[i] & 0x80;
		uint8_t op = data[i++] % 8;
		uint8_t a = i < size ? data[i] : 0;
		uint8_t b = i + 1 < size ? data[i + 1] : 0;
		struct rmca_conn_args args = {0};
		struct rmca_conn *c;
		struct tcp_frame f;

		switch (op) {
		case 0:
			i++;
			if (cl[a % 8] >= 0)
				break;
			cl[a % 8] = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(cl[a % 8], (struct sockaddr *)&sa,
				    sizeof(sa))) {
				close(cl[a % 8]);
				cl[a % 8] = -1;
			}
			break;
		case 1:
			i += 2;
			if (cl[a % 8] < 0)
				break;
			memset(&f, 0, sizeof(f));
			f.type = TCP_F_HELLO;
			f.id = tokens[b % 4];
			f.operand = TCP_HELLO_WORD;
			rmca_tcp_frame_encode(&f, buf);
			send(cl[a % 8], buf, sizeof(buf), MSG_NOSIGNAL);
			break;
		case 2: {
			size_t n = b % 16;

			i += 2;
			if (n > size - i)
				n = size - i;
			if (cl[a % 8] >= 0 && n)
				send(cl[a % 8], data + i, n, MSG_NOSIGNAL);
			i += n;
			break;
		}
		case 3:
			i++;
			if (cl[a % 8] >= 0)
				close(cl[a % 8]);
			cl[a % 8] = -1;
			break;
		case 4:
			i += 2;
			if (h[a % 4])
				break;
			args.token = tokens[b % 4];
			args.timeout_ms = 10000;
			snprintf(args.peer_host, sizeof(args.peer_host),
				 "127.0.0.1");
			if (rmca_tcp_connect_start(&m->base, &args, &h[a % 4]))
				h[a % 4] = NULL;
			break;
		case 5:
			i++;
			if (!h[a % 4])
				break;
			c = NULL;
			if (rmca_tcp_connect_poll(h[a % 4], &c) !=
			    RMCA_ERR_AGAIN) {
				h[a % 4] = NULL;
				/* 0: a connection was made */
				if (c)
					rmca_tcp_disconnect(c);
			}
			break;
		case 6:
			i++;
			if (h[a % 4])
				rmca_tcp_connect_abort(h[a % 4]);
			h[a % 4] = NULL;
			break;
		case 7:
			rmca_tcp_pending_expire(&m->base);
			break;
		}
		/* Loopback delivers within the system call: the module can
		 * react at once. */
		if (!hold)
			dispatch();
	}
	for (int j = 0; j < 4; j++)
		if (h[j])
			rmca_tcp_connect_abort(h[j]);
	for (int k = 0; k < 8; k++)
		if (cl[k] >= 0)
			close(cl[k]);
	rmca_tcp_module_destroy(m);
	return 0;
}

size_t rmca_fuzz_seed(unsigned i, uint8_t *buf, size_t cap)
{
	static const uint8_t seeds[][40] = {
		/* Issue 7.1: A and B connect, B parks under 0x11, then B
		 * sends a byte more and A a hello with 0x11, seen together;
		 * a connect for another token waits meanwhile. */
		{4,   0, 2, 0, 0, 0, 1, 1, 1, 1, 0x82, 1, 1,
		 '!', 1, 0, 1, 7, 5, 0, 6, 0, 3, 0,    3, 1},
		/* A connect waits, its socket comes and is claimed. */
		{4, 0, 1, 0, 2, 1, 2, 1, 5, 0, 3, 2},
		/* The socket comes first and is parked, then the connect. */
		{0, 3, 1, 3, 3, 4, 1, 3, 5, 1, 5, 1, 3, 3},
		/* Token 0, garbage, a close mid-hello, expiry. */
		{0, 4, 1, 4, 0, 0, 5, 2, 5, 8, 1, 2, 3, 4, 5, 6,
		 7, 8, 0, 6, 2, 6, 3, 1, 2, 3, 3, 6, 0, 7, 7},
	};
	static const size_t lens[] = {26, 12, 14, 31};

	if (i >= sizeof(lens) / sizeof(lens[0]) || cap < lens[i])
		return 0;
	memcpy(buf, seeds[i], lens[i]);
	return lens[i];
}
