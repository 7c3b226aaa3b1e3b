// SPDX-License-Identifier: BSD-3-Clause
/*
 * rmca_info - what rmca finds on this host: build configuration, components
 * (and why some were refused), modules with their capabilities, parameters.
 * Three outputs: for people (default), --parsable (one fact per line, keys
 * as Open MPI's ompi_info --parsable), --json.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rmca.h>
#include <rmca/info.h>

#include "cli.h"

enum format { FMT_HUMAN, FMT_PARSABLE, FMT_JSON };

struct options {
	enum format format;
	const char **params; /* --param arguments */
	int nparams;
	const char *explain; /* --explain HOST:PORT */
};

struct comp_extra {
	char label[64]; /* the name, or one made from a refused file's name */
	char why[512]; /* "" when fine; an open() failure says so */
	const char *why_none; /* no module: why, as the component said */
};

/* Everything the context tells, gathered once, printed by one formatter. */
struct report {
	char *build; /* copy of rmca_info_build(), split into lines */
	const char *build_key[16];
	const char *build_val[16];
	int nbuild;
	const char *version;

	struct rmca_info_component *comps;
	struct comp_extra *extra; /* one per comps[i] */
	int ncomps;
	int label_width;
	struct rmca_info_module *mods;
	int nmods;
	struct rmca_info_param *params; /* those selected by --param */
	int nparams;
};

static const char *const format_names[] = { "human", "parsable", "json" };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rmca_info [--parsable | --json] "
		"[--param all|framework|COMPONENT|PARAMETER]...\n"
		"       rmca_info [--parsable | --json] --explain HOST:PORT\n"
		"       rmca_info -h | --help | -V | --version\n"
		"Show what rmca finds here: build, components, modules, "
		"parameters.\n"
		"\n"
		"  -p, --param WHAT  also show parameters: all, the "
		"framework's, a\n"
		"                    component's, or one (tcp_port); may be "
		"repeated.\n"
		"                    Open MPI's \"--param all all\" and "
		"\"--param all tcp\" work too\n"
		"      --parsable    one fact per line, colon-separated keys\n"
		"      --json        one JSON object\n"
		"      --explain HOST:PORT  ask the rmca listener there which "
		"transport\n"
		"                    and which path per operation an endpoint "
		"would\n"
		"                    get, and why (nothing is connected); with "
		"--parsable\n"
		"                    or --json as fields\n"
		"  -h, --help        this text\n"
		"  -V, --version     the version of rmca_info and of librmca\n"
		"\n"
		"Components are searched in RMCA_component_path (colon list), "
		"then in the\n"
		"build's pkglibdir. Exit status: 0 fine, 1 rmca could not "
		"start, 2 bad usage.\n");
}

