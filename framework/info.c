// SPDX-License-Identifier: BSD-3-Clause
/*
 * Introspection (rmca/info.h): what the context found, as plain strings for
 * rmca_info and for middleware that wants to show it.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca/info.h>

#include "internal.h"

#ifdef HAVE_VERBS
#define RMCA_INFO_VERBS "yes"
#define RMCA_INFO_BUILT "tcp,shm,ib,iwarp"
#else
#define RMCA_INFO_VERBS "no"
#define RMCA_INFO_BUILT "tcp,shm"
#endif

/*
 * Some answers are composed ("0..100", "a|b|c", an error with its value) and
 * the struct rmca_info_* hand out bare pointers, so composed strings are
 * interned here: identical strings share one copy, the set stays as small as
 * the number of distinct parameter definitions, and every pointer handed out
 * stays valid until the process exits, beyond any context.
 */
struct rmca_interned {
	struct rmca_interned *next;
	char s[];
};

static struct rmca_interned *rmca_interned;
static pthread_mutex_t rmca_intern_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *rmca_intern(const char *s)
{
	struct rmca_interned *it;
	size_t len = strlen(s);

	pthread_mutex_lock(&rmca_intern_lock);
	for (it = rmca_interned; it; it = it->next)
		if (!strcmp(it->s, s))
			goto out;
	it = malloc(sizeof(*it) + len + 1);
	if (it) {
		memcpy(it->s, s, len + 1);
		it->next = rmca_interned;
		rmca_interned = it;
	}
out:
	pthread_mutex_unlock(&rmca_intern_lock);
	return it ? it->s : NULL;
}

static const char *rmca_intern_printf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static const char *rmca_intern_printf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return rmca_intern(buf);
}

__attribute__((destructor)) static void rmca_intern_free(void)
{
	while (rmca_interned) {
		struct rmca_interned *it = rmca_interned;

		rmca_interned = it->next;
		free(it);
	}
}

static const struct rmca_comp *
rmca_info_comp_of(const struct rmca_context *ctx,
		  const struct rmca_component_entry *e)
{
	for (size_t i = 0; i < ctx->ncomps; i++)
		if (ctx->comps[i].entry == e)
			return &ctx->comps[i];
	return NULL;
}

const char *rmca_info_component_why_none(rmca_context_t *ctx, int i)
{
	const struct rmca_comp *c;

	if (!ctx || i < 0 || (size_t)i >= ctx->reg.n ||
	    !ctx->reg.entries[i].comp)
		return NULL;
	c = rmca_info_comp_of(ctx, &ctx->reg.entries[i]);
	if (!c || !c->enabled || c->open_status || c->nmodules ||
	    !c->why_none[0])
		return NULL;
	return c->why_none;
}

int rmca_info_component(rmca_context_t *ctx, int i,
			struct rmca_info_component *out)
{
	const struct rmca_component_entry *e;
	const struct rmca_comp *c;

	if (!ctx || !out || i < 0)
		return RMCA_ERR_INVALID;
	if ((size_t)i >= ctx->reg.n)
		return RMCA_ERR_NOT_FOUND;

	e = &ctx->reg.entries[i];
	memset(out, 0, sizeof(*out));
	out->path = e->path;
	out->error = e->error;
	if (!e->comp)
		return 0;

	out->name = e->comp->name;
	out->version = e->comp->version;
	out->description = e->comp->description;
	out->priority = e->comp->priority;
	c = rmca_info_comp_of(ctx, e);
	if (c) {
		out->priority = c->priority;
		out->enabled = c->enabled;
		out->nmodules = c->nmodules;
		if (c->open_status < 0)
			out->error = rmca_strerror(c->open_status);
	}
	return 0;
}

