// SPDX-License-Identifier: BSD-3-Clause
/*
 * Component loading: broken plugins are refused one by one, each with one
 * log line naming the file and the reason, and never keep a good one out.
 * The plugins are real shared objects (test/plugins/), copied into temporary
 * directories for each case.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "registry.h"

#define MAX_DIRS 3

struct fixture {
	char base[PATH_MAX / 2]; /* holds the dirs and the log */
	char dirs[MAX_DIRS][PATH_MAX];
	char log_path[PATH_MAX];
	int saved_stderr;
	char *log; /* what the last capture saw */
};

static const char *plugin_dir(void)
{
	static char dir[PATH_MAX];
	const char *b = getenv("RMCATEST_BUILDDIR");

	snprintf(dir, sizeof(dir), "%s/.libs", b ? b : ".");
	return dir;
}

static void plugin_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/rmca_%s.so", plugin_dir(), name);
}

static char *read_all(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	FILE *f;

	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)st.st_size, f),
			 (size_t)st.st_size);
	buf[st.st_size] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)st.st_size;
	return buf;
}

static void write_file(const char *dir, const char *name, const void *data,
		       size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	write_file(dir, name, text, strlen(text));
}

/* Copy test plugin rmca_<plugin>.so into dir as name, keeping keep bytes
 * (0: all). */
static void copy_plugin(const char *plugin, const char *dir, const char *name,
			size_t keep)
{
	char src[PATH_MAX];
	size_t len;
	char *data;

	plugin_path(plugin, src, sizeof(src));
	data = read_all(src, &len);
	if (keep && keep < len)
		len = keep;
	write_file(dir, name, data, len);
	free(data);
}

static void capture_start(struct fixture *f)
{
	int fd;

	free(f->log);
	f->log = NULL;
	snprintf(f->log_path, sizeof(f->log_path), "%s/log-XXXXXX", f->base);
	fd = mkstemp(f->log_path);
	assert_true(fd >= 0);
	fflush(stderr);
	f->saved_stderr = dup(STDERR_FILENO);
	assert_true(f->saved_stderr >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

static const char *capture_end(struct fixture *f)
{
	fflush(stderr);
	dup2(f->saved_stderr, STDERR_FILENO);
	close(f->saved_stderr);
	f->log = read_all(f->log_path, NULL);
	unlink(f->log_path);
	return f->log;
}

static int count_lines(const char *text)
{
	int n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* Scan with stderr captured into f->log. */
static int scan(struct fixture *f, struct rmca_registry *r, const char *dirs,
		const char *pkglibdir)
{
	int ret;

	capture_start(f);
	ret = rmca_registry_scan(r, dirs, pkglibdir);
	capture_end(f);
	return ret;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (!f)
		return -1;
	snprintf(f->base, sizeof(f->base), "%s/rmca-registry-XXXXXX",
		 tmp ? tmp : "/tmp");
	if (!mkdtemp(f->base))
		return -1;
	for (int i = 0; i < MAX_DIRS; i++) {
		snprintf(f->dirs[i], sizeof(f->dirs[i]), "%s/d%d", f->base, i);
		if (mkdir(f->dirs[i], 0700))
			return -1;
	}
	rmca_log_verbose = 0;
	*state = f;
	return 0;
}

static void remove_dir(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	char path[PATH_MAX];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < MAX_DIRS; i++)
		remove_dir(f->dirs[i]);
	rmdir(f->base);
	free(f->log);
	free(f);
	rmca_log_verbose = 0;
	return 0;
}

static char *path_in(const char *dir, const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* The only entry is refused; the log holds exactly "rmca: path: error". */
static const struct rmca_component_entry *
assert_one_refusal(struct fixture *f, struct rmca_registry *r,
		   const char *name)
{
	const struct rmca_component_entry *e;
	char line[2 * PATH_MAX];

	assert_int_equal(r->n, 1);
	e = &r->entries[0];
	assert_string_equal(e->path, path_in(f->dirs[0], name));
	assert_null(e->comp);
	assert_null(e->handle);
	assert_non_null(e->error);
	assert_true(e->error[0] != '\0');
	snprintf(line, sizeof(line), "rmca: %s: %s\n", e->path, e->error);
	assert_string_equal(f->log, line);
	return e;
}

static void test_garbage_file_refused_with_loader_error(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	char text[256];

	memset(text, 'x', sizeof(text));
	write_file(f->dirs[0], "rmca_garbage.so", text, sizeof(text));
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_garbage.so");
	/* the loader's own words, not libltdl's "file not found" */
	assert_string_equal(e->error, "invalid ELF header");
	rmca_registry_release(&r);
}

static void test_unresolved_symbol_refused_with_its_name(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	copy_plugin("unresolved", f->dirs[0], "rmca_unresolved.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_unresolved.so");
	assert_non_null(strstr(e->error, "rmca_test_no_such_symbol"));
	rmca_registry_release(&r);
}

static void test_truncated_object_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;

	copy_plugin("dummy", f->dirs[0], "rmca_trunc.so", 1024);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	assert_one_refusal(f, &r, "rmca_trunc.so");
	rmca_registry_release(&r);
}

static void test_missing_symbol_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	copy_plugin("nosym", f->dirs[0], "rmca_nosym.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_nosym.so");
	assert_string_equal(e->error, "no symbol rmca_component");
	rmca_registry_release(&r);
}

static void test_wrong_abi_version_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	copy_plugin("badabi", f->dirs[0], "rmca_badabi.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_badabi.so");
	assert_string_equal(e->error, "ABI version 14, this core loads 5 to 13");
	rmca_registry_release(&r);
}

