// SPDX-License-Identifier: BSD-3-Clause
/*
 * Component discovery: every rmca_<name>.so (or .la) in RMCA_component_path,
 * then in $(pkglibdir), opened with libltdl. A bad file costs one log line and
 * an entry that rmca_info can show; it never stops the scan.
 */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ltdl.h>

#include "log.h"
#include "registry.h"

#define RMCA_PREFIX_NAME "rmca_"
#define RMCA_ELF_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)

/* A candidate file within one directory, before it is opened. */
struct rmca_candidate {
	char *base; /* "rmca_tcp" */
	char *file; /* "rmca_tcp.so" or "rmca_tcp.la" */
};

static char *rmca_strdup_printf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static char *rmca_strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static int rmca_candidate_cmp(const void *a, const void *b)
{
	const struct rmca_candidate *ca = a, *cb = b;

	return strcmp(ca->base, cb->base);
}

/* "rmca_tcp.so" -> 1 with *ext ".so"; 0 for anything that is no component. */
static int rmca_component_file(const char *name, const char **ext)
{
	size_t len = strlen(name);
	const char *dot;

	if (strncmp(name, RMCA_PREFIX_NAME, strlen(RMCA_PREFIX_NAME)))
		return 0;
	dot = strrchr(name, '.');
	if (!dot || dot == name + strlen(RMCA_PREFIX_NAME) ||
	    (size_t)(dot - name) + 1 >= len)
		return 0;
	if (strcmp(dot, ".so") && strcmp(dot, ".la"))
		return 0;
	*ext = dot;
	return 1;
}

static void rmca_candidates_free(struct rmca_candidate *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].base);
		free(c[i].file);
	}
	free(c);
}

/*
 * The component files of one directory, one per base name (.so preferred),
 * sorted by name: readdir order is arbitrary and loading must not be.
 */
static int rmca_list_dir(const char *dir, struct rmca_candidate **out,
			 size_t *nout)
{
	struct rmca_candidate *c = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*nout = 0;
	d = opendir(dir);
	if (!d)
		return 0; /* a missing directory is not an error */

	while ((de = readdir(d))) {
		const char *ext;
		size_t blen;
		size_t i;

		if (!rmca_component_file(de->d_name, &ext))
			continue;
		blen = (size_t)(ext - de->d_name);
		for (i = 0; i < n; i++)
			if (strlen(c[i].base) == blen &&
			    !strncmp(c[i].base, de->d_name, blen))
				break;
		if (i < n) {
			/* Same name seen with the other extension. */
			if (!strcmp(ext, ".so")) {
				char *f = strdup(de->d_name);

				if (!f)
					goto nomem;
				free(c[i].file);
				c[i].file = f;
			}
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			struct rmca_candidate *nc;

			nc = realloc(c, ncap * sizeof(*c));
			if (!nc)
				goto nomem;
			c = nc;
			cap = ncap;
		}
		c[n].base = strndup(de->d_name, blen);
		c[n].file = strdup(de->d_name);
		if (!c[n].base || !c[n].file) {
			free(c[n].base);
			free(c[n].file);
			goto nomem;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(c, n, sizeof(*c), rmca_candidate_cmp);
	*out = c;
	*nout = n;
	return 0;

nomem:
	closedir(d);
	rmca_candidates_free(c, n);
	return RMCA_ERR_NO_MEMORY;
}

static struct rmca_component_entry *rmca_registry_grow(struct rmca_registry *r)
{
	struct rmca_component_entry *e;

	e = realloc(r->entries, (r->n + 1) * sizeof(*e));
	if (!e)
		return NULL;
	r->entries = e;
	e = &r->entries[r->n];
	memset(e, 0, sizeof(*e));
	return e;
}

/* Whether the entry's file is base ("rmca_tcp") plus an extension. */
static int rmca_entry_has_base(const struct rmca_component_entry *e,
			       const char *base)
{
	const char *slash = strrchr(e->path, '/');
	const char *name = slash ? slash + 1 : e->path;
	const char *dot = strrchr(name, '.');
	size_t blen = strlen(base);

	return dot && (size_t)(dot - name) == blen &&
	       !strncmp(name, base, blen);
}

/* The loaded entry that already claims base, or NULL. */
static const struct rmca_component_entry *
rmca_registry_claimed(const struct rmca_registry *r, const char *base)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->entries[i].comp &&
		    rmca_entry_has_base(&r->entries[i], base))
			return &r->entries[i];
	return NULL;
}

