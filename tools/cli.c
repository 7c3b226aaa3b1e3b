// SPDX-License-Identifier: BSD-3-Clause
/*
 * Command-line conventions shared by rmca_info, rmca_perf and rmca_xfer
 * (see cli.h). Errors name the option and the value and say what would be
 * accepted, in one line, then point at --help: the usage text is for
 * --help, not for every typo.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rmca.h>

#include "cli.h"

void cli_version(const char *prog)
{
	const char *lib = rmca_version();

	printf("%s (rmca) %s\n", prog, PACKAGE_VERSION);
	if (lib && strcmp(lib, PACKAGE_VERSION))
		printf("library: librmca %s\n", lib);
}

int cli_hint(const char *prog)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
	return CLI_USAGE;
}

int cli_bad(const char *prog, const char *option, const char *value,
	    const char *why)
{
	fprintf(stderr, "%s: %s '%s': %s\n", prog, option, value, why);
	return cli_hint(prog);
}

/* Unsigned digits only: strtoull alone takes "-1", " 7" and "". */
static int parse_u64(const char *s, uint64_t *out, char **end)
{
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, end, 0);
	if (errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

int cli_size(const char *s, uint64_t *out, const char **why)
{
	static const char suffixes[] = "kmgt";
	const char *p;
	char *end;
	uint64_t v;
	unsigned shift = 0;

	*why = "not a size: give bytes, optionally with k, m, g or t "
	       "(1024-based), as in 4096, 64k, 1m";
	if (parse_u64(s, &v, &end))
		return -1;
	if (*end) {
		p = strchr(suffixes, tolower((unsigned char)*end));
		if (!p)
			return -1;
		shift = 10 * (unsigned)(p - suffixes + 1);
		end++;
		if (tolower((unsigned char)*end) == 'i')
			end++;
		if (tolower((unsigned char)*end) == 'b')
			end++;
		if (*end)
			return -1;
	}
	if (shift && v > (UINT64_MAX >> shift)) {
		*why = "too large";
		return -1;
	}
	*out = v << shift;
	return 0;
}

int cli_long(const char *s, long min, long max, long *out, const char **why)
{
	static char text[96];
	uint64_t v;
	char *end;

	snprintf(text, sizeof(text), "not a whole number from %ld to %ld", min,
		 max);
	*why = text;
	if (parse_u64(s, &v, &end) || *end || v < (uint64_t)min ||
	    v > (uint64_t)max)
		return -1;
	*out = (long)v;
	return 0;
}
