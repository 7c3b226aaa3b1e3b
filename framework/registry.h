/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Finding and loading components: rmca_<name>.so in the directories of
 * RMCA_component_path (first) and in $(pkglibdir), opened with libltdl.
 */
#ifndef RMCA_REGISTRY_H
#define RMCA_REGISTRY_H

#include <stddef.h>

#include <rmca/component.h>

struct rmca_component_entry {
	char *path; /* file that was opened (or tried) */
	void *handle; /* lt_dlhandle; NULL when loading failed */
	const struct rmca_component *comp; /* NULL when refused */
	char *error; /* why it was refused; NULL when loaded */
};

struct rmca_registry {
	struct rmca_component_entry *entries;
	size_t n;
};

/*
 * Scan dirs (colon list; empty entries skipped) in order, then pkglibdir.
 * Every rmca_*.so (or .la where no .so) is tried once per component name:
 * the first loadable one of a name wins, later ones are logged at level 1 and
 * skipped. A file that fails to load, lacks the symbol, or carries another
 * ABI version becomes an entry with comp == NULL and error set, and is
 * logged as one line "path: reason" at level 0. Returns 0 or
 * RMCA_ERR_NO_MEMORY; a missing directory is not an error.
 */
int rmca_registry_scan(struct rmca_registry *r, const char *dirs,
		       const char *pkglibdir);
void rmca_registry_release(struct rmca_registry *r);

#endif
