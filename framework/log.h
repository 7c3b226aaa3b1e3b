/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RMCA_LOG_H
#define RMCA_LOG_H

#include <stdarg.h>

/* Messages go to stderr as "rmca: [who: ]text". Level 0 (errors, warnings)
 * is always shown; level n > 0 when RMCA_verbose >= n. */
extern int rmca_log_verbose;

void rmca_log(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rmca_vlog(int level, const char *who, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif
