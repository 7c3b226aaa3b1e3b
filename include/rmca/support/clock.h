/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/support/clock.h - the monotonic clock, for deadlines and timers.
 *
 * Deadlines are absolute CLOCK_MONOTONIC milliseconds (rmca_now_ms() +
 * timeout); a negative deadline means none. clock_gettime goes through the
 * vDSO: reading the clock makes no system call, so a fast path may read it.
 */
#ifndef RMCA_SUPPORT_CLOCK_H
#define RMCA_SUPPORT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t rmca_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t rmca_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The deadline timeout_ms from now; a negative timeout gives none (-1). */
static inline int64_t rmca_deadline_ms(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : rmca_now_ms() + timeout_ms;
}

/*
 * Milliseconds left until deadline, as poll() takes them: 0 once it has
 * passed, -1 (wait for ever) when there is none, and at most 1000000 so
 * that the int never overflows (a caller loops on a longer wait).
 */
static inline int rmca_ms_left(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - rmca_now_ms();
	return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

#endif
