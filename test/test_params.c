/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Typed parameters: parsing of every type, the precedence of every source,
 * the file syntax, and the messages a user sees (stderr is captured).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* environ, asprintf */
#endif
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "params.h"

/* ---- helpers ---- */

/* A scratch tree per test: dir/xdg/rmca (user file), dir/sys/rmca. */
struct fixture {
	char dir[64];
	char user_file[128];
	char sys_dir[128];
	char sys_file[128];
	char param_file[128];
	struct rmca_params *ps;
};

/* Leave no RMCA_* from the harness (RMCA_component_path...) around. */
static void clear_rmca_env(void)
{
	char name[256];
	size_t i = 0;

	while (environ[i]) {
		const char *eq = strchr(environ[i], '=');
		size_t n = eq ? (size_t)(eq - environ[i]) : 0;

		if (!strncmp(environ[i], "RMCA_", 5) && n < sizeof(name)) {
			memcpy(name, environ[i], n);
			name[n] = '\0';
			unsetenv(name);
			i = 0; /* environ was rewritten */
			continue;
		}
		i++;
	}
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char path[160];

	if (!fx)
		return -1;
	strcpy(fx->dir, "/tmp/rmca-params-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/xdg", fx->dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/xdg/rmca", fx->dir);
	mkdir(path, 0700);
	snprintf(fx->user_file, sizeof(fx->user_file),
		 "%s/xdg/rmca/params.conf", fx->dir);
	snprintf(fx->sys_dir, sizeof(fx->sys_dir), "%s/sys", fx->dir);
	mkdir(fx->sys_dir, 0700);
	snprintf(path, sizeof(path), "%s/sys/rmca", fx->dir);
	mkdir(path, 0700);
	snprintf(fx->sys_file, sizeof(fx->sys_file), "%s/sys/rmca/params.conf",
		 fx->dir);
	snprintf(fx->param_file, sizeof(fx->param_file), "%s/pf.conf", fx->dir);

	clear_rmca_env();
	snprintf(path, sizeof(path), "%s/xdg", fx->dir);
	setenv("XDG_CONFIG_HOME", path, 1);
	setenv("HOME", fx->dir, 1);
	rmca_log_verbose = 0;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char path[160];

	rmca_params_destroy(fx->ps);
	clear_rmca_env();
	unlink(fx->user_file);
	unlink(fx->sys_file);
	unlink(fx->param_file);
	snprintf(path, sizeof(path), "%s/.config/rmca/params.conf", fx->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/.config/rmca", fx->dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/.config", fx->dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/xdg/rmca", fx->dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/xdg", fx->dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/sys/rmca", fx->dir);
	rmdir(path);
	rmdir(fx->sys_dir);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* stderr goes to a temp file between capture_begin and capture_end. */
struct capture {
	int saved;
	int fd;
};

static void capture_begin(struct capture *c)
{
	char path[] = "/tmp/rmca-stderr-XXXXXX";

	fflush(stderr);
	c->fd = mkstemp(path);
	assert_true(c->fd >= 0);
	unlink(path);
	c->saved = dup(2);
	assert_true(c->saved >= 0);
	assert_int_equal(dup2(c->fd, 2), 2);
}

/* Returns what was written, malloc'ed. */
static char *capture_end(struct capture *c)
{
	char *buf;
	off_t len;

	fflush(stderr);
	assert_int_equal(dup2(c->saved, 2), 2);
	close(c->saved);
	len = lseek(c->fd, 0, SEEK_END);
	assert_true(len >= 0);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(pread(c->fd, buf, (size_t)len, 0), len);
	close(c->fd);
	return buf;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static const char *const atomic_modes[] = {"auto", "device", "cpu", NULL};

static const struct rmca_param_def prio_def = {
	.name = "tcp_priority",
	.type = RMCA_PARAM_INT,
	.def = "50",
	.help = "priority of the tcp component",
	.min = 0,
	.max = 100,
};

static const struct rmca_param_def bool_def = {.name = "b",
					       .type = RMCA_PARAM_BOOL};
static const struct rmca_param_def int_def = {.name = "i",
					      .type = RMCA_PARAM_INT};
static const struct rmca_param_def size_def = {.name = "s",
					       .type = RMCA_PARAM_SIZE};
static const struct rmca_param_def enum_def = {
	.name = "atomic_mode", .type = RMCA_PARAM_ENUM, .values = atomic_modes};
static const struct rmca_param_def list_def = {.name = "transports",
					       .type = RMCA_PARAM_LIST};
static const struct rmca_param_def str_def = {.name = "str",
					      .type = RMCA_PARAM_STRING};

static int parse(const struct rmca_param_def *def, const char *text,
		 struct rmca_param *p)
{
	char err[256];

	return rmca_param_parse(def, text, p, err, sizeof(err));
}

/* ---- names ---- */

static void type_and_source_names(void **state)
{
	assert_string_equal(rmca_param_type_name(RMCA_PARAM_BOOL), "bool");
	assert_string_equal(rmca_param_type_name(RMCA_PARAM_INT), "int");
	assert_string_equal(rmca_param_type_name(RMCA_PARAM_SIZE), "size");
	assert_string_equal(rmca_param_type_name(RMCA_PARAM_STRING), "string");
	assert_string_equal(rmca_param_type_name(RMCA_PARAM_ENUM), "enum");
	assert_string_equal(rmca_param_type_name(RMCA_PARAM_LIST), "list");
	assert_string_equal(rmca_param_source_name(RMCA_SRC_DEFAULT),
			    "default");
	assert_string_equal(rmca_param_source_name(RMCA_SRC_SYSTEM_FILE),
			    "system_file");
	assert_string_equal(rmca_param_source_name(RMCA_SRC_USER_FILE),
			    "user_file");
	assert_string_equal(rmca_param_source_name(RMCA_SRC_PARAM_FILE),
			    "param_file");
	assert_string_equal(rmca_param_source_name(RMCA_SRC_ENV), "env");
}

/* ---- rmca_param_parse, type by type ---- */

static void bool_accepts_every_spelling(void **state)
{
	static const char *const yes[] = {"1",	 "yes",	 "true", "on",
					  "YES", "True", " on ", "On\n"};
	static const char *const no[] = {"0",	"no",	 "false",
					 "off", "FALSE", "Off"};
	struct rmca_param p;
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		p.v.b = false;
		assert_int_equal(parse(&bool_def, yes[i], &p), 0);
		assert_true(p.v.b);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		p.v.b = true;
		assert_int_equal(parse(&bool_def, no[i], &p), 0);
		assert_false(p.v.b);
	}
}

static void bool_rejects_other_words(void **state)
{
	static const char *const bad[] = {"2", "yess", "",     "tru",
					  "o", "-1",   "y es", "enable"};
	struct rmca_param p;
	char err[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rmca_param_parse(&bool_def, bad[i], &p, err,
						  sizeof(err)),
				 RMCA_ERR_INVALID);
		assert_string_equal(err, "not a boolean; accepted: "
					 "1|0|yes|no|true|false|on|off");
	}
}

static void int_accepts_decimal_and_hex(void **state)
{
	struct rmca_param p;

	assert_int_equal(parse(&int_def, "42", &p), 0);
	assert_int_equal(p.v.i, 42);
	assert_int_equal(parse(&int_def, "-7", &p), 0);
	assert_int_equal(p.v.i, -7);
	assert_int_equal(parse(&int_def, "+7", &p), 0);
	assert_int_equal(p.v.i, 7);
	assert_int_equal(parse(&int_def, "0x1F", &p), 0);
	assert_int_equal(p.v.i, 31);
	assert_int_equal(parse(&int_def, "-0x10", &p), 0);
	assert_int_equal(p.v.i, -16);
	/* A leading zero is not octal. */
	assert_int_equal(parse(&int_def, "010", &p), 0);
	assert_int_equal(p.v.i, 10);
	assert_int_equal(parse(&int_def, " 5 ", &p), 0);
	assert_int_equal(p.v.i, 5);
	assert_int_equal(parse(&int_def, "9223372036854775807", &p), 0);
	assert_true(p.v.i == 9223372036854775807LL);
}

static void int_rejects_non_integers(void **state)
{
	static const char *const bad[] = {"abc", "12abc", "",	 "1.5", "0x",
					  "--1", "- 1",	  "1 2", "1e3", "0x1g"};
	struct rmca_param p;
	char err[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rmca_param_parse(&int_def, bad[i], &p, err,
						  sizeof(err)),
				 RMCA_ERR_INVALID);
		assert_string_equal(err, "not an integer; accepted: integer");
	}
	assert_int_equal(rmca_param_parse(&int_def, "99999999999999999999", &p,
					  err, sizeof(err)),
			 RMCA_ERR_INVALID);
	assert_string_equal(err, "out of range; accepted: integer");
}

static void int_range_is_checked_when_min_below_max(void **state)
{
	struct rmca_param p;
	char err[128];

	assert_int_equal(parse(&prio_def, "0", &p), 0);
	assert_int_equal(p.v.i, 0);
	assert_int_equal(parse(&prio_def, "100", &p), 0);
	assert_int_equal(p.v.i, 100);
	assert_int_equal(
		rmca_param_parse(&prio_def, "101", &p, err, sizeof(err)),
		RMCA_ERR_INVALID);
	assert_string_equal(err, "out of range; accepted: integer in 0..100");
	assert_int_equal(
		rmca_param_parse(&prio_def, "-1", &p, err, sizeof(err)),
		RMCA_ERR_INVALID);
	assert_int_equal(
		rmca_param_parse(&prio_def, "abc", &p, err, sizeof(err)),
		RMCA_ERR_INVALID);
	assert_string_equal(err, "not an integer; accepted: integer in 0..100");
}

static void size_accepts_suffixes(void **state)
{
	static const struct {
		const char *text;
		unsigned long long v;
	} good[] = {
		{"0", 0},
		{"4096", 4096},
		{"1k", 1024},
		{"1K", 1024},
		{"1kb", 1024},
		{"1KiB", 1024},
		{"2m", 2ull << 20},
		{"2MB", 2ull << 20},
		{"3g", 3ull << 30},
		{"3GiB", 3ull << 30},
		{"64 k", 64ull << 10},
		{" 8b ", 8},
		{"0x10", 16},
		{"0x10k", 16ull << 10},
	};
	struct rmca_param p;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(parse(&size_def, good[i].text, &p), 0);
		assert_true(p.v.size == good[i].v);
	}
	if (sizeof(size_t) >= 8) {
		assert_int_equal(parse(&size_def, "1t", &p), 0);
		assert_true((unsigned long long)p.v.size == 1ull << 40);
	}
}

