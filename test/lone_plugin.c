// SPDX-License-Identifier: BSD-3-Clause
#include "lone_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int lone_plugin_setup(struct lone_plugin *p, const char *name)
{
	const char *b = getenv("RMCATEST_BUILDDIR");
	char cmd[3 * PATH_MAX];

	snprintf(p->dir, sizeof(p->dir), "/tmp/rmca-lone-plugin-XXXXXX");
	if (!mkdtemp(p->dir))
		return -1;
	snprintf(p->so, sizeof(p->so), "%s/%s", p->dir, name);
	snprintf(cmd, sizeof(cmd), "cp '%s/.libs/%s' '%s'", b ? b : ".", name,
		 p->so);
	if (system(cmd) != 0) {
		rmdir(p->dir);
		return -1;
	}
	setenv("RMCA_component_path", p->dir, 1);
	unsetenv("RMCA_transports");
	return 0;
}

void lone_plugin_teardown(struct lone_plugin *p)
{
	unlink(p->so);
	rmdir(p->dir);
}
