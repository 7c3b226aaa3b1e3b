/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/support/names.h - the names of an include/exclude list, one by one,
 * as the core reads a RMCA_PARAM_LIST value: "a,b" (only those) or "^a,b"
 * (all but those); whitespace around names and empty elements are ignored,
 * and '^' may only open the list. The core walks its own lists with these
 * very functions.
 *
 * Whether a list selects a name is the core's to say, with its rules for
 * empty and malformed lists: ask core->ops->list_selects. Walk the names
 * only to do something with each (check that an interface of that name
 * exists, say).
 */
#ifndef RMCA_SUPPORT_NAMES_H
#define RMCA_SUPPORT_NAMES_H

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline const char *rmca_names_skip_space_(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

/* True if list holds nothing but whitespace: as an include list it selects
 * every name, as an exclude list none. */
static inline bool rmca_names_empty(const char *list)
{
	return !list || !*rmca_names_skip_space_(list);
}

/* True if list is an exclude list ("^a,b", whitespace before '^' aside). */
static inline bool rmca_names_exclude(const char *list)
{
	return list && *rmca_names_skip_space_(list) == '^';
}

/* Where the walk over list's names starts: past a leading '^'. */
static inline const char *rmca_names_start(const char *list)
{
	const char *p = list ? rmca_names_skip_space_(list) : "";

	return *p == '^' ? p + 1 : p;
}

/*
 * The next name at *pos, trimmed: *name points at it, its length is
 * returned, and *pos moves past it. 0 at the end of the list. A name is
 * whatever lies between commas: one holding '^' or inner whitespace is
 * returned as it is (the core refuses such a list).
 */
static inline size_t rmca_names_next(const char **pos, const char **name)
{
	const char *p = *pos, *e;
	size_t n;

	while (*p) {
		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		p = rmca_names_skip_space_(p); /* stops at e at the latest */
		n = (size_t)(e - p);
		while (n && isspace((unsigned char)p[n - 1]))
			n--;
		*pos = *e ? e + 1 : e;
		if (n) {
			*name = p;
			return n;
		}
		p = *pos;
	}
	*pos = p;
	return 0;
}

/* True if list names name (exactly: case and all), a leading '^' aside.
 * Not whether the list selects it: see above. */
static inline bool rmca_names_has(const char *list, const char *name)
{
	const char *p = rmca_names_start(list), *q;
	size_t n, len = strlen(name);

	while ((n = rmca_names_next(&p, &q)))
		if (n == len && !memcmp(q, name, n))
			return true;
	return false;
}

#endif