static void test_too_old_abi_version_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	copy_plugin("abi1", f->dirs[0], "rmca_abi1.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_abi1.so");
	assert_string_equal(e->error, "ABI version 1, this core loads 5 to 13");
	rmca_registry_release(&r);
}

static void test_ops_table_short_of_mandatory_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;
	char want[128];

	copy_plugin("abitiny", f->dirs[0], "rmca_abitiny.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_abitiny.so");
	snprintf(want, sizeof(want),
		 "module ops size %zu, this core loads %zu to %zu",
		 offsetof(struct rmca_module_ops, send),
		 offsetof(struct rmca_module_ops, send_inv),
		 sizeof(struct rmca_module_ops));
	assert_string_equal(e->error, want);
	rmca_registry_release(&r);
}

/* The one loaded entry of a scan of dirs[0], holding plugin as name. */
static struct rmca_component_entry *load_one(struct fixture *f,
					     struct rmca_registry *r,
					     const char *plugin,
					     const char *name)
{
	char file[64];

	snprintf(file, sizeof(file), "rmca_%s.so", plugin);
	copy_plugin(plugin, f->dirs[0], file, 0);
	assert_int_equal(scan(f, r, f->dirs[0], NULL), 0);
	assert_string_equal(f->log, "");
	assert_int_equal(r->n, 1);
	assert_non_null(r->entries[0].comp);
	assert_string_equal(r->entries[0].comp->name, name);
	return &r->entries[0];
}

/* Open e's modules as a context does; returns what adopting them did. */
static int open_adopt(struct fixture *f, struct rmca_component_entry *e,
		      struct rmca_module ***mods, int *n)
{
	static const struct rmca_core core;
	int rc;

	assert_int_equal(e->comp->open(&core, mods, n), 0);
	assert_int_equal(*n, 1);
	capture_start(f);
	rc = rmca_registry_adopt(e, &core, mods, n);
	capture_end(f);
	return rc;
}

/* What the test plugin's send answers (plugins/abi.c). */
#define ABI_SEND_ANSWER (-4242)

/* Its connections and regions have no base the core could check. */
static void test_abi4_component_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	copy_plugin("abi4", f->dirs[0], "rmca_abi4.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_abi4.so");
	assert_string_equal(e->error, "ABI version 4, this core loads 5 to 13");
	rmca_registry_release(&r);
}

