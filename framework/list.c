/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Include/exclude lists in Open MPI's syntax, and the edit distance behind
 * the "did you mean" hints.
 *
 * Choices the syntax leaves open, made as Open MPI makes them (its lists go
 * through opal_argv_split, which drops empty elements):
 *  - whitespace around names is ignored ("ib, tcp" from a config file);
 *  - empty elements are ignored ("ib,,tcp," is "ib,tcp");
 *  - a list that is empty or only whitespace selects everything;
 *  - a list with separators but no name at all ("," or "^") is an error,
 *    since it most likely lost its names by mistake;
 *  - names are compared exactly (case-sensitive), and a name may hold any
 *    printable character but ',', '^' and whitespace (interface names,
 *    CIDR subnets);
 *  - '^' may only open the list and applies to all of it.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca.h>
#include <rmca/support/names.h>

#include "params.h"

void rmca_set_err(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
}

/* One element [p, ne) of the list, already trimmed and not empty. */
static int check_name(const char *p, const char *ne, int exclude, char *err,
		      size_t err_len)
{
	const char *c;

	if (*p == '^') {
		rmca_set_err(err, err_len, "%s",
			exclude ? "'^' may only start the list (it applies to "
				  "the whole list)"
				: "cannot mix include and exclude");
		return RMCA_ERR_INVALID;
	}
	for (c = p; c < ne; c++) {
		if (*c == '^' || isspace((unsigned char)*c) ||
		    !isprint((unsigned char)*c)) {
			rmca_set_err(err, err_len, "bad character in name \"%.*s\"",
				(int)(ne - p), p);
			return RMCA_ERR_INVALID;
		}
	}
	return 0;
}

/*
 * Walk the list: returns 0 and sets *exclude, or RMCA_ERR_INVALID with err
 * set. When name is not NULL, *found tells whether the list names it. The
 * names come one by one as components read them too (rmca/support/names.h).
 */
static int list_walk(const char *list, const char *name, int *exclude,
		     int *found, char *err, size_t err_len)
{
	const char *p, *q;
	size_t n, nnames = 0;

	*exclude = 0;
	if (found)
		*found = 0;
	if (rmca_names_empty(list))
		return 0;
	*exclude = rmca_names_exclude(list);
	p = rmca_names_start(list);
	while ((n = rmca_names_next(&p, &q))) {
		if (check_name(q, q + n, *exclude, err, err_len))
			return RMCA_ERR_INVALID;
		nnames++;
		if (found && name && strlen(name) == n && !memcmp(name, q, n))
			*found = 1;
	}

	if (!nnames) {
		rmca_set_err(err, err_len, "no names in the list");
		return RMCA_ERR_INVALID;
	}
	return 0;
}

int rmca_list_validate(const char *list, char *err, size_t err_len)
{
	int exclude;

	rmca_set_err(err, err_len, "%s", "");
	return list_walk(list, NULL, &exclude, NULL, err, err_len);
}

int rmca_list_selects(const char *list, const char *name)
{
	int exclude, found;

	if (!name)
		return 0;
	if (list_walk(list, name, &exclude, &found, NULL, 0))
		return 0;
	if (rmca_names_empty(list))
		return 1;
	return exclude ? !found : found;
}

size_t rmca_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t *row, i, j, prev, cur, d;

	/* One row of the classic table, indexed by position in b. */
	row = malloc((lb + 1) * sizeof(*row));
	if (!row)
		return SIZE_MAX;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		prev = row[0]; /* table[i-1][j-1] */
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			cur = row[j]; /* table[i-1][j] */
			d = prev + (a[i - 1] != b[j - 1]);
			if (cur + 1 < d)
				d = cur + 1;
			if (row[j - 1] + 1 < d)
				d = row[j - 1] + 1;
			row[j] = d;
			prev = cur;
		}
	}
	d = row[lb];
	free(row);
	return d;
}
