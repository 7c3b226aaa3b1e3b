/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Typed parameters: the sources are read once into a list of entries at
 * create; each registration then resolves its name against that list.
 *
 * Choices the header leaves open:
 *  - an environment variable is RMCA_<name>, case-sensitive; its value is
 *    taken as is (bool, int, size and enum values have surrounding
 *    whitespace ignored by rmca_param_parse);
 *  - in a file, '#' starts a comment wherever it appears, there is no
 *    quoting, the value may be empty ("tcp_if_include =") and when a file
 *    sets a name twice the later line wins;
 *  - RMCA_param_file names one file; set but empty counts as unset;
 *  - a file that cannot be read is skipped; for RMCA_param_file that is an
 *    error logged at level 0, but create still succeeds (the user learns of
 *    it without the whole library refusing to start);
 *  - a value that does not parse leaves text/v at the default but keeps the
 *    source and source_detail of the rejected value, with error set, so a
 *    tool can show where the bad value came from.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* vasprintf, environ */
#endif
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <rmca.h>

#include "log.h"
#include "params.h"

#define ENV_PREFIX     "RMCA_"
#define ENV_PREFIX_LEN (sizeof(ENV_PREFIX) - 1)
#define PARAM_FILE_VAR "RMCA_param_file"

/* One "name = value" found in a source. */
struct rmca_entry {
	char *name; /* without the RMCA_ prefix */
	char *value;
	char *detail; /* "RMCA_name" or "path:line" */
	enum rmca_param_source source;
	bool warned; /* check_unknown reported it */
};

struct rmca_params {
	struct rmca_entry *entries;
	size_t nentries, entries_cap;
	/* Pointers, so that what find() returns stays put as the set grows. */
	struct rmca_param **params;
	size_t nparams, params_cap;
};


static char *xasprintf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

static bool valid_name(const char *s, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

const char *rmca_param_type_name(enum rmca_param_type t)
{
	switch (t) {
	case RMCA_PARAM_BOOL:
		return "bool";
	case RMCA_PARAM_INT:
		return "int";
	case RMCA_PARAM_SIZE:
		return "size";
	case RMCA_PARAM_STRING:
		return "string";
	case RMCA_PARAM_ENUM:
		return "enum";
	case RMCA_PARAM_LIST:
		return "list";
	}
	return "unknown";
}

const char *rmca_param_source_name(enum rmca_param_source s)
{
	switch (s) {
	case RMCA_SRC_DEFAULT:
		return "default";
	case RMCA_SRC_SYSTEM_FILE:
		return "system_file";
	case RMCA_SRC_USER_FILE:
		return "user_file";
	case RMCA_SRC_PARAM_FILE:
		return "param_file";
	case RMCA_SRC_ENV:
		return "env";
	}
	return "unknown";
}

/* ---- parsing one value ---- */

/* [*b, *e) becomes text without surrounding whitespace. */
static void trim(const char *text, const char **b, const char **e)
{
	const char *s = text, *t = text + strlen(text);

	while (s < t && isspace((unsigned char)*s))
		s++;
	while (t > s && isspace((unsigned char)t[-1]))
		t--;
	*b = s;
	*e = t;
}

static bool span_eq(const char *b, const char *e, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(e - b) == n && !strncasecmp(b, word, n);
}

static int parse_bool(const char *b, const char *e, bool *out)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (span_eq(b, e, yes[i])) {
			*out = true;
			return 0;
		}
		if (span_eq(b, e, no[i])) {
			*out = false;
			return 0;
		}
	}
	return RMCA_ERR_INVALID;
}

/*
 * Decimal, or hex with 0x, with an optional sign. A leading 0 does not mean
 * octal: "010" is ten, as a user writing it most likely means.
 */