static const struct option long_options[] = {
	{"help", no_argument, NULL, 'h'},
	{"json", no_argument, NULL, 'j'},
	{"param", required_argument, NULL, 'p'},
	{"parsable", no_argument, NULL, 'P'},
	{"explain", required_argument, NULL, 'e'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/*
 * ompi_info's "--param TYPE COMPONENT": the word after a --param value
 * narrows it. "all all" is all, "all tcp" is tcp; a word after anything
 * else is answered with what to type.
 */
static int param_second_word(struct options *o, const char *word)
{
	const char **last = &o->params[o->nparams - 1];

	if (!strcmp(*last, "all")) {
		if (strcmp(word, "all"))
			*last = word;
		return 0;
	}
	fprintf(stderr,
		"rmca_info: unexpected argument '%s' after --param %s; type "
		"rmca_info --param %s for its parameters, rmca_info --param "
		"all for every one\n",
		word, *last, *last);
	return -1;
}

/* 0, or 2 after saying what is wrong. */
static int parse_options(int argc, char **argv, struct options *o)
{
	int c, prev_param = -1;

	memset(o, 0, sizeof(*o));
	o->params = calloc((size_t)argc, sizeof(*o->params));
	if (!o->params) {
		fprintf(stderr, "rmca_info: out of memory\n");
		return 1;
	}
	/* '-' keeps arguments in place: a word right after a --param value
	 * is its second word (ompi_info's habit). */
	while ((c = getopt_long(argc, argv, "-hp:V", long_options, NULL)) !=
	       -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			cli_version("rmca_info");
			exit(0);
		case 1: /* a word that is no option */
			if (!o->nparams || prev_param != optind - 1) {
				fprintf(stderr,
					"rmca_info: unexpected argument '%s'\n",
					optarg);
				goto bad;
			}
			if (param_second_word(o, optarg))
				goto bad;
			prev_param = -1;
			break;
		case 'j':
		case 'P':
			if (o->format != FMT_HUMAN &&
			    o->format != (c == 'j' ? FMT_JSON : FMT_PARSABLE)) {
				fprintf(stderr,
					"rmca_info: --parsable and --json exclude each other\n");
				goto bad;
			}
			o->format = c == 'j' ? FMT_JSON : FMT_PARSABLE;
			break;
		case 'p':
			o->params[o->nparams++] = optarg;
			prev_param =
				optind; /* the next word would be at optind */
			break;
		case 'e':
			o->explain = optarg;
			break;
		default:
			goto bad; /* getopt said why */
		}
	}
	return 0;
bad:
	return cli_hint("rmca_info");
}

/* "/x/rmca_tcp.so" -> "tcp": a refused file has no component name. */
static void label_from_path(const char *path, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	size_t n;

	base = base ? base + 1 : path;
	if (!strncmp(base, "rmca_", 5))
		base += 5;
	dot = strrchr(base, '.');
	n = dot ? (size_t)(dot - base) : strlen(base);
	snprintf(buf, len, "%.*s", (int)n, base);
}

/* A --param word naming one parameter: "tcp_port" or "RMCA_tcp_port". */
static bool names_param(const char *want, const char *name)
{
	if (!strncmp(want, "RMCA_", 5))
		want += 5;
	return !strcmp(want, name);
}

static bool param_selected(const struct options *o,
			   const struct rmca_info_param *p)
{
	for (int i = 0; i < o->nparams; i++)
		if (!strcmp(o->params[i], "all") ||
		    !strcmp(o->params[i], p->owner) ||
		    names_param(o->params[i], p->name))
			return true;
	return false;
}

/* 1 if every --param names something that exists. */
static bool params_known(rmca_context_t *ctx, const struct options *o)
{
	struct rmca_info_component c;
	struct rmca_info_param p;
	bool ok = true;

	for (int i = 0; i < o->nparams; i++) {
		const char *want = o->params[i];
		bool found = !strcmp(want, "all") || !strcmp(want, "framework");

		for (int j = 0; !found && !rmca_info_component(ctx, j, &c);
		     j++)
			found = c.name && !strcmp(c.name, want);
		for (int j = 0; !found && !rmca_info_param(ctx, j, &p); j++)
			found = !strcmp(p.owner, want) ||
				names_param(want, p.name);
		if (!found) {
			fprintf(stderr,
				"rmca_info: --param '%s': no such component or "
				"parameter; rmca_info --param all lists them\n",
				want);
			ok = false;
		}
	}
	return ok;
}

static void *grow(void *a, int n, size_t size)
{
	/* doubling at powers of two keeps this linear */
	if (n && (n & (n - 1)))
		return a;
	return realloc(a, (size_t)(n ? 2 * n : 1) * size);
}

static int gather(rmca_context_t *ctx, const struct options *o,
		  struct report *r)
{
	struct rmca_info_component c;
	struct rmca_info_module m;
	struct rmca_info_param p;
	char *line, *save = NULL;
	struct comp_extra *x;
	void *n;

	memset(r, 0, sizeof(*r));
	r->build = strdup(rmca_info_build());
	if (!r->build)
		return -1;
	r->version = "unknown";
	for (line = strtok_r(r->build, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq || r->nbuild == (int)(sizeof(r->build_key) /
					       sizeof(r->build_key[0])))
			continue;
		*eq = '\0';
		if (!strcmp(line, "version")) {
			r->version = eq + 1;
			continue;
		}
		r->build_key[r->nbuild] = line;
		r->build_val[r->nbuild++] = eq + 1;
	}

	while (!rmca_info_component(ctx, r->ncomps, &c)) {
		n = grow(r->comps, r->ncomps, sizeof(*r->comps));
		if (!n)
			return -1;
		r->comps = n;
		n = grow(r->extra, r->ncomps, sizeof(*r->extra));
		if (!n)
			return -1;
		r->extra = n;
		x = &r->extra[r->ncomps];
		if (c.name)
			snprintf(x->label, sizeof(x->label), "%s", c.name);
		else
			label_from_path(c.path, x->label, sizeof(x->label));
		if (c.error)
			snprintf(x->why, sizeof(x->why), "%s%s",
				 c.name ? "open: " : "", c.error);
		else
			x->why[0] = '\0';
		x->why_none = rmca_info_component_why_none(ctx, r->ncomps);
		if ((int)strlen(x->label) > r->label_width)
			r->label_width = (int)strlen(x->label);
		r->comps[r->ncomps++] = c;
	}
	while (!rmca_info_module(ctx, r->nmods, &m)) {
		n = grow(r->mods, r->nmods, sizeof(*r->mods));
		if (!n)
			return -1;
		r->mods = n;
		r->mods[r->nmods++] = m;
	}
	for (int i = 0; !rmca_info_param(ctx, i, &p); i++) {
		if (!param_selected(o, &p))
			continue;
		n = grow(r->params, r->nparams, sizeof(*r->params));
		if (!n)
			return -1;
		r->params = n;
		r->params[r->nparams++] = p;
	}
	return 0;
}

static void report_free(struct report *r)
{
	free(r->build);
	free(r->comps);
	free(r->extra);
	free(r->mods);
	free(r->params);
}

/* The status of a component: "loaded", or "failed" and *why. */
static const char *comp_status(const struct report *r, int i, const char **why)
{
	*why = r->extra[i].why[0] ? r->extra[i].why : NULL;
	return *why ? "failed" : "loaded";
}

/* Names of the set bits of caps, joined by sep; "" when none. */
static void caps_text(uint32_t caps, const char *sep, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int b = 0; b < 32; b++) {
		uint32_t bit = 1u << b;
		const char *name = rmca_info_cap_name(bit);
		char unknown[16];
		int n;

		if (!(caps & bit))
			continue;
		if (!name) {
			snprintf(unknown, sizeof(unknown), "bit%u", b);
			name = unknown;
		}
		n = snprintf(buf + used, len - used, "%s%s", used ? sep : "",
			     name);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
}

/* A value on one line: newlines in user-supplied text would split a fact. */
static void put_value(FILE *f, const char *s)
{
	for (; s && *s; s++)
		fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
}

/* ---- for people ---- */

static void print_human(const struct report *r)
{
	char caps[256], masked[256];

	printf("rmca %s\n", r->version);
	for (int i = 0; i < r->nbuild; i++) {
		char key[64];

		snprintf(key, sizeof(key), "%s:", r->build_key[i]);
		for (char *k = key; *k; k++)
			if (*k == '_')
				*k = ' ';
		printf("  %-18s %s\n", key, r->build_val[i]);
	}

	printf("\nComponents:\n");
	if (!r->ncomps)
		printf("  none found (RMCA_component_path, pkglibdir)\n");
	for (int i = 0; i < r->ncomps; i++) {
		const struct rmca_info_component *c = &r->comps[i];
		int w = r->label_width;

		printf("  %-*s ", w, r->extra[i].label);
		if (c->name)
			printf("%s  priority %d  %s  %d module%s%s%s%s\n",
			       c->version ? c->version : "?", c->priority,
			       c->enabled ? "enabled" : "disabled", c->nmodules,
			       c->nmodules == 1 ? "" : "s",
			       r->extra[i].why_none ? " (" : "",
			       r->extra[i].why_none ? r->extra[i].why_none : "",
			       r->extra[i].why_none ? ")" : "");
		if (r->extra[i].why[0]) {
			printf("%*sfailed: ", c->name ? w + 3 : 0, "");
			put_value(stdout, r->extra[i].why);
			printf("\n");
		}
		printf("  %-*s %s\n", w, "", c->path);
		if (c->description) {
			printf("  %-*s ", w, "");
			put_value(stdout, c->description);
			printf("\n");
		}
	}

	printf("\nModules:\n");
	if (!r->nmods)
		printf("  none\n");
	for (int i = 0; i < r->nmods; i++) {
		const struct rmca_info_module *m = &r->mods[i];

		caps_text(m->caps, ", ", caps, sizeof(caps));
		caps_text(m->caps_probed & ~m->caps, ", ", masked,
			  sizeof(masked));
		printf("  %s/%s  priority %d\n", m->component, m->device,
		       m->priority);
		printf("      caps:    %s\n", caps[0] ? caps : "none");
		if (masked[0])
			printf("      masked:  %s (by RMCA_%s_caps)\n", masked,
			       m->component);
		if (m->detail && m->detail[0]) {
			printf("      detail:  ");
			put_value(stdout, m->detail);
			printf("\n");
		}
	}

	if (!r->nparams)
		return;
	printf("\nParameters:\n");
	for (int i = 0; i < r->nparams; i++) {
		const struct rmca_info_param *p = &r->params[i];

		printf("  RMCA_%s = ", p->name);
		put_value(stdout, p->value);
		printf("\n      source:   %s", p->source);
		if (p->source_detail && strcmp(p->source_detail, p->source))
			printf(" (%s)", p->source_detail);
		printf("\n      type:     %s, default \"%s\", accepted: %s\n",
		       p->type, p->def, p->accepted);
		printf("      owner:    %s\n", p->owner);
		printf("      help:     ");
		put_value(stdout, p->help);
		printf("\n");
		if (p->error) {
			printf("      error:    ");
			put_value(stdout, p->error);
			printf("\n");
		}
	}
}

/* ---- one fact per line ---- */

static void fact(const char *prefix, const char *key, const char *value)
{
	printf("%s:%s:", prefix, key);
	put_value(stdout, value);
	putchar('\n');
}

static void fact_int(const char *prefix, const char *key, long long value)
{
	printf("%s:%s:%lld\n", prefix, key, value);
}

static void print_parsable(const struct report *r)
{
	char prefix[256], caps[256];

	printf("version:%s\n", r->version);
	for (int i = 0; i < r->nbuild; i++)
		fact("build", r->build_key[i], r->build_val[i]);

	for (int i = 0; i < r->ncomps; i++) {
		const struct rmca_info_component *c = &r->comps[i];
		const char *why;
		const char *status = comp_status(r, i, &why);

		snprintf(prefix, sizeof(prefix), "component:%s",
			 r->extra[i].label);
		fact(prefix, "path", c->path);
		if (c->name) {
			fact(prefix, "version", c->version);
			fact(prefix, "description", c->description);
			fact_int(prefix, "priority", c->priority);
			fact(prefix, "enabled", c->enabled ? "yes" : "no");
			fact_int(prefix, "modules", c->nmodules);
			if (r->extra[i].why_none)
				fact(prefix, "no_module_reason",
				     r->extra[i].why_none);
		}
		printf("%s:status:%s", prefix, status);
		if (why) {
			putchar(':');
			put_value(stdout, why);
		}
		putchar('\n');
	}

	for (int i = 0; i < r->nmods; i++) {
		const struct rmca_info_module *m = &r->mods[i];

		snprintf(prefix, sizeof(prefix), "module:%s:%s", m->component,
			 m->device);
		fact_int(prefix, "priority", m->priority);
		caps_text(m->caps, ",", caps, sizeof(caps));
		fact(prefix, "caps", caps);
		caps_text(m->caps_probed, ",", caps, sizeof(caps));
		fact(prefix, "caps_probed", caps);
		caps_text(m->caps_probed & ~m->caps, ",", caps, sizeof(caps));
		fact(prefix, "masked", caps);
		fact(prefix, "detail", m->detail);
	}

	for (int i = 0; i < r->nparams; i++) {
		const struct rmca_info_param *p = &r->params[i];

		snprintf(prefix, sizeof(prefix), "param:%s", p->name);
		fact(prefix, "value", p->value);
		fact(prefix, "source", p->source);
		fact(prefix, "source_detail", p->source_detail);
		fact(prefix, "type", p->type);
		fact(prefix, "default", p->def);
		fact(prefix, "accepted", p->accepted);
		fact(prefix, "owner", p->owner);
		fact(prefix, "help", p->help);
		if (p->error)
			fact(prefix, "error", p->error);
	}
}

/* ---- JSON ---- */

static void json_str(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '"':
			fputs("\\\"", stdout);
			break;
		case '\\':
			fputs("\\\\", stdout);
			break;
		case '\n':
			fputs("\\n", stdout);
			break;
		case '\r':
			fputs("\\r", stdout);
			break;
		case '\t':
			fputs("\\t", stdout);
			break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				printf("\\u%04x", *c);
			else
				putchar(*c);
		}
	}
	putchar('"');
}