static const struct rmca_component_entry *
rmca_registry_named(const struct rmca_registry *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->entries[i].comp &&
		    !strcmp(r->entries[i].comp->name, name))
			return &r->entries[i];
	return NULL;
}

#define RMCA_END_OF(type, member)                                              \
	(offsetof(type, member) + sizeof(((type *)0)->member))

/*
 * The ops every module must give (component.h, "Versioning"); the core calls
 * them without looking. Kept in name order, as the table's prefix is.
 */
static const struct {
	size_t off;
	const char *name;
} rmca_mandatory_ops[] = {
/* clang-format off */
#define RMCA_OP(op) { offsetof(struct rmca_module_ops, op), #op }
	RMCA_OP(addr), RMCA_OP(disconnect), RMCA_OP(flush), RMCA_OP(get),
	RMCA_OP(mr_dereg), RMCA_OP(mr_reg), RMCA_OP(mr_rkey), RMCA_OP(put),
	RMCA_OP(recv), RMCA_OP(send),
/* clang-format on */
#undef RMCA_OP
};

/* The shortest table that holds every mandatory op. */
#define RMCA_OPS_SIZE_MIN RMCA_END_OF(struct rmca_module_ops, send)

/* A member of an ops table of any size: NULL beyond its end. */
static void (*rmca_op_at(const struct rmca_module_ops *ops, size_t size,
			 size_t off))(void)
{
	void (*fn)(void);

	if (off + sizeof(fn) > size)
		return NULL;
	memcpy(&fn, (const char *)ops + off, sizeof(fn));
	return fn;
}

#define RMCA_OP_AT(ops, size, op)                                              \
	rmca_op_at(ops, size, offsetof(struct rmca_module_ops, op))

/* The first mandatory op the table lacks, or NULL. */
static const char *rmca_ops_missing(const struct rmca_module_ops *ops,
				    size_t size)
{
	size_t n = sizeof(rmca_mandatory_ops) / sizeof(rmca_mandatory_ops[0]);

	for (size_t i = 0; i < n; i++)
		if (!rmca_op_at(ops, size, rmca_mandatory_ops[i].off))
			return rmca_mandatory_ops[i].name;
	if (RMCA_OP_AT(ops, size, connect_start)) {
		if (!RMCA_OP_AT(ops, size, connect_poll))
			return "connect_poll (with connect_start)";
		if (!RMCA_OP_AT(ops, size, connect_abort))
			return "connect_abort (with connect_start)";
	} else if (!RMCA_OP_AT(ops, size, connect)) {
		return "connect or connect_start";
	}
	return NULL;
}

/*
 * Why comp cannot be used, or NULL; *ops_size gets the size of its ops
 * tables. abi_version is read first and alone: under another ABI the rest of
 * the struct may have any layout.
 */
static char *rmca_component_check(const struct rmca_registry *r,
				  const struct rmca_component *comp,
				  size_t *ops_size)
{
	const struct rmca_component_entry *other;

	if (comp->abi_version < RMCA_COMPONENT_ABI_MIN ||
	    comp->abi_version > RMCA_COMPONENT_ABI_VERSION)
		return rmca_strdup_printf(
			"ABI version %u, this core loads %u to %u",
			comp->abi_version, RMCA_COMPONENT_ABI_MIN,
			RMCA_COMPONENT_ABI_VERSION);
	*ops_size = comp->module_ops_size;
	if (*ops_size < RMCA_OPS_SIZE_MIN ||
	    *ops_size > sizeof(struct rmca_module_ops) ||
	    *ops_size % sizeof(void (*)(void)))
		return rmca_strdup_printf(
			"module ops size %zu, this core loads %zu to %zu",
			*ops_size, (size_t)RMCA_OPS_SIZE_MIN,
			sizeof(struct rmca_module_ops));
	/* read only where the component's ABI has it */
	if (comp->abi_version >= 9 && comp->req_size > RMCA_COMPONENT_REQ_MAX)
		return rmca_strdup_printf(
			"request bytes %zu, this core gives at most %u",
			comp->req_size, RMCA_COMPONENT_REQ_MAX);
	if (!comp->name || !comp->name[0])
		return strdup("component has no name");
	if (!comp->open || !comp->close)
		return rmca_strdup_printf("component %s lacks %s", comp->name,
					  !comp->open ? "open()" : "close()");
	other = rmca_registry_named(r, comp->name);
	if (other)
		return rmca_strdup_printf("component %s already loaded from %s",
					  comp->name, other->path);
	return NULL;
}