static void test_shorter_ops_table_reads_null_beyond(void **state)
{
	struct fixture *f = *state;
	struct rmca_component_entry *e;
	const struct rmca_module_ops *ops, *first;
	struct rmca_module **mods, **again;
	struct rmca_registry r;
	int n, m;

	e = load_one(f, &r, "abishort", "abishort");
	assert_int_equal(e->ops_size,
			 offsetof(struct rmca_module_ops, send_inv));
	assert_int_equal(open_adopt(f, e, &mods, &n), 0);
	assert_string_equal(f->log, "");
	ops = mods[0]->ops;
	/* the plugin's send_inv lies past its stated end (and aborts) */
	assert_null(ops->send_inv);
	assert_int_equal(ops->send(NULL, NULL, 0, NULL, NULL), ABI_SEND_ANSWER);
	assert_non_null(ops->mr_reg);
	/* a second open shares the widened table */
	first = ops;
	assert_int_equal(open_adopt(f, e, &again, &m), 0);
	assert_ptr_equal(again[0]->ops, first);
	e->comp->close(NULL, again, m);
	e->comp->close(NULL, mods, n);
	rmca_registry_release(&r);
}

/* More bytes of its own in each request than the core gives. */
static void test_component_asking_too_many_request_bytes_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;
	char want[128];

	copy_plugin("bigreq", f->dirs[0], "rmca_bigreq.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_bigreq.so");
	snprintf(want, sizeof(want),
		 "request bytes %u, this core gives at most %u",
		 RMCA_COMPONENT_REQ_MAX + 1, RMCA_COMPONENT_REQ_MAX);
	assert_string_equal(e->error, want);
	rmca_registry_release(&r);
}

/* Built before req_size: the core reads none from it. */
static void test_abi8_component_loads_without_request_bytes(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	e = load_one(f, &r, "abi8", "abi8");
	assert_int_equal(e->req_size, 0);
	rmca_registry_release(&r);
}

static void test_module_lacking_mandatory_op_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_component_entry *e;
	struct rmca_module **mods;
	struct rmca_registry r;
	char want[2 * PATH_MAX];
	int n;

	e = load_one(f, &r, "nomr", "nomr");
	assert_int_equal(open_adopt(f, e, &mods, &n), RMCA_ERR_UNSUPPORTED);
	assert_null(mods);
	assert_int_equal(n, 0);
	snprintf(want, sizeof(want), "rmca: %s: module abi0 lacks mr_reg\n",
		 e->path);
	assert_string_equal(f->log, want);
	rmca_registry_release(&r);
}

static void test_missing_entry_points_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	const struct rmca_component_entry *e;

	copy_plugin("noopen", f->dirs[0], "rmca_noopen.so", 0);
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	e = assert_one_refusal(f, &r, "rmca_noopen.so");
	assert_string_equal(e->error, "component noopen lacks open()");
	rmca_registry_release(&r);
}

static void test_good_plugin_loads_among_broken_ones(void **state)
{
	static const char *const order[] = {
		"rmca_badabi.so", "rmca_dummy.so", "rmca_garbage.so",
		"rmca_noopen.so", "rmca_nosym.so", "rmca_trunc.so",
	};
	struct fixture *f = *state;
	struct rmca_registry r;

	copy_plugin("nosym", f->dirs[0], "rmca_nosym.so", 0);
	copy_plugin("badabi", f->dirs[0], "rmca_badabi.so", 0);
	copy_plugin("noopen", f->dirs[0], "rmca_noopen.so", 0);
	copy_plugin("dummy", f->dirs[0], "rmca_trunc.so", 1024);
	copy_plugin("dummy", f->dirs[0], "rmca_dummy.so", 0);
	write_text(f->dirs[0], "rmca_garbage.so", "garbage");
	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);

	/* sorted by name, whatever readdir said */
	assert_int_equal(r.n, sizeof(order) / sizeof(order[0]));
	for (size_t i = 0; i < r.n; i++) {
		const struct rmca_component_entry *e = &r.entries[i];

		assert_string_equal(e->path, path_in(f->dirs[0], order[i]));
		if (i == 1) {
			assert_non_null(e->comp);
			assert_non_null(e->handle);
			assert_null(e->error);
			assert_string_equal(e->comp->name, "dummy");
			assert_int_equal(e->comp->priority, 1);
		} else {
			assert_null(e->comp);
			assert_non_null(e->error);
			assert_non_null(strstr(f->log, e->path));
		}
	}
	/* one line per refused file, nothing about the good one */
	assert_int_equal(count_lines(f->log), 5);
	assert_null(strstr(f->log, "rmca_dummy.so"));
	rmca_registry_release(&r);
}