static void size_rejects_what_is_not_a_byte_count(void **state)
{
	static const char *const bad[] = {"-1", "1.5k", "k",  "1kk",   "1x",
					  "",	"abc",	"0x", "1 k b", "1kbi"};
	struct rmca_param p;
	char err[160];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rmca_param_parse(&size_def, bad[i], &p, err,
						  sizeof(err)),
				 RMCA_ERR_INVALID);
		assert_non_null(strstr(err, "not a size; accepted: "));
		assert_non_null(strstr(err, "1k = 1024"));
	}
	/* 2^24 t is 2^64: one past SIZE_MAX on 64-bit. */
	assert_int_equal(
		rmca_param_parse(&size_def, "16777216t", &p, err, sizeof(err)),
		RMCA_ERR_INVALID);
	assert_non_null(strstr(err, "too large"));
	assert_int_equal(rmca_param_parse(&size_def, "99999999999999999999", &p,
					  err, sizeof(err)),
			 RMCA_ERR_INVALID);
	assert_non_null(strstr(err, "too large"));
}

static void enum_accepts_listed_values_exactly(void **state)
{
	struct rmca_param p;
	char err[128];

	assert_int_equal(parse(&enum_def, "auto", &p), 0);
	assert_int_equal(p.v.e, 0);
	assert_int_equal(parse(&enum_def, "cpu", &p), 0);
	assert_int_equal(p.v.e, 2);
	assert_int_equal(parse(&enum_def, " device ", &p), 0);
	assert_int_equal(p.v.e, 1);
	assert_int_equal(
		rmca_param_parse(&enum_def, "AUTO", &p, err, sizeof(err)),
		RMCA_ERR_INVALID);
	assert_string_equal(err,
			    "not an accepted value; accepted: auto|device|cpu");
	assert_int_equal(parse(&enum_def, "gpu", &p), RMCA_ERR_INVALID);
	assert_int_equal(parse(&enum_def, "", &p), RMCA_ERR_INVALID);
	assert_int_equal(parse(&enum_def, "cpux", &p), RMCA_ERR_INVALID);
}

