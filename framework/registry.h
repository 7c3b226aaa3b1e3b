/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Finding and loading components: rmca_<name>.so in the directories of
 * RMCA_component_path (first) and in $(pkglibdir), opened with libltdl.
 */
#ifndef RMCA_REGISTRY_H
#define RMCA_REGISTRY_H

#include <stddef.h>

#include <rmca/component.h>

struct rmca_wide_ops;

struct rmca_component_entry {
	char *path;   /* file that was opened (or tried) */
	void *handle; /* lt_dlhandle; NULL when loading failed */
	const struct rmca_component *comp; /* NULL when refused */
	char *error;		    /* why it was refused; NULL when loaded */
	size_t ops_size;	    /* the component's module_ops_size */
	size_t req_size;	    /* its req_size (0 before ABI 9) */
	unsigned flags;		    /* its flags (0 before ABI 10) */
	struct rmca_wide_ops *wide; /* its shorter tables, widened */
};

struct rmca_registry {
	struct rmca_component_entry *entries;
	size_t n;
};

/*
 * Scan dirs (colon list; empty entries skipped) in order, then pkglibdir.
 * Every rmca_*.so (or .la where no .so) is tried once per component name:
 * the first loadable one of a name wins, later ones are logged at level 1 and
 * skipped. A file that fails to load, lacks the symbol, carries an ABI
 * version outside [RMCA_COMPONENT_ABI_MIN, RMCA_COMPONENT_ABI_VERSION] or an
 * ops table too short for the mandatory ops becomes an entry with
 * comp == NULL and error set, and is logged as one line "path: reason" at
 * level 0. Returns 0 or
 * RMCA_ERR_NO_MEMORY; a missing directory is not an error.
 */
int rmca_registry_scan(struct rmca_registry *r, const char *dirs,
		       const char *pkglibdir);
/*
 * After e's open() returned modules: refuse them all (close them, log one
 * line "path: module device: lacks op", return RMCA_ERR_UNSUPPORTED with
 * *modules NULL and *count 0) if one lacks a mandatory op; else point every
 * module whose table is shorter than the core's at a zero-filled copy of
 * full size, so that ops the component does not know read as NULL. Returns
 * 0, that, or RMCA_ERR_NO_MEMORY (modules closed too). The copies live until
 * rmca_registry_release.
 */
int rmca_registry_adopt(struct rmca_component_entry *e,
			const struct rmca_core *core,
			struct rmca_module ***modules, int *count);
void rmca_registry_release(struct rmca_registry *r);
/*
 * 0 if made_by, the module named by the base of an object m just handed
 * out (what: "connection", "connecting handle", "region"), is m. Else one
 * log line says m broke the component ABI and RMCA_ERR_PROTOCOL is
 * returned: the caller gives the object back to m (disconnect,
 * connect_abort, mr_dereg) and fails as on the op's own error.
 */
int rmca_registry_made_by(const struct rmca_module *m,
			  const struct rmca_module *made_by, const char *what);

#endif