static int rmca_pread_all(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	return n >= 0 && (size_t)n == len ? 0 : -1;
}

/*
 * A shared object cut short maps fine and then faults (SIGBUS) when the
 * loader touches a segment past the end of the file, so the segments are
 * checked against the file size before dlopen sees it. Anything that is not
 * a native ELF object is left to the loader, whose message is better.
 * Returns the reason it is truncated, or NULL.
 */
static char *rmca_elf_truncated(const char *path)
{
	ElfW(Ehdr) eh;
	struct stat st;
	char *why = NULL;
	uint64_t end;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || rmca_pread_all(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != RMCA_ELF_CLASS ||
	    eh.e_phentsize != sizeof(ElfW(Phdr)))
		goto out;

	end = (uint64_t)eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(ElfW(Phdr));
	if (end > (uint64_t)st.st_size)
		goto truncated;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;

		if (rmca_pread_all(fd, &ph, sizeof(ph),
				   (off_t)(eh.e_phoff + i * sizeof(ph))))
			goto out;
		if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC)
			continue;
		end = (uint64_t)ph.p_offset + ph.p_filesz;
		if (end > (uint64_t)st.st_size)
			goto truncated;
	}
out:
	close(fd);
	return why;

truncated:
	why = rmca_strdup_printf("truncated: needs %llu bytes, file has %lld",
				 (unsigned long long)end,
				 (long long)st.st_size);
	if (!why)
		why = strdup("truncated");
	goto out;
}

static const char *rmca_dlerror(void)
{
	const char *msg = lt_dlerror();

	return msg ? msg : "cannot load";
}

/*
 * libltdl reports every failure to open a file as "file not found", which
 * hides "invalid ELF header" or "undefined symbol: foo". For a shared object
 * the system loader is asked once more, only for its message.
 */
static char *rmca_load_error(const char *path)
{
	const char *ltmsg = rmca_dlerror();
	size_t plen = strlen(path);
	const char *msg;
	void *h;

	if (!strstr(path, ".so"))
		return strdup(ltmsg);
	dlerror();
	h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	if (h) {
		dlclose(h);
		return strdup(ltmsg);
	}
	msg = dlerror();
	if (!msg)
		return strdup(ltmsg);
	/* glibc starts with "path: ", which the log line already says */
	if (!strncmp(msg, path, plen) && !strncmp(msg + plen, ": ", 2))
		msg += plen + 2;
	return strdup(msg);
}

/* Open one file into a new entry; out of memory is the only failure. */
static int rmca_registry_try(struct rmca_registry *r, const char *path)
{
	struct rmca_component_entry *e;
	const struct rmca_component *comp;
	lt_dlhandle h;
	char *why = NULL;

	e = rmca_registry_grow(r);
	if (!e)
		return RMCA_ERR_NO_MEMORY;
	e->path = strdup(path);
	if (!e->path)
		return RMCA_ERR_NO_MEMORY;

	why = rmca_elf_truncated(path);
	if (why)
		goto refuse;
	lt_dlerror(); /* drop any stale message */
	h = lt_dlopenext(path);
	if (!h) {
		why = rmca_load_error(path);
		goto refuse;
	}
	comp = lt_dlsym(h, RMCA_COMPONENT_SYMBOL);
	if (!comp) {
		why = strdup("no symbol " RMCA_COMPONENT_SYMBOL);
		goto refuse_close;
	}
	why = rmca_component_check(r, comp, &e->ops_size);
	if (why)
		goto refuse_close;

	e->handle = h;
	e->comp = comp;
	e->req_size = comp->abi_version >= 9 ? comp->req_size : 0;
	e->flags = comp->abi_version >= 10 ? comp->flags : 0;
	r->n++;
	rmca_log(1, "%s: loaded component %s", path, comp->name);
	return 0;

refuse_close:
	/* Either the reason was formatted or memory ran out: close anyway, a
	 * refused plugin keeps no code mapped. */
	lt_dlclose(h);
refuse:
	if (!why) {
		free(e->path);
		return RMCA_ERR_NO_MEMORY;
	}
	e->error = why;
	r->n++;
	rmca_log(0, "%s: %s", path, why);
	return 0;
}