static void list_value_is_validated(void **state)
{
	struct rmca_param p;
	char err[256];

	assert_int_equal(parse(&list_def, "ib,tcp", &p), 0);
	assert_int_equal(parse(&list_def, "^iwarp", &p), 0);
	assert_int_equal(parse(&list_def, "", &p), 0);
	assert_int_equal(
		rmca_param_parse(&list_def, "ib,^tcp", &p, err, sizeof(err)),
		RMCA_ERR_INVALID);
	assert_non_null(
		strstr(err, "cannot mix include and exclude; accepted: "));
}

static void string_accepts_anything(void **state)
{
	struct rmca_param p;

	assert_int_equal(parse(&str_def, "", &p), 0);
	assert_int_equal(parse(&str_def, "any thing # at all ^,", &p), 0);
	assert_int_equal(parse(&str_def, NULL, &p), 0);
}

/* ---- registration ---- */

static void default_applies_without_any_source(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;

	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	p = rmca_params_find(fx->ps, "tcp_priority");
	assert_non_null(p);
	assert_int_equal(p->source, RMCA_SRC_DEFAULT);
	assert_string_equal(p->text, "50");
	assert_int_equal(p->v.i, 50);
	assert_int_equal(p->error, 0);
	assert_string_equal(p->owner, "tcp");
	assert_string_equal(p->def.help, "priority of the tcp component");
}