static void json_key(const char *key, bool first)
{
	printf("%s", first ? "" : ", ");
	json_str(key);
	fputs(": ", stdout);
}

static void json_field(const char *key, const char *value, bool first)
{
	json_key(key, first);
	json_str(value);
}

static void json_caps(const char *key, uint32_t caps)
{
	bool first = true;

	json_key(key, false);
	putchar('[');
	for (unsigned int b = 0; b < 32; b++) {
		const char *name = rmca_info_cap_name(1u << b);
		char unknown[16];

		if (!(caps & (1u << b)))
			continue;
		if (!name) {
			snprintf(unknown, sizeof(unknown), "bit%u", b);
			name = unknown;
		}
		fputs(first ? "" : ", ", stdout);
		json_str(name);
		first = false;
	}
	putchar(']');
}

static void print_json(const struct report *r)
{
	printf("{\n  \"version\": ");
	json_str(r->version);
	printf(",\n  \"build\": {");
	for (int i = 0; i < r->nbuild; i++)
		json_field(r->build_key[i], r->build_val[i], i == 0);
	printf("},\n  \"components\": [");
	for (int i = 0; i < r->ncomps; i++) {
		const struct rmca_info_component *c = &r->comps[i];
		const char *why;

		printf("%s\n    {", i ? "," : "");
		json_field("name", r->extra[i].label, true);
		json_field("status", comp_status(r, i, &why), false);
		json_field("error", why, false);
		json_field("path", c->path, false);
		json_field("version", c->version, false);
		json_field("description", c->description, false);
		if (c->name) {
			printf(", \"priority\": %d, \"enabled\": %s, \"modules\": %d",
			       c->priority, c->enabled ? "true" : "false",
			       c->nmodules);
			json_field("no_module_reason", r->extra[i].why_none,
				   false);
		}
		putchar('}');
	}
	printf("\n  ],\n  \"modules\": [");
	for (int i = 0; i < r->nmods; i++) {
		const struct rmca_info_module *m = &r->mods[i];

		printf("%s\n    {", i ? "," : "");
		json_field("component", m->component, true);
		json_field("device", m->device, false);
		printf(", \"priority\": %d", m->priority);
		json_caps("caps", m->caps);
		json_caps("caps_probed", m->caps_probed);
		json_caps("masked", m->caps_probed & ~m->caps);
		json_field("detail", m->detail, false);
		putchar('}');
	}
	printf("\n  ],\n  \"params\": [");
	for (int i = 0; i < r->nparams; i++) {
		const struct rmca_info_param *p = &r->params[i];

		printf("%s\n    {", i ? "," : "");
		json_field("name", p->name, true);
		json_field("owner", p->owner, false);
		json_field("type", p->type, false);
		json_field("value", p->value, false);
		json_field("default", p->def, false);
		json_field("source", p->source, false);
		json_field("source_detail", p->source_detail, false);
		json_field("accepted", p->accepted, false);
		json_field("help", p->help, false);
		json_field("error", p->error, false);
		putchar('}');
	}
	printf("\n  ]\n}\n");
}

