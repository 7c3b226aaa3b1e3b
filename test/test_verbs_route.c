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
 * and removes it after, so the other tests see the guest unchanged. On
 * iwarp also two hosts: two network namespaces joined by two veth pairs on
 * two subnets, each end with its own siw device (contrib/vm/two-hosts.sh),
 * where the subnet the listener is addressed on picks the device pair.
 * Skips where there is no first device (not in the guest). Transport from
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
#include "multi_dev.h"

#define XFER 65536

/* A connection: the listener's address, and the device each side must
 * use; each side in its network namespace (NULL: the test's own). */
struct want {
	const char *addr;
	const char *server_dev, *client_dev;
	const char *server_ns, *client_ns;
};

/* Both sides: the endpoint is on the device of the addressed subnet, and
 * data goes through it. */
static void on_device(struct api_peer *p)
{
	const struct want *w = p->arg;
	const char *dev = p->is_server ? w->server_dev : w->client_dev;
	unsigned char *buf;
	struct rmca_ep_attr a;
	rmca_mr_t *mr;

	md_meet(p, w->addr, w->server_ns, w->client_ns);
	API_CHECK_OK(rmca_ep_query(p->ep, &a));
	API_CHECK_MSG(
		!strcmp(a.transport, transport) && !strcmp(a.device, dev),
		"%s: a peer addressed at %s is served by %s %s, expected %s %s",
		p->is_server ? "listener" : "connecting side", w->addr,
		a.transport, a.device, transport, dev);
	buf = api_alloc(XFER);
	API_CHECK_OK(rmca_mr_reg(p->ctx, buf, XFER, RMCA_ACCESS_LOCAL, &mr));
	if (p->is_server) {
		API_CHECK(api_recv_wait(p, p->ep, buf, XFER, mr) == XFER);
		API_CHECK_MSG(api_pattern_check(buf, XFER, 14) < 0,
			      "the data arrived changed");
	} else {
		api_pattern(buf, XFER, 14);
		api_send_wait(p, p->ep, buf, XFER, mr);
	}
	/* The listener stays (and serves the READ that confirms an iWARP
	 * send) until the sender has its completion. */
	if (p->is_server)
		api_expect_token(p, 0, API_TOKEN_GO);
	else
		api_token(p, 0, API_TOKEN_GO);
	API_CHECK_OK(rmca_mr_dereg(mr));
	free(buf);
}

static void run(const struct want *w)
{
	md_run(on_device, on_device, w);
}

static void run_at(const struct dev *d)
{
	const struct want w = {
		.addr = d->addr, .server_dev = d->name, .client_dev = d->name};

	run(&w);
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
	md_listen(p, second.addr);
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

static void test_explain_says_why_the_other_device_is_left_out(void **state)
{
	(void)state;
	need_devices();
	md_run(explain_server, explain_client, NULL);
}

/* Two hosts, two subnets: the subnet the listener is addressed on picks
 * the device on both sides (before, the first pair won). */
static void test_two_hosts_the_addressed_subnet_picks_the_devices(void **state)
{
	static const struct want w[] = {
		{"10.5.1.2", "siwb1", "siwa1", "rmca-b", "rmca-a"},
		{"10.5.0.2", "siwb0", "siwa0", "rmca-b", "rmca-a"},
		/* and the other way round */
		{"10.5.1.1", "siwa1", "siwb1", "rmca-a", "rmca-b"},
	};

	(void)state;
	need_two_hosts();
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		print_message("# listener at %s\n", w[i].addr);
		run(&w[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_second_subnet_uses_second_device),
		cmocka_unit_test(test_first_subnet_uses_first_device),
		cmocka_unit_test(
			test_explain_says_why_the_other_device_is_left_out),
		cmocka_unit_test(
			test_two_hosts_the_addressed_subnet_picks_the_devices),
	};

	return cmocka_run_group_tests(tests, multi_dev_setup,
				      multi_dev_teardown);
}
