/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the job programs run under mpirun share (test_job, test_job_attack):
 * each rank writes one line per verdict to its own file, out, and exits 1
 * if any failed.
 */
#ifndef RMCA_TEST_JOB_UTIL_H
#define RMCA_TEST_JOB_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rmca/support/clock.h> /* rmca_now_ms */

extern FILE *out;
extern int failures;

void verdict(int ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A blocking TCP connection to 127.0.0.1:port, as an attacker that found
 * a rank's port makes it: the descriptor, or -1 when refused. */
int job_dial(int port);

/* A check that stops the rank: what follows would only add noise. */
#define REQUIRE(cond, name, ...)                                               \
	do {                                                                   \
		if (!(cond)) {                                                 \
			verdict(0, name, __VA_ARGS__);                         \
			exit(1);                                               \
		}                                                              \
	} while (0)

#endif