/*
 * --explain: the listener's answer is text, one fact per line (see
 * rmca_info_explain); --parsable and --json split it into fields.
 */
#define EXPLAIN_MAX 32

struct explain_facts {
	const char *error; /* why no endpoint is possible; NULL if one is */
	const char *peer, *peer_where; /* "host:port", "same host" */
	const char *transport, *device, *peer_device;
	const char *chose;
	struct {
		const char *op, *path, *reason;
	} paths[EXPLAIN_MAX];
	struct {
		const char *component, *device, *reason;
	} skipped[EXPLAIN_MAX];
	const char *notes[EXPLAIN_MAX]; /* lines of no known shape */
	int npaths, nskipped, nnotes;
};

/* "put_delivered: native (why)": splits line in place; 0 if it is one. */
static int split_path(char *line, const char **op, const char **path,
		      const char **reason)
{
	static const char *const ops[] = {"put_delivered", "atomic",
					  "masked_atomic", "send_inv",
					  "get_short"};
	char *colon = strstr(line, ": "), *open, *close;

	if (!colon)
		return -1;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if ((size_t)(colon - line) != strlen(ops[i]) ||
		    strncmp(line, ops[i], strlen(ops[i])))
			continue;
		*colon = '\0';
		*op = line;
		*path = colon + 2;
		*reason = "";
		open = strchr(colon + 2, ' ');
		close = strrchr(colon + 2, ')');
		if (open && open[1] == '(' && close) {
			*open = '\0';
			*close = '\0';
			*reason = open + 2;
		}
		return 0;
	}
	return -1;
}

