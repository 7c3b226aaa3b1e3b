/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device follows the route (issue 14): with two devices of one transport
 * on two subnets of one host, a peer addressed on a subnet is served by the
 * device of that subnet, on both sides, and the reasons say why the other
 * device was left out.
 *
 * Runs in the check-vm guest as root: it adds a second device beside the
 * first (contrib/vm/second-device.sh: rxe1 on 10.0.2.1 beside rxe0 on
 * 10.0.0.1, or siw1 on 10.0.3.1 beside siw0 on 10.0.1.1) for its own run
 * and removes it after, so the other tests see the guest unchanged. Skips
 * where there is no first device (not in the guest). Transport from
 * RMCA_transports (ib or iwarp).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rmca/info.h>

#include "api_util.h"
#include "tap_skip.h"

#define XFER 65536

struct dev {
	const char *name, *addr;
};

static char transport[16];
static struct dev first, second;
static char *saved_host;
static char why_skip[160];
static bool added;

static int helper(const char *verb)
{
	const char *src = getenv("RMCATEST_SRCDIR");
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "sh '%s/../contrib/vm/second-device.sh' %s %s >/dev/null",
		 src ? src : ".", verb, transport);
	return system(cmd);
}

static int group_setup(void **state)
{
	const char *t = getenv("RMCA_transports");
	char path[128];

	(void)state;
	snprintf(transport, sizeof(transport), "%s", t && *t ? t : "ib");
	if (!strcmp(transport, "ib")) {
		first = (struct dev){"rxe0", "10.0.0.1"};
		second = (struct dev){"rxe1", "10.0.2.1"};
	} else if (!strcmp(transport, "iwarp")) {
		first = (struct dev){"siw0", "10.0.1.1"};
		second = (struct dev){"siw1", "10.0.3.1"};
	} else {
		snprintf(why_skip, sizeof(why_skip),
			 "RMCA_transports=%s: ib or iwarp only", transport);
		return 0;
	}
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", first.name);
	if (access(path, F_OK)) {
		snprintf(why_skip, sizeof(why_skip),
			 "no %s: not in the check-vm guest", first.name);
		return 0;
	}
	if (geteuid()) {
		snprintf(why_skip, sizeof(why_skip), "adding %s needs root",
			 second.name);
		return 0;
	}
	/* In the guest as root, the second device must come up. */
	if (helper("add")) {
		print_error("cannot add %s (%s)\n", second.name, second.addr);
		return -1;
	}
	added = true;
	t = getenv("RMCATEST_HOST");
	saved_host = t ? strdup(t) : NULL;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (added && helper("del"))
		print_error("cannot remove %s\n", second.name);
	if (saved_host)
		setenv("RMCATEST_HOST", saved_host, 1);
	free(saved_host);
	return 0;
}

static void need_devices(void)
{
	if (why_skip[0])
		TAP_SKIP("%s", why_skip);
}

/* Both sides: the endpoint is on the device of the addressed subnet, and
 * data goes through it. */
static void on_device(struct api_peer *p)
{
	const struct dev *want = p->arg;
	struct rmca_ep_attr a;
	unsigned char *buf = api_alloc(XFER);
	rmca_mr_t *mr;

	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG(
		!strcmp(a.transport, transport) &&
			!strcmp(a.device, want->name),
		"%s: a peer addressed at %s is served by %s %s, expected %s %s",
		p->is_server ? "listener" : "connecting side", want->addr,
		a.transport, a.device, transport, want->name);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, XFER, RMCA_ACCESS_LOCAL, &mr));
	if (p->is_server) {
		API_CHECK(api_recv_wait(p, p->ep, buf, XFER, mr) == XFER);
		API_CHECK_MSG(api_pattern_check(buf, XFER, 14) < 0,
			      "the data arrived changed");
	} else {
		api_pattern(buf, XFER, 14);
		api_send_wait(p, p->ep, buf, XFER, mr);
	}
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void run_at(const struct dev *d)
{
	struct api_test t = {
		.server = on_device, .client = on_device, .arg = (void *)d};

	setenv("RMCATEST_HOST", d->addr, 1);
	api_run(&t);
	if (saved_host)
		setenv("RMCATEST_HOST", saved_host, 1);
}

static void test_second_subnet_uses_second_device(void **state)
{
	(void)state;
	need_devices();
	run_at(&second);
}

static void test_first_subnet_uses_first_device(void **state)
{
	(void)state;
	need_devices();
	run_at(&first);
}

/* rmca_info --explain against a listener on the second subnet: it names
 * the chosen pair and says why the first device was left out. */
static void explain_server(struct api_peer *p)
{
	api_expect_token(p, 0, API_TOKEN_GO);
}

static void explain_client(struct api_peer *p)
{
	char hp[64], out[4096], want[128];
	int port;

	API_CHECK_OK(rmca_init(&p->ctx));
	port = api_client_read_port(p);
	api_host_port(hp, sizeof(hp), second.addr, port);
	API_CHECK_OK(rmca_info_explain(p->ctx, hp, API_TIMEOUT_MS, out,
				       sizeof(out)));
	snprintf(want, sizeof(want), "device %s <-> %s", second.name,
		 second.name);
	API_CHECK_MSG(strstr(out, want), "no '%s' in:\n%s", want, out);
	snprintf(want, sizeof(want), "%s: route to %s leaves through %s",
		 first.name, second.addr, second.name);
	API_CHECK_MSG(strstr(out, want), "no '%s' in:\n%s", want, out);
	api_token(p, 0, API_TOKEN_GO);
}

static void explain_server_main(struct api_peer *p)
{
	api_server_listen(p, second.addr);
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
	explain_server(p);
}

static void test_explain_says_why_the_other_device_is_left_out(void **state)
{
	struct api_test t = {.server = explain_server_main,
			     .client = explain_client,
			     .manual = true};

	(void)state;
	need_devices();
	api_run(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_second_subnet_uses_second_device),
		cmocka_unit_test(test_first_subnet_uses_first_device),
		cmocka_unit_test(
			test_explain_says_why_the_other_device_is_left_out),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