static int parse_ll(const char *b, const char *e, long long *out)
{
	char buf[80], *end;
	const char *d;
	size_t n = (size_t)(e - b);
	int base = 10;

	if (!n || n >= sizeof(buf))
		return RMCA_ERR_INVALID;
	memcpy(buf, b, n);
	buf[n] = '\0';
	d = buf + (*buf == '+' || *buf == '-');
	if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))
		base = 16;
	/* strtoll would skip a second sign or inner space: refuse them. */
	if (!isxdigit((unsigned char)d[base == 16 ? 2 : 0]))
		return RMCA_ERR_INVALID;
	errno = 0;
	*out = strtoll(buf, &end, base);
	if (*end)
		return RMCA_ERR_INVALID;
	if (errno == ERANGE)
		return RMCA_ERR_NOT_FOUND; /* distinguishes "too large" */
	return 0;
}

static int parse_size(const char *b, const char *e, size_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
		{"", 0},     {"b", 0},	 {"k", 10},   {"kb", 10},  {"kib", 10},
		{"m", 20},   {"mb", 20}, {"mib", 20}, {"g", 30},   {"gb", 30},
		{"gib", 30}, {"t", 40},	 {"tb", 40},  {"tib", 40},
	};
	unsigned long long n;
	const char *s;
	char buf[32], *end;
	size_t i, len;
	int base = 10;

	/* The digits: decimal, or hex after 0x. */
	s = b;
	if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	while (s < e && (base == 16 ? isxdigit((unsigned char)*s)
				    : isdigit((unsigned char)*s)))
		s++;
	len = (size_t)(s - b);
	if (!len || (base == 16 && len == 2) || len >= sizeof(buf))
		return len >= sizeof(buf) ? RMCA_ERR_NOT_FOUND
					  : RMCA_ERR_INVALID;
	memcpy(buf, b, len);
	buf[len] = '\0';
	errno = 0;
	n = strtoull(buf, &end, base);
	if (errno == ERANGE || *end)
		return RMCA_ERR_NOT_FOUND;

	/* The unit, perhaps after a space ("64 k"). */
	while (s < e && isspace((unsigned char)*s))
		s++;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!span_eq(s, e, units[i].suffix))
			continue;
		if (n > (SIZE_MAX >> units[i].shift))
			return RMCA_ERR_NOT_FOUND;
		*out = (size_t)n << units[i].shift;
		return 0;
	}
	return RMCA_ERR_INVALID;
}

