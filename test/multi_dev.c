/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two devices of one transport on one host, and on iwarp two hosts (network
 * namespaces), for the tests of several devices per host
 * (test_verbs_route, test_verbs_rails): made by the group setup with
 * contrib/vm/second-device.sh and contrib/vm/two-hosts.sh, removed by the
 * group teardown, so the other tests see the guest unchanged.
 */
#define _GNU_SOURCE /* setns */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "api_util.h"
#include "multi_dev.h"
#include "tap_skip.h"

char transport[16];
struct dev first, second;
bool hosts_added;
static char why_skip[160];
static bool added;

/* contrib/vm/SCRIPT VERB [transport] */
static int helper(const char *script, const char *verb)
{
	const char *src = getenv("RMCATEST_SRCDIR");
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "sh '%s/../contrib/vm/%s' %s %s >/dev/null",
		 src ? src : ".", script, verb, transport);
	return system(cmd);
}

int multi_dev_setup(void **state)
{
	char path[128];

	(void)state;
	snprintf(transport, sizeof(transport), "%s", api_transport());
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
	if (helper("second-device.sh", "add")) {
		print_error("cannot add %s (%s)\n", second.name, second.addr);
		return -1;
	}
	added = true;
	if (!strcmp(transport, "iwarp")) {
		if (helper("two-hosts.sh", "add")) {
			print_error("cannot set up the two hosts\n");
			return -1;
		}
		hosts_added = true;
	}
	return 0;
}

int multi_dev_teardown(void **state)
{
	(void)state;
	if (added && helper("second-device.sh", "del"))
		print_error("cannot remove %s\n", second.name);
	if (hosts_added && helper("two-hosts.sh", "del"))
		print_error("cannot remove the two hosts\n");
	return 0;
}

void need_devices(void)
{
	if (why_skip[0])
		TAP_SKIP("%s", why_skip);
}

void need_two_hosts(void)
{
	need_devices();
	if (!hosts_added)
		TAP_SKIP("iwarp only: rxe's rdma_cm does not cross network "
			 "namespaces");
}

/* This process into network namespace ns (made by ip netns add). */
void enter(const char *ns)
{
	char path[128];
	int fd;

	if (!ns)
		return;
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	API_CHECK_MSG(fd >= 0 && !setns(fd, CLONE_NEWNET),
		      "cannot enter network namespace %s", ns);
	close(fd);
}

void md_meet(struct api_peer *p, const char *addr, const char *server_ns,
	     const char *client_ns)
{
	enter(p->is_server ? server_ns : client_ns);
	if (p->is_server) {
		api_server_listen(p, addr);
		api_server_accept_all(p);
	} else {
		api_client_connect(p, addr);
	}
}

void md_listen(struct api_peer *p, const char *addr)
{
	api_server_listen(p, addr);
	api_put_u64(p, 0, (uint64_t)rmca_listener_port(p->l));
}

void md_run(void (*server)(struct api_peer *),
	    void (*client)(struct api_peer *), const void *arg)
{
	struct api_test t = {.server = server,
			     .client = client,
			     .manual = true,
			     .arg = (void *)arg};

	api_run(&t);
}