static void test_first_directory_wins(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	char dirs[3 * PATH_MAX];

	copy_plugin("dummy", f->dirs[0], "rmca_dummy.so", 0);
	copy_plugin("dummy", f->dirs[1], "rmca_dummy.so", 0);
	snprintf(dirs, sizeof(dirs), "%s:%s", f->dirs[0], f->dirs[1]);

	assert_int_equal(scan(f, &r, dirs, NULL), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.entries[0].path,
			    path_in(f->dirs[0], "rmca_dummy.so"));
	assert_non_null(r.entries[0].comp);
	/* a duplicate is no error: silent at the default verbosity */
	assert_string_equal(f->log, "");
	rmca_registry_release(&r);

	rmca_log_verbose = 1;
	assert_int_equal(scan(f, &r, dirs, NULL), 0);
	assert_int_equal(r.n, 1);
	assert_non_null(strstr(f->log, path_in(f->dirs[1], "rmca_dummy.so")));
	assert_non_null(strstr(f->log, "skipped"));
	rmca_registry_release(&r);
}

static void test_unloadable_file_does_not_claim_name(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	char dirs[3 * PATH_MAX];

	write_text(f->dirs[0], "rmca_dummy.so", "garbage");
	copy_plugin("dummy", f->dirs[1], "rmca_dummy.so", 0);
	snprintf(dirs, sizeof(dirs), "%s:%s", f->dirs[0], f->dirs[1]);

	assert_int_equal(scan(f, &r, dirs, NULL), 0);
	assert_int_equal(r.n, 2);
	assert_null(r.entries[0].comp);
	assert_string_equal(r.entries[0].path,
			    path_in(f->dirs[0], "rmca_dummy.so"));
	assert_non_null(r.entries[1].comp);
	assert_string_equal(r.entries[1].path,
			    path_in(f->dirs[1], "rmca_dummy.so"));
	assert_int_equal(count_lines(f->log), 1);
	rmca_registry_release(&r);
}

static void test_pkglibdir_scanned_after_path(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;

	copy_plugin("dummy", f->dirs[0], "rmca_dummy.so", 0);
	copy_plugin("dummy", f->dirs[1], "rmca_dummy.so", 0);
	copy_plugin("badabi", f->dirs[1], "rmca_badabi.so", 0);

	assert_int_equal(scan(f, &r, f->dirs[0], f->dirs[1]), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.entries[0].path,
			    path_in(f->dirs[0], "rmca_dummy.so"));
	assert_non_null(r.entries[0].comp);
	assert_string_equal(r.entries[1].path,
			    path_in(f->dirs[1], "rmca_badabi.so"));
	assert_null(r.entries[1].comp);
	rmca_registry_release(&r);

	/* pkglibdir alone is enough */
	assert_int_equal(scan(f, &r, NULL, f->dirs[1]), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.entries[1].path,
			    path_in(f->dirs[1], "rmca_dummy.so"));
	assert_non_null(r.entries[1].comp);
	rmca_registry_release(&r);
}

static void test_so_preferred_over_la(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;

	copy_plugin("dummy", f->dirs[0], "rmca_dummy.so", 0);
	write_text(f->dirs[0], "rmca_dummy.la", "not a libtool archive\n");

	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.entries[0].path,
			    path_in(f->dirs[0], "rmca_dummy.so"));
	assert_non_null(r.entries[0].comp);
	assert_string_equal(f->log, "");
	rmca_registry_release(&r);
}