static void null_default_is_the_zero_of_the_type(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;

	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	assert_int_equal(rmca_params_register(fx->ps, NULL, &bool_def), 0);
	assert_int_equal(rmca_params_register(fx->ps, NULL, &int_def), 0);
	assert_int_equal(rmca_params_register(fx->ps, NULL, &enum_def), 0);
	assert_int_equal(rmca_params_register(fx->ps, NULL, &str_def), 0);
	p = rmca_params_find(fx->ps, "b");
	assert_false(p->v.b);
	assert_string_equal(p->owner, "framework");
	assert_string_equal(p->text, "false");
	assert_int_equal(rmca_params_find(fx->ps, "i")->v.i, 0);
	p = rmca_params_find(fx->ps, "atomic_mode");
	assert_int_equal(p->v.e, 0);
	assert_string_equal(p->text, "auto");
	assert_string_equal(rmca_params_find(fx->ps, "str")->text, "");
}

static void register_copies_the_definition(void **state)
{
	struct fixture *fx = *state;
	char name[] = "tcp_if_include", def[] = "eth0", help[] = "interfaces";
	char v0[] = "x", v1[] = "y";
	const char *values[] = {v0, v1, NULL};
	struct rmca_param_def d = {.name = name,
				   .type = RMCA_PARAM_LIST,
				   .def = def,
				   .help = help};
	struct rmca_param_def e = {.name = "e",
				   .type = RMCA_PARAM_ENUM,
				   .def = "y",
				   .values = values};
	const struct rmca_param *p;

	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &d), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &e), 0);
	memset(name, 'z', sizeof(name) - 1);
	memset(def, 'z', sizeof(def) - 1);
	memset(help, 'z', sizeof(help) - 1);
	v0[0] = v1[0] = 'z';
	p = rmca_params_find(fx->ps, "tcp_if_include");
	assert_non_null(p);
	assert_string_equal(p->def.name, "tcp_if_include");
	assert_string_equal(p->def.def, "eth0");
	assert_string_equal(p->def.help, "interfaces");
	assert_string_equal(p->text, "eth0");
	p = rmca_params_find(fx->ps, "e");
	assert_string_equal(p->def.values[0], "x");
	assert_string_equal(p->def.values[1], "y");
	assert_null(p->def.values[2]);
	assert_int_equal(p->v.e, 1);
}

static void register_twice_same_type_is_a_noop(void **state)
{
	struct fixture *fx = *state;
	struct rmca_param_def again = prio_def;
	struct capture c;
	char *out;

	again.def = "7";
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	assert_int_equal(rmca_params_register(fx->ps, "other", &again), 0);
	assert_int_equal(rmca_params_find(fx->ps, "tcp_priority")->v.i, 50);
	assert_non_null(rmca_params_at(fx->ps, 0));
	assert_null(rmca_params_at(fx->ps, 1));

	again.type = RMCA_PARAM_STRING;
	capture_begin(&c);
	assert_int_equal(rmca_params_register(fx->ps, "other", &again),
			 RMCA_ERR_INVALID);
	out = capture_end(&c);
	assert_non_null(strstr(out, "RMCA_tcp_priority"));
	free(out);
	assert_int_equal(rmca_params_find(fx->ps, "tcp_priority")->def.type,
			 RMCA_PARAM_INT);
	assert_null(rmca_params_at(fx->ps, 1));
}

static void bad_definitions_are_refused(void **state)
{
	struct fixture *fx = *state;
	struct rmca_param_def bad[] = {
		{.name = NULL, .type = RMCA_PARAM_INT},
		{.name = "", .type = RMCA_PARAM_INT},
		{.name = "has space", .type = RMCA_PARAM_INT},
		{.name = "e", .type = RMCA_PARAM_ENUM},
		{.name = "i", .type = RMCA_PARAM_INT, .def = "x"},
		{.name = "r",
		 .type = RMCA_PARAM_INT,
		 .def = "200",
		 .min = 0,
		 .max = 100},
		{.name = "m", .type = RMCA_PARAM_INT, .min = 5, .max = 1},
		{.name = "t", .type = (enum rmca_param_type)99},
		{.name = "l", .type = RMCA_PARAM_LIST, .def = "a,^b"},
	};
	struct capture c;
	size_t i;
	char *out;

	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	capture_begin(&c);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(rmca_params_register(fx->ps, "x", &bad[i]),
				 RMCA_ERR_INVALID);
	out = capture_end(&c);
	assert_int_equal(count_lines(out), sizeof(bad) / sizeof(bad[0]));
	assert_non_null(strstr(out, "bad definition"));
	free(out);
	assert_null(rmca_params_at(fx->ps, 0));
	assert_int_equal(rmca_params_register(NULL, "x", &int_def),
			 RMCA_ERR_INVALID);
	assert_int_equal(rmca_params_register(fx->ps, "x", NULL),
			 RMCA_ERR_INVALID);
}