static void explain_parse(char *text, int rc, struct explain_facts *f)
{
	char *line, *save = NULL, *p;
	bool selection = false;

	memset(f, 0, sizeof(*f));
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *a, *b, *c;

		if (rc && !f->error) {
			f->error = line;
		} else if (!strncmp(line, "peer ", 5) && !f->peer &&
			   (p = strrchr(line, '(')) && p > line + 5 &&
			   p[-1] == ' ' && line[strlen(line) - 1] == ')') {
			/* "peer HOST:PORT (same host)" */
			line[strlen(line) - 1] = '\0';
			p[-1] = '\0';
			f->peer = line + 5;
			f->peer_where = p + 1;
		} else if (!strncmp(line, "transport ", 10) && !f->transport &&
			   (p = strstr(line, ", device "))) {
			*p = '\0';
			f->transport = line + 10;
			f->device = p + 9;
			if ((p = strstr(p + 9, " <-> "))) {
				*p = '\0';
				f->peer_device = p + 5;
			}
		} else if (!strcmp(line, "selection:")) {
			selection = true;
		} else if (selection && !strncmp(line, "chose ", 6)) {
			f->chose = line + 6;
		} else if (selection && !strncmp(line, "skip ", 5) &&
			   f->nskipped < EXPLAIN_MAX &&
			   (p = strchr(line + 5, ' ')) && strstr(p + 1, ": ")) {
			/* "skip COMPONENT DEVICE[<->PEER]: REASON" */
			*p = '\0';
			f->skipped[f->nskipped].component = line + 5;
			f->skipped[f->nskipped].device = p + 1;
			p = strstr(p + 1, ": ");
			*p = '\0';
			f->skipped[f->nskipped++].reason = p + 2;
		} else if (!selection && f->npaths < EXPLAIN_MAX &&
			   !split_path(line, &a, &b, &c)) {
			f->paths[f->npaths].op = a;
			f->paths[f->npaths].path = b;
			f->paths[f->npaths++].reason = c;
		} else if (f->nnotes < EXPLAIN_MAX) {
			f->notes[f->nnotes++] = line;
		}
	}
}