static void enum_accepted(const struct rmca_param_def *def, char *buf,
			  size_t len)
{
	size_t used = 0, i;
	int n;

	if (!len)
		return;
	buf[0] = '\0';
	for (i = 0; def->values && def->values[i]; i++) {
		n = snprintf(buf + used, len - used, "%s%s", i ? "|" : "",
			     def->values[i]);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

int rmca_param_parse(const struct rmca_param_def *def, const char *text,
		     struct rmca_param *p, char *err, size_t err_len)
{
	const char *b, *e;
	char lerr[128], accepted[256];
	long long ll;
	size_t i;
	int ret;

	rmca_set_err(err, err_len, "%s", "");
	if (!def || !p)
		return RMCA_ERR_INVALID;
	if (!text)
		text = "";
	trim(text, &b, &e);

	switch (def->type) {
	case RMCA_PARAM_BOOL:
		if (!parse_bool(b, e, &p->v.b))
			return 0;
		rmca_set_err(err, err_len,
			"not a boolean; accepted: "
			"1|0|yes|no|true|false|on|off");
		return RMCA_ERR_INVALID;

	case RMCA_PARAM_INT:
		if (def->min < def->max)
			snprintf(accepted, sizeof(accepted),
				 "integer in %lld..%lld", def->min, def->max);
		else
			snprintf(accepted, sizeof(accepted), "integer");
		ret = parse_ll(b, e, &ll);
		if (ret == RMCA_ERR_INVALID) {
			rmca_set_err(err, err_len, "not an integer; accepted: %s",
				accepted);
			return RMCA_ERR_INVALID;
		}
		if (ret ||
		    (def->min < def->max && (ll < def->min || ll > def->max))) {
			rmca_set_err(err, err_len, "out of range; accepted: %s",
				accepted);
			return RMCA_ERR_INVALID;
		}
		p->v.i = ll;
		return 0;

	case RMCA_PARAM_SIZE:
		ret = parse_size(b, e, &p->v.size);
		if (!ret)
			return 0;
		rmca_set_err(err, err_len,
			"%s; accepted: a byte count, optionally with a k, m, g "
			"or t suffix (1k = 1024)",
			ret == RMCA_ERR_INVALID ? "not a size" : "too large");
		return RMCA_ERR_INVALID;

	case RMCA_PARAM_ENUM:
		for (i = 0; def->values && def->values[i]; i++) {
			if ((size_t)(e - b) == strlen(def->values[i]) &&
			    !memcmp(b, def->values[i], (size_t)(e - b))) {
				if (i > INT_MAX)
					break;
				p->v.e = (int)i;
				return 0;
			}
		}
		enum_accepted(def, accepted, sizeof(accepted));
		rmca_set_err(err, err_len, "not an accepted value; accepted: %s",
			accepted);
		return RMCA_ERR_INVALID;

	case RMCA_PARAM_LIST:
		if (!rmca_list_validate(text, lerr, sizeof(lerr)))
			return 0;
		rmca_set_err(err, err_len,
			"%s; accepted: names separated by commas (only those), "
			"or '^' then names (all but those)",
			lerr);
		return RMCA_ERR_INVALID;

	case RMCA_PARAM_STRING:
		return 0;
	}
	rmca_set_err(err, err_len, "unknown parameter type %d", (int)def->type);
	return RMCA_ERR_INVALID;
}

/* ---- reading the sources ---- */

static int add_entry(struct rmca_params *ps, const char *name, size_t name_len,
		     const char *value, size_t value_len,
		     enum rmca_param_source source, char *detail)
{
	struct rmca_entry *en;

	if (!detail)
		return RMCA_ERR_NO_MEMORY;
	if (ps->nentries == ps->entries_cap) {
		size_t cap = ps->entries_cap ? 2 * ps->entries_cap : 16;
		struct rmca_entry *n = realloc(ps->entries, cap * sizeof(*n));

		if (!n) {
			free(detail);
			return RMCA_ERR_NO_MEMORY;
		}
		ps->entries = n;
		ps->entries_cap = cap;
	}
	en = &ps->entries[ps->nentries];
	memset(en, 0, sizeof(*en));
	en->name = strndup(name, name_len);
	en->value = strndup(value, value_len);
	en->detail = detail;
	en->source = source;
	if (!en->name || !en->value) {
		free(en->name);
		free(en->value);
		free(en->detail);
		return RMCA_ERR_NO_MEMORY;
	}
	ps->nentries++;
	return 0;
}

static int read_env(struct rmca_params *ps)
{
	char **env;
	int ret;

	for (env = environ; env && *env; env++) {
		const char *var = *env, *eq = strchr(var, '=');

		if (!eq || strncmp(var, ENV_PREFIX, ENV_PREFIX_LEN))
			continue;
		ret = add_entry(ps, var + ENV_PREFIX_LEN,
				(size_t)(eq - var) - ENV_PREFIX_LEN, eq + 1,
				strlen(eq + 1), RMCA_SRC_ENV,
				strndup(var, (size_t)(eq - var)));
		if (ret)
			return ret;
	}
	return 0;
}

/* One line of a file; returns 0 for a line taken or skipped. */
static int read_line(struct rmca_params *ps, const char *path, unsigned lineno,
		     char *line, size_t len, enum rmca_param_source source)
{
	char *hash, *eq, *nb, *ne, *vb, *ve;

	if (strlen(line) != len) {
		rmca_log(0, "%s:%u: NUL byte in line; line skipped", path,
			 lineno);
		return 0;
	}
	hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	nb = line;
	while (isspace((unsigned char)*nb))
		nb++;
	if (!*nb)
		return 0;

	eq = strchr(nb, '=');
	if (!eq) {
		rmca_log(0, "%s:%u: expected 'name = value'; line skipped",
			 path, lineno);
		return 0;
	}
	ne = eq;
	while (ne > nb && isspace((unsigned char)ne[-1]))
		ne--;
	if ((size_t)(ne - nb) >= ENV_PREFIX_LEN &&
	    !strncmp(nb, ENV_PREFIX, ENV_PREFIX_LEN))
		nb += ENV_PREFIX_LEN;
	if (!valid_name(nb, (size_t)(ne - nb))) {
		rmca_log(0,
			 "%s:%u: bad parameter name \"%.*s\" (letters, digits "
			 "and '_' only); line skipped",
			 path, lineno, (int)(ne - nb), nb);
		return 0;
	}
	vb = eq + 1;
	ve = vb + strlen(vb);
	while (vb < ve && isspace((unsigned char)*vb))
		vb++;
	while (ve > vb && isspace((unsigned char)ve[-1]))
		ve--;
	return add_entry(ps, nb, (size_t)(ne - nb), vb, (size_t)(ve - vb),
			 source, xasprintf("%s:%u", path, lineno));
}

/* required: a file that cannot be opened is an error, not silence. */
static int read_file(struct rmca_params *ps, const char *path,
		     enum rmca_param_source source, bool required)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	ssize_t len;
	FILE *f;
	int ret = 0;

	f = fopen(path, "re");
	if (!f) {
		if (required || errno != ENOENT)
			rmca_log(0, "cannot read parameter file %s (%s): %s",
				 path,
				 required ? PARAM_FILE_VAR
					  : rmca_param_source_name(source),
				 strerror(errno));
		return 0;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		ret = read_line(ps, path, lineno, line, (size_t)len, source);
		if (ret)
			break;
	}
	if (!ret && ferror(f))
		rmca_log(0, "error reading parameter file %s: %s", path,
			 strerror(errno));
	free(line);
	fclose(f);
	return ret;
}

static int read_sources(struct rmca_params *ps, const char *sysconfdir)
{
	const char *s, *home;
	char *path;
	int ret;

	ret = read_env(ps);
	if (ret)
		return ret;

	s = getenv(PARAM_FILE_VAR);
	if (s && *s) {
		ret = read_file(ps, s, RMCA_SRC_PARAM_FILE, true);
		if (ret)
			return ret;
	}

	/* XDG base directory rules: a relative XDG_CONFIG_HOME is ignored. */
	s = getenv("XDG_CONFIG_HOME");
	home = getenv("HOME");
	path = NULL;
	if (s && *s == '/')
		path = xasprintf("%s/rmca/params.conf", s);
	else if (home && *home)
		path = xasprintf("%s/.config/rmca/params.conf", home);
	else
		path = strdup(""); /* no user file */
	if (!path)
		return RMCA_ERR_NO_MEMORY;
	if (*path)
		ret = read_file(ps, path, RMCA_SRC_USER_FILE, false);
	free(path);
	if (ret)
		return ret;

	if (sysconfdir) {
		path = xasprintf("%s/rmca/params.conf", sysconfdir);
		if (!path)
			return RMCA_ERR_NO_MEMORY;
		ret = read_file(ps, path, RMCA_SRC_SYSTEM_FILE, false);
		free(path);
	}
	return ret;
}

int rmca_params_create(struct rmca_params **ps, const char *sysconfdir)
{
	struct rmca_params *n;
	int ret;

	if (!ps)
		return RMCA_ERR_INVALID;
	*ps = NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return RMCA_ERR_NO_MEMORY;
	ret = read_sources(n, sysconfdir);
	if (ret) {
		rmca_params_destroy(n);
		return ret;
	}
	*ps = n;
	return 0;
}

static void param_free(struct rmca_param *p)
{
	size_t i;

	if (!p)
		return;
	free((char *)p->def.name);
	free((char *)p->def.def);
	free((char *)p->def.help);
	if (p->def.values) {
		for (i = 0; p->def.values[i]; i++)
			free((char *)p->def.values[i]);
		free((char **)p->def.values);
	}
	free(p->owner);
	free(p->text);
	free(p->source_detail);
	free(p->error_text);
	free(p);
}

void rmca_params_destroy(struct rmca_params *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->nentries; i++) {
		free(ps->entries[i].name);
		free(ps->entries[i].value);
		free(ps->entries[i].detail);
	}
	free(ps->entries);
	for (i = 0; i < ps->nparams; i++)
		param_free(ps->params[i]);
	free(ps->params);
	free(ps);
}

/* ---- registration ---- */

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*oom = true;
	return d;
}

static struct rmca_param *param_copy(const char *owner,
				     const struct rmca_param_def *def)
{
	struct rmca_param *p = calloc(1, sizeof(*p));
	bool oom = false;
	size_t n, i;
	char **values;

	if (!p)
		return NULL;
	p->def = *def;
	p->def.name = dup_or_null(def->name, &oom);
	p->def.def = dup_or_null(def->def, &oom);
	p->def.help = dup_or_null(def->help, &oom);
	p->def.values = NULL;
	p->owner = dup_or_null(owner ? owner : "framework", &oom);
	if (def->values) {
		for (n = 0; def->values[n]; n++)
			;
		values = calloc(n + 1, sizeof(*values));
		if (values) {
			for (i = 0; i < n; i++)
				values[i] = dup_or_null(def->values[i], &oom);
		} else {
			oom = true;
		}
		p->def.values = (const char *const *)values;
	}
	if (oom) {
		param_free(p);
		return NULL;
	}
	return p;
}

/* The default as text: def->def, or the zero of the type when NULL. */
const char *rmca_param_default_text(const struct rmca_param_def *def)
{
	if (def->def)
		return def->def;
	switch (def->type) {
	case RMCA_PARAM_BOOL:
		return "false";
	case RMCA_PARAM_INT:
	case RMCA_PARAM_SIZE:
		return "0";
	case RMCA_PARAM_ENUM:
		return def->values && def->values[0] ? def->values[0] : "";
	default:
		return "";
	}
}

static int check_def(const struct rmca_param_def *def, char *why,
		     size_t why_len)
{
	struct rmca_param scratch;
	char err[256];

	if (!def->name || !valid_name(def->name, strlen(def->name))) {
		rmca_set_err(why, why_len,
			"the name must be letters, digits and '_'");
		return RMCA_ERR_INVALID;
	}
	switch (def->type) {
	case RMCA_PARAM_BOOL:
	case RMCA_PARAM_SIZE:
	case RMCA_PARAM_STRING:
	case RMCA_PARAM_LIST:
		break;
	case RMCA_PARAM_INT:
		if (def->min > def->max) {
			rmca_set_err(why, why_len, "min %lld > max %lld", def->min,
				def->max);
			return RMCA_ERR_INVALID;
		}
		break;
	case RMCA_PARAM_ENUM:
		if (!def->values || !def->values[0]) {
			rmca_set_err(why, why_len, "an enum needs values");
			return RMCA_ERR_INVALID;
		}
		break;
	default:
		rmca_set_err(why, why_len, "unknown type %d", (int)def->type);
		return RMCA_ERR_INVALID;
	}
	if (rmca_param_parse(def, rmca_param_default_text(def), &scratch, err,
			     sizeof(err))) {
		rmca_set_err(why, why_len, "default \"%s\": %s", rmca_param_default_text(def),
			err);
		return RMCA_ERR_INVALID;
	}
	return 0;
}