static int rmca_registry_scan_dir(struct rmca_registry *r, const char *dir)
{
	struct rmca_candidate *c;
	size_t n;
	int ret;

	ret = rmca_list_dir(dir, &c, &n);
	if (ret)
		return ret;
	for (size_t i = 0; i < n && !ret; i++) {
		const struct rmca_component_entry *first;
		char *path;

		path = rmca_strdup_printf("%s/%s", dir, c[i].file);
		if (!path) {
			ret = RMCA_ERR_NO_MEMORY;
			break;
		}
		first = rmca_registry_claimed(r, c[i].base);
		if (first)
			rmca_log(1, "%s: skipped, %s already loaded from %s",
				 path, c[i].base, first->path);
		else
			ret = rmca_registry_try(r, path);
		free(path);
	}
	rmca_candidates_free(c, n);
	return ret;
}

int rmca_registry_scan(struct rmca_registry *r, const char *dirs,
		       const char *pkglibdir)
{
	const char *p = dirs ? dirs : "";
	int ret = 0;

	memset(r, 0, sizeof(*r));
	/* libltdl counts its users: this reference is dropped by release, or
	 * below when nothing was found. */
	if (lt_dlinit()) {
		rmca_log(0, "libltdl: %s", rmca_dlerror());
		return RMCA_ERR_NO_MEMORY;
	}

	while (*p && !ret) {
		size_t len = strcspn(p, ":");

		if (len) {
			char *dir = strndup(p, len);

			if (!dir)
				ret = RMCA_ERR_NO_MEMORY;
			else
				ret = rmca_registry_scan_dir(r, dir);
			free(dir);
		}
		p += len;
		if (*p == ':')
			p++;
	}
	if (!ret && pkglibdir && pkglibdir[0])
		ret = rmca_registry_scan_dir(r, pkglibdir);

	/* The libltdl reference is held exactly while entries exist. */
	if (ret || !r->n) {
		if (r->entries)
			rmca_registry_release(r);
		else
			lt_dlexit();
	}
	return ret;
}

/* A component's table of a shorter size, copied into the core's size. */
struct rmca_wide_ops {
	struct rmca_wide_ops *next;
	const struct rmca_module_ops *src;
	struct rmca_module_ops ops;
};

static const struct rmca_module_ops *
rmca_widen(struct rmca_component_entry *e, const struct rmca_module_ops *src)
{
	struct rmca_wide_ops *w;

	for (w = e->wide; w; w = w->next)
		if (w->src == src)
			return &w->ops;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->src = src;
	memcpy(&w->ops, src, e->ops_size);
	w->next = e->wide;
	e->wide = w;
	return &w->ops;
}

int rmca_registry_adopt(struct rmca_component_entry *e,
			const struct rmca_core *core,
			struct rmca_module ***modules, int *count)
{
	int rc = 0;

	for (int i = 0; i < *count && !rc; i++) {
		struct rmca_module *m = (*modules)[i];
		const char *missing;

		missing = m->ops ? rmca_ops_missing(m->ops, e->ops_size)
				 : "ops (none)";
		if (missing) {
			rmca_log(0, "%s: module %.64s lacks %s", e->path,
				 m->device, missing);
			rc = RMCA_ERR_UNSUPPORTED;
		} else if (e->ops_size < sizeof(struct rmca_module_ops)) {
			const struct rmca_module_ops *wide;

			wide = rmca_widen(e, m->ops);
			if (wide)
				m->ops = wide;
			else
				rc = RMCA_ERR_NO_MEMORY;
		}
	}
	if (rc) {
		/* A module the core cannot drive spoils its siblings: close()
		 * takes the array whole. */
		e->comp->close(core, *modules, *count);
		*modules = NULL;
		*count = 0;
	}
	return rc;
}

int rmca_registry_made_by(const struct rmca_module *m,
			  const struct rmca_module *made_by, const char *what)
{
	if (made_by == m)
		return 0;
	rmca_log(0,
		 "module %.64s handed out a %s whose base names %s (component "
		 "ABI %u: the module embeds the base and sets module)",
		 m->device, what, made_by ? "another module" : "no module",
		 RMCA_COMPONENT_ABI_VERSION);
	return RMCA_ERR_PROTOCOL;
}

void rmca_registry_release(struct rmca_registry *r)
{
	if (!r->entries)
		return;
	for (size_t i = r->n; i-- > 0;) {
		struct rmca_component_entry *e = &r->entries[i];

		while (e->wide) {
			struct rmca_wide_ops *w = e->wide;

			e->wide = w->next;
			free(w);
		}
		if (e->handle)
			lt_dlclose(e->handle);
		free(e->path);
		free(e->error);
	}
	free(r->entries);
	r->entries = NULL;
	r->n = 0;
	lt_dlexit();
}
