/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdarg.h>
#include <time.h>

#include "job_util.h"

FILE *out;
int failures;

void verdict(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		fprintf(out, "ok %s\n", name);
	} else {
		failures++;
		fprintf(out, "not ok %s: ", name);
		va_start(ap, fmt);
		vfprintf(out, fmt, ap);
		va_end(ap);
		fprintf(out, "\n");
	}
	fflush(out);
}

