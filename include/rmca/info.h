/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rmca/info.h - introspection, for rmca_info and for middleware that wants to
 * show what rmca found. An addition to the rmca.h contract.
 */
#ifndef RMCA_INFO_H
#define RMCA_INFO_H

#include <stdint.h>

#include <rmca.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported, whatever -fvisibility says. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Like rmca_init, but a bad parameter value or a failing component does not
 * stop it: the context comes up with what works, and the problems are kept
 * and shown. Returns 0, or RMCA_ERR_NO_MEMORY. */
int rmca_init_inspect(rmca_context_t **ctx);

struct rmca_info_component {
	const char *name; /* NULL when the file was refused */
	const char *version;
	const char *description;
	const char *path;
	const char *error; /* why it was refused or failed to open; NULL if fine */
	int priority;
	int enabled; /* selected by RMCA_transports */
	int nmodules;
};
/* i-th component (0..); RMCA_ERR_NOT_FOUND past the end. */
int rmca_info_component(rmca_context_t *ctx, int i,
			struct rmca_info_component *out);
/* Why the i-th component, loaded, enabled and opened, has no module, as it
 * said ("no RDMA device found"); NULL when it has modules or said nothing.
 * Valid while ctx lives. */
const char *rmca_info_component_why_none(rmca_context_t *ctx, int i);

struct rmca_info_module {
	const char *component;
	const char *device;
	const char *detail; /* probed facts, "key=value ..." */
	uint32_t caps; /* in force (after RMCA_<comp>_caps) */
	uint32_t caps_probed; /* as the device declared them */
	int priority;
};
int rmca_info_module(rmca_context_t *ctx, int i, struct rmca_info_module *out);

/* Names of the capability bits, "atomic", "masked_atomic", "send_inv",
 * "loopback", "remote_completion", "atomic_cpu"; NULL for an unknown bit. */
const char *rmca_info_cap_name(uint32_t bit);

struct rmca_info_param {
	const char *name; /* without RMCA_ */
	const char *owner; /* "framework" or the component */
	const char *type; /* "bool", "int", "size", "string", "enum", "list" */
	const char *value; /* in force, as text */
	const char *def; /* default */
	const char *source; /* "default", "env", "param_file", "user_file", "system_file" */
	const char *source_detail; /* variable, or file:line */
	const char *help;
	const char *accepted; /* enum: "a|b|c"; int: "min..max"; else a word */
	const char *error; /* the value did not parse: why; else NULL */
};
int rmca_info_param(rmca_context_t *ctx, int i, struct rmca_info_param *out);

/*
 * Ask the listener at host_port which transport and which path per kind of
 * operation an endpoint would get, and why, without making one (the
 * listener answers inside rmca_accept and keeps waiting). out receives
 * text lines. Returns 0, or the status rmca_connect would have met.
 */
int rmca_info_explain(rmca_context_t *ctx, const char *host_port,
		      int timeout_ms, char *out, size_t out_len);

/* Build configuration: "key=value" lines (prefix, pkglibdir, components built). */
const char *rmca_info_build(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