/* The strongest entry for name: higher source, then the later line. */
static const struct rmca_entry *resolve(const struct rmca_params *ps,
					const char *name)
{
	const struct rmca_entry *best = NULL;
	size_t i;

	for (i = 0; i < ps->nentries; i++) {
		const struct rmca_entry *en = &ps->entries[i];

		if (strcmp(en->name, name))
			continue;
		if (!best || en->source >= best->source)
			best = en;
	}
	return best;
}

static int params_push(struct rmca_params *ps, struct rmca_param *p)
{
	if (ps->nparams == ps->params_cap) {
		size_t cap = ps->params_cap ? 2 * ps->params_cap : 32;
		struct rmca_param **n = realloc(ps->params, cap * sizeof(*n));

		if (!n)
			return RMCA_ERR_NO_MEMORY;
		ps->params = n;
		ps->params_cap = cap;
	}
	ps->params[ps->nparams++] = p;
	return 0;
}

int rmca_params_register(struct rmca_params *ps, const char *owner,
			 const struct rmca_param_def *def)
{
	const struct rmca_param *old;
	const struct rmca_entry *en;
	struct rmca_param *p;
	char err[512];
	int ret;

	if (!ps || !def)
		return RMCA_ERR_INVALID;
	if (check_def(def, err, sizeof(err))) {
		rmca_log(0, "parameter %s%s of %s: bad definition: %s",
			 ENV_PREFIX, def->name ? def->name : "(null)",
			 owner ? owner : "framework", err);
		return RMCA_ERR_INVALID;
	}
	old = rmca_params_find(ps, def->name);
	if (old) {
		if (old->def.type == def->type)
			return 0;
		rmca_log(0,
			 "parameter %s%s registered by %s as %s, and again by "
			 "%s as %s",
			 ENV_PREFIX, def->name, old->owner,
			 rmca_param_type_name(old->def.type),
			 owner ? owner : "framework",
			 rmca_param_type_name(def->type));
		return RMCA_ERR_INVALID;
	}

	p = param_copy(owner, def);
	if (!p)
		return RMCA_ERR_NO_MEMORY;

	en = resolve(ps, def->name);
	if (en) {
		p->source = en->source;
		p->source_detail = strdup(en->detail);
		p->text = strdup(en->value);
	} else {
		p->source = RMCA_SRC_DEFAULT;
		p->source_detail = strdup("default");
		p->text = strdup(rmca_param_default_text(def));
	}
	if (!p->source_detail || !p->text)
		goto oom;

	ret = rmca_param_parse(&p->def, p->text, p, err, sizeof(err));
	if (ret) {
		/* Only a source can get here: check_def vetted the default. */
		rmca_log(0, "%s%s=%s (%s): %s", ENV_PREFIX, def->name, p->text,
			 p->source == RMCA_SRC_ENV ? "environment"
						   : p->source_detail,
			 err);
		p->error = RMCA_ERR_INVALID;
		/* Keep what was refused and why, for rmca_info. */
		p->error_text = malloc(strlen(p->text) + strlen(err) + 3);
		if (!p->error_text)
			goto oom;
		sprintf(p->error_text, "%s: %s", p->text, err);
		free(p->text);
		p->text = strdup(rmca_param_default_text(def));
		if (!p->text)
			goto oom;
		rmca_param_parse(&p->def, p->text, p, NULL, 0);
	}
	if (params_push(ps, p))
		goto oom;
	return p->error;

oom:
	param_free(p);
	return RMCA_ERR_NO_MEMORY;
}

const struct rmca_param *rmca_params_find(const struct rmca_params *ps,
					  const char *name)
{
	size_t i;

	if (!ps || !name)
		return NULL;
	for (i = 0; i < ps->nparams; i++)
		if (!strcmp(ps->params[i]->def.name, name))
			return ps->params[i];
	return NULL;
}

const struct rmca_param *rmca_params_at(const struct rmca_params *ps, size_t i)
{
	if (!ps || i >= ps->nparams)
		return NULL;
	return ps->params[i];
}

/* ---- unknown names ---- */

