/* SPDX-License-Identifier: BSD-3-Clause */
/* Two devices per host, and two hosts, for the multi-device VM tests. */
#ifndef RMCA_TEST_MULTI_DEV_H
#define RMCA_TEST_MULTI_DEV_H

#include <stdbool.h>

struct dev {
	const char *name, *addr;
};

/* From RMCA_transports (ib or iwarp); the device each host has from the
 * start and the one the setup adds; whether the two hosts are up. */
extern char transport[16];
extern struct dev first, second;
extern bool hosts_added;

/* cmocka group setup and teardown: add, then remove, the second device
 * (and on iwarp the two hosts). Outside the guest nothing is added and
 * need_devices() skips. */
int multi_dev_setup(void **state);
int multi_dev_teardown(void **state);
void need_devices(void);

/* need_devices(), and skips unless the two hosts are up (iwarp only). */
void need_two_hosts(void);

/* This process into network namespace ns (made by ip netns add); NULL
 * stays. */
void enter(const char *ns);

struct api_peer;

/* Each side into its namespace, then the listener at addr accepts the
 * client, or the client connects to it: p->ep is the endpoint. */
void md_meet(struct api_peer *p, const char *addr, const char *server_ns,
	     const char *client_ns);
/* A listener at addr whose port the client reads (api_client_read_port),
 * without accepting. */
void md_listen(struct api_peer *p, const char *addr);
/* One server and one client set up by hand (manual), given arg. */
void md_run(void (*server)(struct api_peer *),
	    void (*client)(struct api_peer *), const void *arg);

#endif
