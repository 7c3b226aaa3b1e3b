/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A test whose context must load one test plugin and nothing else copies
 * that plugin into a private directory and points RMCA_component_path at it.
 */
#ifndef RMCA_TEST_LONE_PLUGIN_H
#define RMCA_TEST_LONE_PLUGIN_H

#include <limits.h>

struct lone_plugin {
	char dir[PATH_MAX];
	char so[PATH_MAX];
};

/* name: the plugin's file in the build's test/.libs, e.g. "rmca_stray.so" */
int lone_plugin_setup(struct lone_plugin *p, const char *name);
void lone_plugin_teardown(struct lone_plugin *p);

#endif
