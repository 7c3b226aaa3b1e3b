/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A module comes up, listens and reaches itself however many of the host's
 * TCP ports other sockets hold. On iWARP an rdma_cm id's port is a TCP port
 * of the host (siw binds a kernel socket to it), and rdma_cm's "any port"
 * used to ignore the TCP sockets: a port held by the TIME_WAIT of a
 * connection another process had just closed made the listener fail
 * ("iwarp: siw0: cannot set up, skipped") or the connection, at random,
 * about one process start in a few hundred in make check-vm.
 *
 * Here the chance is made large on purpose: the ephemeral range is narrowed
 * to FILL_PORTS + FREE_PORTS ports and FILL_PORTS of them are left in
 * TIME_WAIT by connections this process closes first (as a job's bootstrap
 * does), before module after module is opened. Runs in the VM as root (it
 * sets net.ipv4.ip_local_port_range and puts it back); skips elsewhere.
 * On ib the same holds trivially (rdma_cm ports are not TCP ports there).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rmca/component.h> /* the cap bits */
#include <rmca/info.h>

#include "api_util.h"

#define RANGE	   "/proc/sys/net/ipv4/ip_local_port_range"
#define FIRST_PORT 50000
#define FILL_PORTS 896
#define FREE_PORTS 128
#define OPENS	   12

static char saved_range[64];

static int range_write(const char *v)
{
	FILE *f = fopen(RANGE, "w");
	int ok;

	if (!f)
		return -1;
	ok = fputs(v, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static int range_restore(void **state)
{
	(void)state;
	if (saved_range[0] && range_write(saved_range))
		fprintf(stderr, "# cannot restore %s to %s\n", RANGE,
			saved_range);
	saved_range[0] = 0;
	return 0;
}

/* Narrow the range; false (and why) where this process may not. */
static bool range_narrow(void)
{
	char v[64];
	FILE *f = fopen(RANGE, "r");

	if (!f || !fgets(saved_range, sizeof(saved_range), f)) {
		if (f)
			fclose(f);
		saved_range[0] = 0;
		print_message("# SKIP cannot read %s\n", RANGE);
		return false;
	}
	fclose(f);
	snprintf(v, sizeof(v), "%d %d", FIRST_PORT,
		 FIRST_PORT + FILL_PORTS + FREE_PORTS - 1);
	if (range_write(v)) {
		print_message("# SKIP cannot write %s: %s (not root?)\n", RANGE,
			      strerror(errno));
		saved_range[0] = 0;
		return false;
	}
	return true;
}

/*
 * n connections to ourselves from host, each closed by the connecting side
 * first: its port stays held in TIME_WAIT (for a minute), as a bootstrap
 * connection of a process that just finished does. Each connecting socket
 * binds first, so each takes a port of its own.
 */
static int fill_time_wait(const char *host, int n)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int l, i;

	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -1;
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(l, (struct sockaddr *)&a, &len) || listen(l, 64))
		return -1;
	for (i = 0; i < n; i++) {
		struct sockaddr_in b = a;
		int c = socket(AF_INET, SOCK_STREAM, 0), s;

		b.sin_port = 0;
		if (c < 0 || bind(c, (struct sockaddr *)&b, sizeof(b)) ||
		    connect(c, (struct sockaddr *)&a, sizeof(a)))
			break;
		s = accept(l, NULL, NULL);
		close(c);
		if (s >= 0)
			close(s);
	}
	close(l);
	return i;
}

/* Is there a module of our transport at all (before the ports are
 * narrowed)? */
static bool have_module(void)
{
	struct rmca_info_module m;
	rmca_context_t *ctx;
	bool found;

	if (rmca_init_inspect(&ctx))
		return false;
	found = api_find_module(ctx, &m);
	rmca_finalize(ctx);
	return found;
}

static void test_modules_come_up_beside_many_time_wait_ports(void **state)
{
	const char *host = api_host();
	int filled, i;

	(void)state;
	if (!have_module()) {
		print_message("# SKIP no %s module here\n", api_transport());
		skip();
	}
	if (!range_narrow())
		skip();
	filled = fill_time_wait(host, FILL_PORTS);
	print_message("# %d of %d ports of the range in TIME_WAIT on %s\n",
		      filled, FILL_PORTS + FREE_PORTS, host);
	assert_true(filled >= FILL_PORTS * 3 / 4);
	for (i = 0; i < OPENS; i++) {
		struct rmca_info_module m;
		rmca_context_t *ctx;

		assert_int_equal(rmca_init_inspect(&ctx), 0);
		if (!api_find_module(ctx, &m))
			fail_msg("open %d: no %s module", i, api_transport());
		/* the loopback probe connected the module to its own
		 * listener: both ends took a port */
		if (!(m.caps_probed & RMCA_CAP_LOOPBACK))
			fail_msg("open %d: %s/%s lost its loopback", i,
				 m.component, m.device);
		rmca_finalize(ctx);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			test_modules_come_up_beside_many_time_wait_ports,
			range_restore),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