static void params_iterate_in_registration_order(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param_def *defs[] = {&str_def, &bool_def, &size_def,
					       &list_def, &int_def};
	const struct rmca_param *first;
	char name[16];
	size_t i;

	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(rmca_params_register(fx->ps, NULL, defs[i]),
				 0);
	first = rmca_params_find(fx->ps, "str");
	/* Enough more to make the table grow: pointers must stay valid. */
	for (i = 0; i < 100; i++) {
		struct rmca_param_def d = {.name = name,
					   .type = RMCA_PARAM_STRING};

		snprintf(name, sizeof(name), "p%zu", i);
		assert_int_equal(rmca_params_register(fx->ps, NULL, &d), 0);
	}
	for (i = 0; i < 5; i++)
		assert_string_equal(rmca_params_at(fx->ps, i)->def.name,
				    defs[i]->name);
	assert_string_equal(rmca_params_at(fx->ps, 104)->def.name, "p99");
	assert_null(rmca_params_at(fx->ps, 105));
	assert_ptr_equal(rmca_params_find(fx->ps, "str"), first);
	assert_null(rmca_params_find(fx->ps, "nope"));
	assert_null(rmca_params_find(fx->ps, "STR"));
}

/* ---- precedence of the sources ---- */

/* Every source sets tcp_priority; the test then peels them off. */
static void write_all_sources(struct fixture *fx)
{
	write_file(fx->sys_file, "tcp_priority = 1\n");
	write_file(fx->user_file, "tcp_priority = 2\n");
	write_file(fx->param_file, "# comment\ntcp_priority = 3\n");
	setenv("RMCA_param_file", fx->param_file, 1);
	setenv("RMCA_tcp_priority", "4", 1);
}

static const struct rmca_param *resolve_prio(struct fixture *fx)
{
	rmca_params_destroy(fx->ps);
	fx->ps = NULL;
	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	return rmca_params_find(fx->ps, "tcp_priority");
}

static void env_beats_param_file(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;

	write_all_sources(fx);
	p = resolve_prio(fx);
	assert_int_equal(p->source, RMCA_SRC_ENV);
	assert_int_equal(p->v.i, 4);
	assert_string_equal(p->text, "4");
	assert_string_equal(p->source_detail, "RMCA_tcp_priority");
}

static void param_file_beats_user_file(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;
	char detail[160];

	write_all_sources(fx);
	unsetenv("RMCA_tcp_priority");
	p = resolve_prio(fx);
	assert_int_equal(p->source, RMCA_SRC_PARAM_FILE);
	assert_int_equal(p->v.i, 3);
	snprintf(detail, sizeof(detail), "%s:2", fx->param_file);
	assert_string_equal(p->source_detail, detail);
}

static void user_file_beats_system_file(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;
	char detail[160];

	write_all_sources(fx);
	unsetenv("RMCA_tcp_priority");
	unsetenv("RMCA_param_file");
	p = resolve_prio(fx);
	assert_int_equal(p->source, RMCA_SRC_USER_FILE);
	assert_int_equal(p->v.i, 2);
	snprintf(detail, sizeof(detail), "%s:1", fx->user_file);
	assert_string_equal(p->source_detail, detail);
}

static void system_file_beats_default(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;
	char detail[160];

	write_all_sources(fx);
	unsetenv("RMCA_tcp_priority");
	unsetenv("RMCA_param_file");
	unlink(fx->user_file);
	p = resolve_prio(fx);
	assert_int_equal(p->source, RMCA_SRC_SYSTEM_FILE);
	assert_int_equal(p->v.i, 1);
	snprintf(detail, sizeof(detail), "%s:1", fx->sys_file);
	assert_string_equal(p->source_detail, detail);

	/* Without a sysconfdir the system file is not read. */
	rmca_params_destroy(fx->ps);
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	p = rmca_params_find(fx->ps, "tcp_priority");
	assert_int_equal(p->source, RMCA_SRC_DEFAULT);
	assert_int_equal(p->v.i, 50);
}