static void explain_parsable(const struct explain_facts *f)
{
	char key[96];

	fact("explain", "status", f->error ? "failed" : "ok");
	if (f->error)
		fact("explain", "error", f->error);
	if (f->peer) {
		fact("explain", "peer", f->peer);
		fact("explain", "peer_local",
		     !strcmp(f->peer_where, "same host") ? "yes" : "no");
	}
	if (f->transport) {
		fact("explain", "transport", f->transport);
		fact("explain", "device", f->device);
		if (f->peer_device)
			fact("explain", "peer_device", f->peer_device);
	}
	for (int i = 0; i < f->npaths; i++) {
		snprintf(key, sizeof(key), "path:%s", f->paths[i].op);
		fact("explain", key, f->paths[i].path);
		snprintf(key, sizeof(key), "path_reason:%s", f->paths[i].op);
		fact("explain", key, f->paths[i].reason);
	}
	if (f->chose)
		fact("explain", "chose", f->chose);
	for (int i = 0; i < f->nskipped; i++) {
		snprintf(key, sizeof(key), "skipped:%s:%s",
			 f->skipped[i].component, f->skipped[i].device);
		fact("explain", key, f->skipped[i].reason);
	}
	for (int i = 0; i < f->nnotes; i++)
		fact("explain", "note", f->notes[i]);
}

