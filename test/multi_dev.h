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

/* This process into network namespace ns (made by ip netns add); NULL
 * stays. */
void enter(const char *ns);

#endif
