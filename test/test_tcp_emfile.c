/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Over tcp, through the whole library: the data port at the descriptor
 * limit (issue 7, defect 6). With RLIMIT_NOFILE lowered so that accept4
 * fails with EMFILE, peers queued on the data port must be closed at once
 * (the spare descriptor given up for each) rather than left hanging, and
 * the listener must not spin: rmca_wait_fd, the context's epoll set, does
 * not stay readable. Once descriptors are free again a good client is
 * served. Spinning is counted in wake-ups over a fixed number of rmca_poll
 * calls, never in time.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"

#define NPEERS	   4   /* raw peers queued on the data port */
#define NPOLLS	   100 /* rmca_poll calls counted */
#define MAX_WAKES  3   /* of NPOLLS: a spinning listener makes them all */
#define TOKEN_DONE 0xd0e

/* The highest descriptor open in this process. */
static int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int max = -1;

	API_CHECK_MSG(d, "/proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(d) && fd > max)
			max = fd;
	}
	closedir(d);
	return max;
}

/* The tcp data port: the listening socket that is not the bootstrap
 * listener (port boot). Its address is written to ss. */
static void find_data_port(int boot, struct sockaddr_storage *ss, socklen_t *sl)
{
	int max = highest_fd();

	for (int fd = 0; fd <= max; fd++) {
		int acc = 0, port;
		socklen_t len = sizeof(acc);

		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) ||
		    !acc)
			continue;
		*sl = sizeof(*ss);
		if (getsockname(fd, (struct sockaddr *)ss, sl))
			continue;
		if (ss->ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

			port = ntohs(a->sin6_port);
			if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr))
				a->sin6_addr = in6addr_loopback;
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)ss;

			port = ntohs(a->sin_port);
			if (a->sin_addr.s_addr == htonl(INADDR_ANY))
				a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		}
		if (port != boot)
			return;
	}
	api_die(__FILE__, __LINE__, "no tcp data port among the listeners");
}

static void server(struct api_peer *p)
{
	char *buf = api_alloc(64);
	int peers[NPEERS], fill[1024], nfill = 0, wakes = 0, wfd;
	struct sockaddr_storage ss;
	struct rlimit old, low;
	rmca_mr_t *mr;
	socklen_t sl;

	api_server_listen(p, api_host());
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &p->eps[0]));
	/* client 0's data connection opened the data port */
	find_data_port(rmca_listener_port(p->l), &ss, &sl);
	wfd = rmca_wait_fd(p->ctx);
	API_CHECK(wfd >= 0);

	/* Peers queued in the data port's backlog, not yet accepted: no
	 * rmca call runs until the limit is lowered. */
	for (int i = 0; i < NPEERS; i++) {
		peers[i] = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		API_CHECK(peers[i] >= 0);
		API_CHECK_MSG(!connect(peers[i], (struct sockaddr *)&ss, sl),
			      "connecting to the data port: %s",
			      strerror(errno));
	}
	/* No descriptor left: the limit just above the highest one, the
	 * holes below it filled. */
	API_CHECK(!getrlimit(RLIMIT_NOFILE, &old));
	low = old;
	low.rlim_cur = (rlim_t)highest_fd() + 1;
	API_CHECK(!setrlimit(RLIMIT_NOFILE, &low));
	for (;;) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			API_CHECK_MSG(errno == EMFILE, "open: %s",
				      strerror(errno));
			break;
		}
		API_CHECK(nfill < (int)(sizeof(fill) / sizeof(fill[0])));
		fill[nfill++] = fd;
	}

	/* Each pass may handle the data port; afterwards the context must
	 * have nothing ready. A listener left readable while accept4 fails
	 * makes every pass a wake-up. */
	for (int i = 0; i < NPOLLS; i++) {
		struct rmca_completion c[8];
		struct pollfd pf = {.fd = wfd, .events = POLLIN};
		int n = rmca_poll(p->ctx, c, 8);

		API_CHECK_MSG(n == 0, "rmca_poll: %d", n);
		if (poll(&pf, 1, 0) > 0)
			wakes++;
	}
	API_CHECK_MSG(wakes <= MAX_WAKES,
		      "out of descriptors, the context was ready after %d of "
		      "%d rmca_poll calls: the data port spins",
		      wakes, NPOLLS);

	/* Nobody left hanging: each queued peer sees its connection end. */
	for (int i = 0; i < NPEERS; i++) {
		struct pollfd pf = {.fd = peers[i], .events = POLLIN};
		char b;
		ssize_t r;

		API_CHECK_MSG(poll(&pf, 1, API_TIMEOUT_MS) == 1,
			      "queued peer %d was never closed", i);
		r = recv(peers[i], &b, 1, MSG_DONTWAIT);
		API_CHECK_MSG(r == 0 || (r < 0 && errno == ECONNRESET),
			      "queued peer %d: recv %zd (%s)", i, r,
			      r < 0 ? strerror(errno) : "data");
		close(peers[i]);
	}

	/* Descriptors free again: a good client is served. */
	while (nfill)
		close(fill[--nfill]);
	API_CHECK(!setrlimit(RLIMIT_NOFILE, &old));
	api_put_u64(p, 1, (uint64_t)rmca_listener_port(p->l));
	API_CHECK_OK(rmca_accept(p->l, API_TIMEOUT_MS, &p->eps[1]));
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	API_CHECK(api_recv_wait(p, p->eps[1], buf, 64, mr) == 6);
	API_CHECK(!memcmp(buf, "hello", 6));
	memcpy(buf, "again", 6);
	api_send_wait(p, p->eps[1], buf, 6, mr);
	api_token(p, 0, TOKEN_DONE);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void client(struct api_peer *p)
{
	char *buf = api_alloc(64);
	rmca_mr_t *mr;

	api_client_connect(p, api_host());
	if (p->index == 0) {
		/* idle while the server is out of descriptors */
		api_expect_token(p, 0, TOKEN_DONE);
		free(buf);
		return;
	}
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, 64, RMCA_ACCESS_LOCAL, &mr));
	memcpy(buf, "hello", 6);
	api_send_wait(p, p->ep, buf, 6, mr);
	API_CHECK(api_recv_wait(p, p->ep, buf, 64, mr) == 6);
	API_CHECK(!memcmp(buf, "again", 6));
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void data_port_at_the_descriptor_limit(void **state)
{
	const struct api_test t = {.server = server,
				   .client = client,
				   .nclients = 2,
				   .manual = true};

	(void)state;
	setenv("RMCA_transports", "tcp", 1);
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(data_port_at_the_descriptor_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
