/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A core for one real shm module, played by a test: it records the fds the
 * module watches (the test calls their callbacks itself), completes a
 * request by counting it, and lets the test act from inside a completion
 * (the peer's move at the worst moment). Parameters are all off: shm_cma
 * is no, so every byte goes through the rings.
 */
#ifndef RMCA_TEST_SHM_FAKE_CORE_H
#define RMCA_TEST_SHM_FAKE_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "shm.h"

#define SHM_FAKE_MAX_FDS 8

struct shm_fake_fd {
	int fd;
	uint32_t events;
	rmca_fd_cb cb;
	void *arg;
};

/* The fds the module watches; a free slot has no cb. */
extern struct shm_fake_fd shm_fake_fds[SHM_FAKE_MAX_FDS];

/* A request of the fake core: how it completed. */
struct treq {
	int done;
	int status;
	size_t len;
	char buf[64];
	_Alignas(RMCA_REQ_ALIGN) char mine[RMCA_COMPONENT_REQ_MAX];
};

/* Called inside the module's completion of r: the peer's move. */
extern void (*shm_fake_on_complete)(struct treq *r);

/* A module made on the fake core, its fd table emptied first. */
struct shm_module *shm_fake_module(void);

/* A connection of m made from parts (its seg aside) over a fresh shared
 * segment (*seg, which the connection unmaps when it goes) and a socket
 * pair (sv[0] its, sv[1] the peer's): the test plays the other side. */
struct shm_conn *shm_fake_conn(struct shm_module *m,
			       const struct shm_conn_parts *parts,
			       struct shm_seg **seg, int sv[2]);

#endif