static void test_la_loaded_when_no_so(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;

	/* a libtool archive naming its shared object, as installed trees
	 * that ship only .la files have them */
	copy_plugin("dummy", f->dirs[0], "dummy-impl.so", 0);
	write_text(f->dirs[0], "rmca_viala.la",
		   "# rmca_viala.la - a libtool library file\n"
		   "dlname='dummy-impl.so'\n"
		   "library_names='dummy-impl.so'\n"
		   "old_library=''\n"
		   "dependency_libs=''\n"
		   "installed=no\n"
		   "shouldnotlink=yes\n"
		   "libdir='/nowhere'\n");

	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.entries[0].path,
			    path_in(f->dirs[0], "rmca_viala.la"));
	assert_non_null(r.entries[0].comp);
	assert_string_equal(r.entries[0].comp->name, "dummy");
	rmca_registry_release(&r);
}

static void test_same_name_in_two_files_refused(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;

	copy_plugin("dummy", f->dirs[0], "rmca_dummy.so", 0);
	copy_plugin("dummy", f->dirs[0], "rmca_dummy2.so", 0);

	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	assert_int_equal(r.n, 2);
	assert_non_null(r.entries[0].comp);
	assert_null(r.entries[1].comp);
	assert_non_null(strstr(r.entries[1].error, "already loaded"));
	assert_int_equal(count_lines(f->log), 1);
	rmca_registry_release(&r);
}

static void test_missing_and_empty_dirs_ignored(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;
	char dirs[3 * PATH_MAX];

	copy_plugin("dummy", f->dirs[0], "rmca_dummy.so", 0);
	snprintf(dirs, sizeof(dirs), "::%s/nonexistent:%s:", f->dirs[1],
		 f->dirs[0]);

	assert_int_equal(scan(f, &r, dirs, "/nonexistent/rmca"), 0);
	assert_int_equal(r.n, 1);
	assert_non_null(r.entries[0].comp);
	assert_string_equal(f->log, "");
	rmca_registry_release(&r);
}

static void test_other_files_ignored(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r;

	write_text(f->dirs[0], "librmca_x.so", "garbage");
	write_text(f->dirs[0], "rmca_.so", "garbage");
	write_text(f->dirs[0], "rmca_x.so.1", "garbage");
	write_text(f->dirs[0], "rmca_x.lai", "garbage");
	write_text(f->dirs[0], "rmca_x.so~", "garbage");
	write_text(f->dirs[0], "README", "garbage");

	assert_int_equal(scan(f, &r, f->dirs[0], NULL), 0);
	assert_int_equal(r.n, 0);
	assert_null(r.entries);
	assert_string_equal(f->log, "");
	rmca_registry_release(&r);
}

/* libltdl is counted: releasing one registry leaves another's code mapped. */
static void test_registries_are_independent(void **state)
{
	struct fixture *f = *state;
	struct rmca_registry r1, r2, empty;

	copy_plugin("dummy", f->dirs[0], "rmca_dummy.so", 0);
	copy_plugin("dummy", f->dirs[1], "rmca_dummy.so", 0);

	assert_int_equal(scan(f, &empty, f->dirs[2], NULL), 0);
	assert_int_equal(empty.n, 0);
	assert_int_equal(scan(f, &r1, f->dirs[0], NULL), 0);
	assert_int_equal(scan(f, &r2, f->dirs[1], NULL), 0);
	rmca_registry_release(&empty);
	rmca_registry_release(&r1);
	rmca_registry_release(&r1); /* twice is harmless */
	assert_int_equal(r2.n, 1);
	assert_string_equal(r2.entries[0].comp->name, "dummy");
	assert_string_equal(r2.entries[0].comp->description,
			    "test component with one module and no abilities");
	rmca_registry_release(&r2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_garbage_file_refused_with_loader_error, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_unresolved_symbol_refused_with_its_name, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_truncated_object_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_symbol_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_abi_version_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_too_old_abi_version_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_ops_table_short_of_mandatory_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_component_asking_too_many_request_bytes_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_abi8_component_loads_without_request_bytes, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_abi4_component_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_shorter_ops_table_reads_null_beyond, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_module_lacking_mandatory_op_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_missing_entry_points_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_good_plugin_loads_among_broken_ones, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_first_directory_wins,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_unloadable_file_does_not_claim_name, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_pkglibdir_scanned_after_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_so_preferred_over_la,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_la_loaded_when_no_so,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_same_name_in_two_files_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_missing_and_empty_dirs_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_files_ignored, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_registries_are_independent,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