/*
 * The closest to name of n candidates (name_at(arg, i)), if close enough to
 * be a typo: a case-only difference, or an edit distance of at most
 * max(2, len / 3).
 */
static const char *closest_of(const char *name, size_t n,
			      const char *(*name_at)(const void *, size_t),
			      const void *arg)
{
	size_t len = strlen(name), limit = len / 3 > 2 ? len / 3 : 2;
	size_t i, d, best_d = SIZE_MAX;
	const char *best = NULL;

	for (i = 0; i < n; i++) {
		const char *cand = name_at(arg, i);

		d = strcasecmp(cand, name) ? rmca_edit_distance(cand, name) : 0;
		if (d < best_d) {
			best_d = d;
			best = cand;
		}
	}
	return best_d <= limit ? best : NULL;
}

static const char *param_name_at(const void *arg, size_t i)
{
	return ((const struct rmca_params *)arg)->params[i]->def.name;
}

static const char *closest(const struct rmca_params *ps, const char *name)
{
	return closest_of(name, ps->nparams, param_name_at, ps);
}

static const char *known_name_at(const void *arg, size_t i)
{
	return ((const char *const *)arg)[i];
}

int rmca_list_check_names(const char *list, const char *what,
			  const char *const *known, size_t nknown, char *err,
			  size_t err_len)
{
	char name[256], there[512] = "";
	const char *p = list, *e, *hint;
	size_t i, n, used = 0;

	if (!list)
		return 0;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '^')
		p++;
	for (; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		while (p < e && isspace((unsigned char)*p))
			p++;
		n = (size_t)(e - p);
		while (n && isspace((unsigned char)p[n - 1]))
			n--;
		if (!n)
			continue;
		for (i = 0; i < nknown; i++)
			if (strlen(known[i]) == n && !memcmp(known[i], p, n))
				break;
		if (i < nknown)
			continue;

		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		for (i = 0; i < nknown && used < sizeof(there); i++)
			used += (size_t)snprintf(there + used,
						 sizeof(there) - used, "%s%s",
						 i ? ", " : "", known[i]);
		hint = closest_of(name, nknown, known_name_at, known);
		if (hint && !strcasecmp(hint, name))
			rmca_set_err(err, err_len,
				     "no %s '%s' (did you mean '%s'? names are "
				     "case-sensitive); there are: %s",
				     what, name, hint, there);
		else if (hint)
			rmca_set_err(err, err_len,
				     "no %s '%s' (did you mean '%s'?); there "
				     "are: %s",
				     what, name, hint, there);
		else
			rmca_set_err(err, err_len, "no %s '%s'; there are: %s",
				     what, name, nknown ? there : "none");
		return RMCA_ERR_INVALID;
	}
	return 0;
}

void rmca_params_check_unknown(struct rmca_params *ps)
{
	size_t i, j;

	if (!ps)
		return;
	for (i = 0; i < ps->nentries; i++) {
		struct rmca_entry *en = &ps->entries[i];
		const char *hint;

		if (en->warned || rmca_params_find(ps, en->name))
			continue;
		if (en->source == RMCA_SRC_ENV &&
		    !strcmp(en->detail, PARAM_FILE_VAR))
			continue;
		hint = closest(ps, en->name);
		if (hint)
			rmca_log(0,
				 "unknown parameter %s%s (%s); did you mean "
				 "%s%s?",
				 ENV_PREFIX, en->name,
				 en->source == RMCA_SRC_ENV ? "environment"
							    : en->detail,
				 ENV_PREFIX, hint);
		else
			rmca_log(0, "unknown parameter %s%s (%s)", ENV_PREFIX,
				 en->name,
				 en->source == RMCA_SRC_ENV ? "environment"
							    : en->detail);
		/* Once per name, wherever else it appears. */
		for (j = i; j < ps->nentries; j++)
			if (!strcmp(ps->entries[j].name, en->name))
				ps->entries[j].warned = true;
	}
}
