/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer that dials the tcp module's data port as fast as the module
 * accepts: one callback of the listening socket takes a bounded number of
 * connections and returns, so that the progress call it runs in, and the
 * context's other endpoints, go on; the rest wait in the backlog for the
 * next call. The peer dials from inside the module's own accept4 (this
 * program's, below), so the case is a count, the same on every run.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tcp_harness.h"

#define FLOOD 1000

static struct {
	bool on;
	int port;
	int accepts, dialed;
} fl;

/* One more connection to the data port, closed at once. */
static void dial(void)
{
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)fl.port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s >= 0 && !connect(s, (struct sockaddr *)&to, sizeof(to)))
		fl.dialed++;
	if (s >= 0)
		close(s);
}

int accept4(int fd, struct sockaddr *sa, socklen_t *sl, int flags)
{
	static int (*real)(int, struct sockaddr *, socklen_t *, int);

	if (!real)
		real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(
			RTLD_NEXT, "accept4");
	if (fl.on) {
		fl.accepts++;
		if (fl.dialed < FLOOD)
			dial();
	}
	return real(fd, sa, sl, flags);
}

static void test_dialing_flood_ends_each_accept_pass(void **state)
{
	struct tcp_module *m = th_module();

	(void)state;
	assert_int_equal(rmca_tcp_listen(m), 0);
	fl.port = m->port;
	dial(); /* the listening socket is readable */
	fl.on = true;
	th_pump(); /* the listening socket's callback, once */
	fl.on = false;
	print_message("# one pass accepted %d times, %d dialed\n", fl.accepts,
		      fl.dialed);
	assert_true(fl.dialed > 0);
	assert_true(fl.accepts <= 2 * TCP_MAX_PENDING);
	th_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dialing_flood_ends_each_accept_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
