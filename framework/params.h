/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Typed parameters. Sources, strongest first: environment RMCA_<name>, the
 * file named by RMCA_param_file, $XDG_CONFIG_HOME/rmca/params.conf (or
 * ~/.config/rmca/params.conf), $(sysconfdir)/rmca/params.conf, the default.
 *
 * A file holds "name = value" lines; '#' starts a comment; names may carry
 * the RMCA_ prefix or not.
 */
#ifndef RMCA_PARAMS_H
#define RMCA_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include <rmca/component.h>

enum rmca_param_source {
	RMCA_SRC_DEFAULT,
	RMCA_SRC_SYSTEM_FILE,
	RMCA_SRC_USER_FILE,
	RMCA_SRC_PARAM_FILE,
	RMCA_SRC_ENV,
};

struct rmca_param {
	struct rmca_param_def def; /* strings copied, owned by the registry */
	char *owner; /* "framework" or the component name */
	char *text; /* the value in force, as text */
	enum rmca_param_source source;
	char *source_detail; /* file path and line, or the variable name */
	int error; /* 0, or RMCA_ERR_INVALID when the value did not parse */
	char *error_text; /* then: "value: why", and text holds the default */
	union {
		bool b;
		long long i;
		size_t size;
		int e; /* index into def.values */
	} v;
};

struct rmca_params; /* opaque */

/* The set of sources is read once, at create. sysconfdir: directory holding
 * rmca/params.conf (NULL: skip). */
int rmca_params_create(struct rmca_params **ps, const char *sysconfdir);
void rmca_params_destroy(struct rmca_params *ps);

/*
 * Register and resolve one parameter. Returns 0, RMCA_ERR_INVALID for a bad
 * definition or a value that does not parse (the error names the parameter,
 * the value, its source and what is accepted: it is logged and kept in the
 * parameter, which then holds its default), RMCA_ERR_NO_MEMORY.
 * Registering a name twice with the same type is a no-op returning 0.
 */
int rmca_params_register(struct rmca_params *ps, const char *owner,
			 const struct rmca_param_def *def);

const struct rmca_param *rmca_params_find(const struct rmca_params *ps,
					  const char *name);
/* Iterate in registration order; NULL past the end. */
const struct rmca_param *rmca_params_at(const struct rmca_params *ps, size_t i);

/*
 * Warn once (per params object) for every RMCA_* environment variable and
 * file entry that names no registered parameter, with the closest known
 * name ("did you mean RMCA_ib_priority?"). Call after every registration.
 */
void rmca_params_check_unknown(struct rmca_params *ps);

/* Parse text as type of def into *p->v; 0 or RMCA_ERR_INVALID with a message
 * in err (what is accepted). Exposed for the unit tests and fuzzers. */
int rmca_param_parse(const struct rmca_param_def *def, const char *text,
		     struct rmca_param *p, char *err, size_t err_len);

/* The default as text: def->def, or the zero of the type when NULL. */
const char *rmca_param_default_text(const struct rmca_param_def *def);

const char *rmca_param_type_name(enum rmca_param_type t);
const char *rmca_param_source_name(enum rmca_param_source s);

/*
 * Include/exclude lists, Open MPI syntax: "a,b" selects a and b only;
 * "^a,b" selects everything but a and b; "" selects everything. Mixing
 * ("a,^b") is an error.
 */
int rmca_list_validate(const char *list, char *err, size_t err_len);
/* 1 if name is selected; a list that does not validate selects nothing. */
int rmca_list_selects(const char *list, const char *name);

/*
 * Every name of list (syntax as above, already validated) must be one of
 * known[0..nknown): a list that names nothing that exists selects by
 * mistake. RMCA_ERR_INVALID for the first unknown name, err saying "no
 * WHAT 'name'", the closest known name ("did you mean"; a case-only
 * difference is called out, names being case-sensitive) and every known
 * name; else 0.
 */
int rmca_list_check_names(const char *list, const char *what,
			  const char *const *known, size_t nknown, char *err,
			  size_t err_len);

/* Format into err (if any): the "what is accepted" messages. */
void rmca_set_err(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Levenshtein distance, for the "did you mean" hints. */
size_t rmca_edit_distance(const char *a, const char *b);

#endif