static void home_config_serves_without_xdg(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;
	char path[160];

	unsetenv("XDG_CONFIG_HOME");
	snprintf(path, sizeof(path), "%s/.config", fx->dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.config/rmca", fx->dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/.config/rmca/params.conf", fx->dir);
	write_file(path, "RMCA_tcp_priority=9\n");
	write_file(fx->user_file, "tcp_priority = 2\n"); /* not looked at */
	p = resolve_prio(fx);
	assert_int_equal(p->source, RMCA_SRC_USER_FILE);
	assert_int_equal(p->v.i, 9);
	strcat(path, ":1");
	assert_string_equal(p->source_detail, path);
}

static void sources_are_read_once_at_create(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;

	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	setenv("RMCA_tcp_priority", "4", 1);
	write_file(fx->sys_file, "tcp_priority = 1\n");
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	p = rmca_params_find(fx->ps, "tcp_priority");
	assert_int_equal(p->source, RMCA_SRC_DEFAULT);
	assert_int_equal(p->v.i, 50);
}

static void env_names_are_case_sensitive(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;

	setenv("RMCA_TCP_PRIORITY", "4", 1);
	setenv("rmca_tcp_priority", "5", 1);
	p = resolve_prio(fx);
	assert_int_equal(p->source, RMCA_SRC_DEFAULT);
	unsetenv("rmca_tcp_priority");
}

/* ---- file syntax ---- */

static void file_syntax_comments_prefix_and_whitespace(void **state)
{
	struct fixture *fx = *state;
	static const struct rmca_param_def defs[] = {
		{.name = "a", .type = RMCA_PARAM_STRING},
		{.name = "b", .type = RMCA_PARAM_STRING},
		{.name = "c", .type = RMCA_PARAM_STRING, .def = "x"},
		{.name = "d", .type = RMCA_PARAM_INT},
		{.name = "e", .type = RMCA_PARAM_STRING},
	};
	struct capture c;
	char *out, detail[160];
	size_t i;

	write_file(fx->param_file, "# a comment\n"
				   "\n"
				   "   \t \n"
				   "a=1\n"
				   "  RMCA_b   =  two words  \t\r\n"
				   "c =   # value is empty\n"
				   "d = 1\n"
				   "d = 2 # the later line wins\n"
				   "e = no newline at the end");
	setenv("RMCA_param_file", fx->param_file, 1);
	capture_begin(&c);
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	for (i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		assert_int_equal(rmca_params_register(fx->ps, NULL, &defs[i]),
				 0);
	rmca_params_check_unknown(fx->ps);
	out = capture_end(&c);
	assert_string_equal(out, "");
	free(out);
	assert_string_equal(rmca_params_find(fx->ps, "a")->text, "1");
	assert_string_equal(rmca_params_find(fx->ps, "b")->text, "two words");
	assert_string_equal(rmca_params_find(fx->ps, "c")->text, "");
	assert_int_equal(rmca_params_find(fx->ps, "c")->source,
			 RMCA_SRC_PARAM_FILE);
	assert_int_equal(rmca_params_find(fx->ps, "d")->v.i, 2);
	snprintf(detail, sizeof(detail), "%s:8", fx->param_file);
	assert_string_equal(rmca_params_find(fx->ps, "d")->source_detail,
			    detail);
	assert_string_equal(rmca_params_find(fx->ps, "e")->text,
			    "no newline at the end");
}

static void malformed_lines_are_reported_and_skipped(void **state)
{
	struct fixture *fx = *state;
	static const struct rmca_param_def good = {.name = "good",
						   .type = RMCA_PARAM_INT};
	struct capture c;
	char *out, want[1024];

	write_file(fx->user_file, "no equals sign here\n"
				  "= 5\n"
				  "bad name = 1\n"
				  "bad-name = 1\n"
				  "good = 7\n");
	capture_begin(&c);
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	out = capture_end(&c);
	snprintf(want, sizeof(want),
		 "rmca: %1$s:1: expected 'name = value'; line skipped\n"
		 "rmca: %1$s:2: bad parameter name \"\" (letters, digits and "
		 "'_' only); line skipped\n"
		 "rmca: %1$s:3: bad parameter name \"bad name\" (letters, "
		 "digits and '_' only); line skipped\n"
		 "rmca: %1$s:4: bad parameter name \"bad-name\" (letters, "
		 "digits and '_' only); line skipped\n",
		 fx->user_file);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(rmca_params_register(fx->ps, NULL, &good), 0);
	assert_int_equal(rmca_params_find(fx->ps, "good")->v.i, 7);
	assert_int_equal(rmca_params_find(fx->ps, "good")->source,
			 RMCA_SRC_USER_FILE);
}

static void missing_files_are_fine_but_param_file_is_not(void **state)
{
	struct fixture *fx = *state;
	struct capture c;
	char *out, want[1024];

	/* No user or system file exists in the fixture. */
	capture_begin(&c);
	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	out = capture_end(&c);
	assert_string_equal(out, "");
	free(out);
	rmca_params_destroy(fx->ps);

	setenv("RMCA_param_file", fx->param_file, 1);
	capture_begin(&c);
	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	out = capture_end(&c);
	snprintf(want, sizeof(want),
		 "rmca: cannot read parameter file %s (RMCA_param_file): No "
		 "such file or directory\n",
		 fx->param_file);
	assert_string_equal(out, want);
	free(out);
}

/* ---- messages ---- */

static void bad_env_value_names_parameter_value_and_accepted(void **state)
{
	struct fixture *fx = *state;
	const struct rmca_param *p;
	struct capture c;
	char *out;

	setenv("RMCA_tcp_priority", "abc", 1);
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	capture_begin(&c);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def),
			 RMCA_ERR_INVALID);
	out = capture_end(&c);
	assert_string_equal(out,
			    "rmca: RMCA_tcp_priority=abc (environment): not an "
			    "integer; accepted: integer in 0..100\n");
	free(out);
	p = rmca_params_find(fx->ps, "tcp_priority");
	assert_non_null(p);
	assert_int_equal(p->error, RMCA_ERR_INVALID);
	assert_int_equal(p->v.i, 50);
	assert_string_equal(p->text, "50");
	assert_int_equal(p->source, RMCA_SRC_ENV);
	assert_string_equal(p->source_detail, "RMCA_tcp_priority");
	/* A second registration is still the same no-op. */
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
}

