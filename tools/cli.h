/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every rmca tool does the same way on its command line: --version,
 * one-line errors for bad values with a hint, sizes with suffixes.
 * Internal to tools/; not installed.
 */
#ifndef RMCA_TOOLS_CLI_H
#define RMCA_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

/* Exit status of every tool for a bad command line. */
#define CLI_USAGE 2

/* Print "PROG (rmca) VERSION" and the library's version when it differs. */
void cli_version(const char *prog);

/*
 * "PROG: OPTION VALUE: WHY" and "Try 'PROG --help' for more information."
 * on stderr; returns CLI_USAGE so a caller can `return cli_bad(...)`.
 */
int cli_bad(const char *prog, const char *option, const char *value,
	    const char *why);

/* Only the hint line: getopt has already said what was wrong. */
int cli_hint(const char *prog);

/*
 * A byte count: decimal (or 0x hex) with an optional binary suffix
 * k, m, g, t (any case, optionally followed by "b" or "ib": 4k, 4KiB, 1M).
 * 0 on success; otherwise -1 and *why says what is accepted.
 */
int cli_size(const char *s, uint64_t *out, const char **why);

/* A whole number in [min, max] (0 <= min), no suffix; as cli_size. */
int cli_long(const char *s, long min, long max, long *out, const char **why);

#endif