int rmca_info_module(rmca_context_t *ctx, int i, struct rmca_info_module *out)
{
	const struct rmca_mod *mod;

	if (!ctx || !out || i < 0)
		return RMCA_ERR_INVALID;
	if ((size_t)i >= ctx->nmods)
		return RMCA_ERR_NOT_FOUND;

	mod = &ctx->mods[i];
	memset(out, 0, sizeof(*out));
	out->component = mod->comp->comp->name;
	out->device = mod->m->device;
	out->detail = mod->m->detail;
	out->caps = mod->caps;
	out->caps_probed = mod->m->caps;
	out->priority = mod->comp->priority;
	return 0;
}

const char *rmca_info_cap_name(uint32_t bit)
{
	switch (bit) {
	case RMCA_CAP_ATOMIC:
		return "atomic";
	case RMCA_CAP_MASKED_ATOMIC:
		return "masked_atomic";
	case RMCA_CAP_SEND_INV:
		return "send_inv";
	case RMCA_CAP_LOOPBACK:
		return "loopback";
	case RMCA_CAP_REMOTE_COMPLETION:
		return "remote_completion";
	case RMCA_CAP_ATOMIC_CPU:
		return "atomic_cpu";
	case RMCA_CAP_SHORT_READ:
		return "short_read";
	}
	return NULL;
}

static const char *rmca_info_accepted(const struct rmca_param_def *def)
{
	char buf[1024];
	size_t used = 0;

	switch (def->type) {
	case RMCA_PARAM_BOOL:
		return "yes|no";
	case RMCA_PARAM_INT:
		if (def->min < def->max)
			return rmca_intern_printf("%lld..%lld", def->min,
						  def->max);
		return "integer";
	case RMCA_PARAM_SIZE:
		return "bytes (k/m/g suffixes)";
	case RMCA_PARAM_STRING:
		return "text";
	case RMCA_PARAM_LIST:
		return "include list a,b or exclude list ^a,b";
	case RMCA_PARAM_ENUM:
		buf[0] = '\0';
		for (size_t i = 0; def->values && def->values[i]; i++) {
			int n = snprintf(buf + used, sizeof(buf) - used,
					 "%s%s", i ? "|" : "", def->values[i]);

			if (n < 0 || (size_t)n >= sizeof(buf) - used)
				break;
			used += (size_t)n;
		}
		return rmca_intern(buf);
	}
	return "unknown";
}

/* Why the value of p did not parse, as the registry kept it. */
static const char *rmca_info_param_error(const struct rmca_param *p)
{
	if (!p->error)
		return NULL;
	return rmca_intern_printf("%s=%s (%s); the default is in force",
				  p->source == RMCA_SRC_ENV && p->source_detail ?
					  p->source_detail :
					  p->def.name,
				  p->error_text ? p->error_text : "?",
				  rmca_param_source_name(p->source));
}

int rmca_info_param(rmca_context_t *ctx, int i, struct rmca_info_param *out)
{
	const struct rmca_param *p;

	if (!ctx || !out || i < 0)
		return RMCA_ERR_INVALID;
	p = rmca_params_at(ctx->params, (size_t)i);
	if (!p)
		return RMCA_ERR_NOT_FOUND;

	memset(out, 0, sizeof(*out));
	out->name = p->def.name;
	out->owner = p->owner;
	out->type = rmca_param_type_name(p->def.type);
	out->value = p->text;
	out->def = rmca_param_default_text(&p->def);
	out->source = rmca_param_source_name(p->source);
	out->source_detail = p->source_detail;
	out->help = p->def.help ? p->def.help : "";
	out->accepted = rmca_info_accepted(&p->def);
	out->error = rmca_info_param_error(p);
	return 0;
}

const char *rmca_info_build(void)
{
	return "version=" PACKAGE_VERSION "\n"
	       "prefix=" RMCA_PREFIX "\n"
	       "pkglibdir=" RMCA_PKGLIBDIR "\n"
	       "sysconfdir=" RMCA_SYSCONFDIR "\n"
	       "verbs=" RMCA_INFO_VERBS "\n"
	       "components_built=" RMCA_INFO_BUILT "\n";
}