static void bad_file_value_names_file_and_line(void **state)
{
	struct fixture *fx = *state;
	struct capture c;
	char *out, want[1024];

	write_file(fx->sys_file, "\natomic_mode = gpu\n");
	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	capture_begin(&c);
	assert_int_equal(rmca_params_register(fx->ps, NULL, &enum_def),
			 RMCA_ERR_INVALID);
	out = capture_end(&c);
	snprintf(want, sizeof(want),
		 "rmca: RMCA_atomic_mode=gpu (%s:2): not an accepted value; "
		 "accepted: auto|device|cpu\n",
		 fx->sys_file);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(rmca_params_find(fx->ps, "atomic_mode")->v.e, 0);
}

static void unknown_env_variable_gets_a_suggestion(void **state)
{
	struct fixture *fx = *state;
	static const struct rmca_param_def ib = {.name = "ib_priority",
						 .type = RMCA_PARAM_INT};
	struct capture c;
	char *out;

	setenv("RMCA_ib_priorty", "3", 1);
	setenv("RMCA_param_file", "", 1); /* never reported */
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	assert_int_equal(rmca_params_register(fx->ps, "ib", &ib), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	capture_begin(&c);
	rmca_params_check_unknown(fx->ps);
	rmca_params_check_unknown(fx->ps); /* once per name */
	out = capture_end(&c);
	assert_string_equal(out,
			    "rmca: unknown parameter RMCA_ib_priorty "
			    "(environment); did you mean RMCA_ib_priority?\n");
	free(out);
}

static void unrelated_unknown_name_gets_no_suggestion(void **state)
{
	struct fixture *fx = *state;
	struct capture c;
	char *out;

	setenv("RMCA_frobnicate", "1", 1);
	setenv("RMCA_TCP_PRIORITY", "1", 1);
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	capture_begin(&c);
	rmca_params_check_unknown(fx->ps);
	out = capture_end(&c);
	assert_non_null(strstr(
		out,
		"rmca: unknown parameter RMCA_frobnicate (environment)\n"));
	assert_null(strstr(out, "RMCA_frobnicate (environment);"));
	/* Case is all that differs: worth a hint though far in edits. */
	assert_non_null(strstr(
		out, "rmca: unknown parameter RMCA_TCP_PRIORITY (environment); "
		     "did you mean RMCA_tcp_priority?\n"));
	assert_int_equal(count_lines(out), 2);
	free(out);
}

static void unknown_file_entry_is_reported_once_per_name(void **state)
{
	struct fixture *fx = *state;
	struct capture c;
	char *out, want[1024];

	write_file(fx->user_file, "tcp_prority = 1\n"
				  "tcp_priority = 2\n"
				  "tcp_prority = 3\n");
	write_file(fx->sys_file, "tcp_prority = 4\n");
	setenv("RMCA_tcp_prority", "5", 1);
	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	capture_begin(&c);
	rmca_params_check_unknown(fx->ps);
	out = capture_end(&c);
	/* The environment is read first, so it is the one reported. */
	assert_string_equal(out,
			    "rmca: unknown parameter RMCA_tcp_prority "
			    "(environment); did you mean RMCA_tcp_priority?\n");
	free(out);

	rmca_params_destroy(fx->ps);
	unsetenv("RMCA_tcp_prority");
	assert_int_equal(rmca_params_create(&fx->ps, fx->sys_dir), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	capture_begin(&c);
	rmca_params_check_unknown(fx->ps);
	out = capture_end(&c);
	snprintf(want, sizeof(want),
		 "rmca: unknown parameter RMCA_tcp_prority (%s:1); did you "
		 "mean RMCA_tcp_priority?\n",
		 fx->user_file);
	assert_string_equal(out, want);
	free(out);
}

static void name_registered_later_is_not_unknown(void **state)
{
	struct fixture *fx = *state;
	struct capture c;
	char *out;

	setenv("RMCA_tcp_priority", "9", 1);
	assert_int_equal(rmca_params_create(&fx->ps, NULL), 0);
	assert_int_equal(rmca_params_register(fx->ps, "tcp", &prio_def), 0);
	capture_begin(&c);
	rmca_params_check_unknown(fx->ps);
	out = capture_end(&c);
	assert_string_equal(out, "");
	free(out);
}

/* ---- log ---- */

static void vlog_helper(int level, const char *who, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void vlog_helper(int level, const char *who, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rmca_vlog(level, who, fmt, ap);
	va_end(ap);
}

static void log_prints_one_prefixed_line_per_call(void **state)
{
	struct capture c;
	char *out, big[2000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	capture_begin(&c);
	rmca_log(0, "plain %d", 1);
	rmca_log(0, "has newline\n");
	vlog_helper(0, "tcp", "from %s", "a component");
	rmca_log(0, "%s", big);
	out = capture_end(&c);
	assert_int_equal(
		strncmp(out,
			"rmca: plain 1\n"
			"rmca: has newline\n"
			"rmca: tcp: from a component\n"
			"rmca: xxx",
			strlen("rmca: plain 1\nrmca: has newline\n"
			       "rmca: tcp: from a component\nrmca: xxx")),
		0);
	assert_int_equal(strlen(out), strlen("rmca: plain 1\n"
					     "rmca: has newline\n"
					     "rmca: tcp: from a component\n") +
					      strlen("rmca: \n") + sizeof(big) -
					      1);
	assert_int_equal(count_lines(out), 4);
	free(out);
}

static void log_level_is_filtered_by_verbose(void **state)
{
	struct capture c;
	char *out;

	rmca_log_verbose = 0;
	capture_begin(&c);
	rmca_log(1, "info hidden");
	rmca_log(2, "debug hidden");
	rmca_log(0, "error shown");
	rmca_log_verbose = 1;
	rmca_log(1, "info shown");
	rmca_log(2, "debug hidden");
	rmca_log_verbose = 2;
	vlog_helper(2, "ib", "debug shown");
	rmca_log_verbose = 0;
	out = capture_end(&c);
	assert_string_equal(out, "rmca: error shown\n"
				 "rmca: info shown\n"
				 "rmca: ib: debug shown\n");
	free(out);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(type_and_source_names),
		cmocka_unit_test(bool_accepts_every_spelling),
		cmocka_unit_test(bool_rejects_other_words),
		cmocka_unit_test(int_accepts_decimal_and_hex),
		cmocka_unit_test(int_rejects_non_integers),
		cmocka_unit_test(int_range_is_checked_when_min_below_max),
		cmocka_unit_test(size_accepts_suffixes),
		cmocka_unit_test(size_rejects_what_is_not_a_byte_count),
		cmocka_unit_test(enum_accepts_listed_values_exactly),
		cmocka_unit_test(list_value_is_validated),
		cmocka_unit_test(string_accepts_anything),
		T(default_applies_without_any_source),
		T(null_default_is_the_zero_of_the_type),
		T(register_copies_the_definition),
		T(register_twice_same_type_is_a_noop),
		T(bad_definitions_are_refused),
		T(params_iterate_in_registration_order),
		T(env_beats_param_file),
		T(param_file_beats_user_file),
		T(user_file_beats_system_file),
		T(system_file_beats_default),
		T(home_config_serves_without_xdg),
		T(sources_are_read_once_at_create),
		T(env_names_are_case_sensitive),
		T(file_syntax_comments_prefix_and_whitespace),
		T(malformed_lines_are_reported_and_skipped),
		T(missing_files_are_fine_but_param_file_is_not),
		T(bad_env_value_names_parameter_value_and_accepted),
		T(bad_file_value_names_file_and_line),
		T(unknown_env_variable_gets_a_suggestion),
		T(unrelated_unknown_name_gets_no_suggestion),
		T(unknown_file_entry_is_reported_once_per_name),
		T(name_registered_later_is_not_unknown),
		cmocka_unit_test(log_prints_one_prefixed_line_per_call),
		cmocka_unit_test(log_level_is_filtered_by_verbose),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
