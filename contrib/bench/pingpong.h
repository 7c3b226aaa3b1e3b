/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pingpong.h - what shm_pingpong.c and tcp_pingpong.c both need: two
 * contexts of this process connected to each other (the accept runs in a
 * thread, since rmca_connect waits for it), a clock, and an exit that says
 * why. Each program defines PINGPONG_NAME before including it.
 */
#ifndef RMCA_BENCH_PINGPONG_H
#define RMCA_BENCH_PINGPONG_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rmca.h>

static rmca_listener_t *pingpong_listener;
static rmca_ep_t *pingpong_accepted;

static void die(const char *what, int rc)
{
	fprintf(stderr, PINGPONG_NAME ": %s: %s\n", what, rmca_strerror(rc));
	exit(1);
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *pingpong_accept(void *arg)
{
	int rc = rmca_accept(pingpong_listener, 10000, &pingpong_accepted);

	(void)arg;
	if (rc)
		die("accept", rc);
	return NULL;
}

/* The address both contexts use: PINGPONG_ADDR (an RDMA device's, say,
 * with RMCA_transports naming its component), or loopback. */
static const char *pingpong_addr(void)
{
	const char *a = getenv("PINGPONG_ADDR");

	return a && *a ? a : "127.0.0.1";
}

/* Contexts *a and *b, *ea a's end of their connection, *eb b's. */
static void pingpong_pair(rmca_context_t **a, rmca_context_t **b,
			  rmca_ep_t **ea, rmca_ep_t **eb)
{
	char hp[64];
	pthread_t t;
	int rc;

	if ((rc = rmca_init(a)) || (rc = rmca_init(b)))
		die("init", rc);
	snprintf(hp, sizeof(hp), "%s:0", pingpong_addr());
	if ((rc = rmca_listen(*a, hp, &pingpong_listener)))
		die("listen", rc);
	snprintf(hp, sizeof(hp), "%s:%d", pingpong_addr(),
		 rmca_listener_port(pingpong_listener));
	if (pthread_create(&t, NULL, pingpong_accept, NULL))
		die("accept thread", RMCA_ERR_NO_MEMORY);
	if ((rc = rmca_connect(*b, hp, 10000, eb)))
		die("connect", rc);
	pthread_join(t, NULL);
	*ea = pingpong_accepted;
}

/* The pair's endpoints closed, its listener too, both contexts ended. */
static void pingpong_unpair(rmca_context_t *a, rmca_context_t *b, rmca_ep_t *ea,
			    rmca_ep_t *eb)
{
	rmca_ep_close(eb);
	rmca_ep_close(ea);
	rmca_listener_close(pingpong_listener);
	rmca_finalize(b);
	rmca_finalize(a);
}

#endif
