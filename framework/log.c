/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

int rmca_log_verbose;

void rmca_vlog(int level, const char *who, const char *fmt, va_list ap)
{
	char small[512];
	char *buf = small;
	size_t size = sizeof(small);
	size_t pre, len;
	va_list aq;
	int n;

	if (level > rmca_log_verbose)
		return;

	/*
	 * The whole line is built first and written with one call, so lines
	 * from several processes sharing a terminal do not interleave.
	 */
	for (;;) {
		n = snprintf(buf, size, "rmca: %s%s", who ? who : "",
			     who ? ": " : "");
		pre = n < 0 ? 0 : (size_t)n;
		if (pre < size) {
			va_copy(aq, ap);
			n = vsnprintf(buf + pre, size - pre, fmt, aq);
			va_end(aq);
			if (n < 0)
				n = 0;
			len = pre + (size_t)n;
			/* Room for the text, a newline and the NUL. */
			if (len + 2 <= size)
				break;
		} else {
			len = pre + strlen(fmt);
		}
		if (buf != small)
			free(buf);
		size = len + 2;
		buf = malloc(size);
		if (!buf) {
			/* Out of memory: the truncated line beats no line. */
			buf = small;
			size = sizeof(small);
			len = strnlen(small, size - 2);
			break;
		}
	}

	if (len == 0 || buf[len - 1] != '\n')
		buf[len++] = '\n';
	buf[len] = '\0';
	fwrite(buf, 1, len, stderr);
	if (buf != small)
		free(buf);
}

void rmca_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rmca_vlog(level, NULL, fmt, ap);
	va_end(ap);
}