static void explain_json(const struct options *o, int rc,
			 const struct explain_facts *f, const char *text)
{
	printf("{\"explain\": ");
	json_str(o->explain);
	printf(", \"status\": %d", rc);
	json_field("error", f->error, false);
	json_field("peer", f->peer, false);
	printf(", \"peer_local\": %s", !f->peer_where ? "null"
				       : !strcmp(f->peer_where, "same host")
					       ? "true"
					       : "false");
	json_field("transport", f->transport, false);
	json_field("device", f->device, false);
	json_field("peer_device", f->peer_device, false);
	printf(", \"paths\": {");
	for (int i = 0; i < f->npaths; i++) {
		json_key(f->paths[i].op, i == 0);
		printf("{\"path\": ");
		json_str(f->paths[i].path);
		json_field("reason", f->paths[i].reason, false);
		putchar('}');
	}
	printf("}");
	json_field("chose", f->chose, false);
	printf(", \"skipped\": [");
	for (int i = 0; i < f->nskipped; i++) {
		printf("%s{", i ? ", " : "");
		json_field("component", f->skipped[i].component, true);
		json_field("device", f->skipped[i].device, false);
		json_field("reason", f->skipped[i].reason, false);
		putchar('}');
	}
	printf("], \"notes\": [");
	for (int i = 0; i < f->nnotes; i++) {
		printf("%s", i ? ", " : "");
		json_str(f->notes[i]);
	}
	printf("]");
	json_field("text", text, false);
	printf("}\n");
}

static int explain(rmca_context_t *ctx, const struct options *o)
{
	static char text[8192], copy[8192];
	int rc = rmca_info_explain(ctx, o->explain, 10000, text, sizeof(text));
	struct explain_facts f;
	char *line, *save = NULL;

	if (rc && !text[0])
		snprintf(text, sizeof(text), "%s\n", rmca_strerror(rc));
	memcpy(copy, text, sizeof(copy));
	explain_parse(copy, rc, &f);
	switch (o->format) {
	case FMT_JSON:
		explain_json(o, rc, &f, text);
		break;
	case FMT_PARSABLE:
		explain_parsable(&f);
		break;
	case FMT_HUMAN:
		printf("%s: %s\n", o->explain,
		       rc ? "no endpoint possible" : "an endpoint would use");
		for (line = strtok_r(text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			printf("  %s\n", line);
		break;
	}
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	static void (*const print[])(const struct report *) = {
		[FMT_HUMAN] = print_human,
		[FMT_PARSABLE] = print_parsable,
		[FMT_JSON] = print_json,
	};
	struct options o;
	struct report r;
	rmca_context_t *ctx;
	int ret;

	ret = parse_options(argc, argv, &o);
	if (ret) {
		free(o.params);
		return ret;
	}

	ret = rmca_init_inspect(&ctx);
	if (ret) {
		fprintf(stderr, "rmca_info: rmca could not start: %s\n",
			rmca_strerror(ret));
		free(o.params);
		return 1;
	}
	if (!params_known(ctx, &o)) {
		ret = cli_hint("rmca_info");
		goto out;
	}
	if (o.explain) {
		ret = explain(ctx, &o);
		goto out;
	}
	if (gather(ctx, &o, &r)) {
		fprintf(stderr, "rmca_info: out of memory\n");
		ret = 1;
	} else {
		print[o.format](&r);
	}
	report_free(&r);
out:
	rmca_finalize(ctx);
	free(o.params);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "rmca_info: cannot write the %s output\n",
			format_names[o.format]);
		return 1;
	}
	return ret;
}
