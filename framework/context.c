// SPDX-License-Identifier: BSD-3-Clause
/*
 * The context: parameters, components, modules, the event loop, and the
 * services the core lends to components (struct rmca_core_ops).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rmca/info.h>

#include "ep.h"
#include "wire.h"
#include "job.h"
#include "route.h"
#include "self.h"

/* libltdl keeps global state and components may too: contexts made in
 * parallel threads load and unload them one at a time. */
static pthread_mutex_t rmca_load_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- services for components ---- */

static void core_log(const struct rmca_core *core, int level, const char *fmt,
		     ...)
{
	va_list ap;

	(void)core;
	va_start(ap, fmt);
	rmca_vlog(level, NULL, fmt, ap);
	va_end(ap);
}

/* A component's open() says why it has no module (rmca_info shows it). */
static void core_no_module(const struct rmca_core *core, const char *fmt, ...)
{
	struct rmca_context *ctx = rmca_core_ctx(core);
	va_list ap;

	if (!ctx->opening)
		return;
	va_start(ap, fmt);
	vsnprintf(ctx->opening->why_none, sizeof(ctx->opening->why_none), fmt,
		  ap);
	va_end(ap);
	rmca_log(1, "%s: no module: %s", ctx->opening->comp->name,
		 ctx->opening->why_none);
}

static int core_param_register(const struct rmca_core *core,
			       const struct rmca_param_def *def)
{
	struct rmca_context *ctx = rmca_core_ctx(core);
	int rc = rmca_params_register(ctx->params,
				      ctx->registering ? ctx->registering :
							 "framework",
				      def);

	if (rc == RMCA_ERR_INVALID && !ctx->init_error)
		ctx->init_error = rc;
	return ctx->inspect && rc == RMCA_ERR_INVALID ? 0 : rc;
}

static const struct rmca_param *param_of(const struct rmca_core *core,
					 const char *name,
					 enum rmca_param_type type)
{
	const struct rmca_param *p =
		rmca_params_find(rmca_core_ctx(core)->params, name);

	if (!p || p->def.type != type) {
		rmca_log(0, "internal: parameter %s read before registration or as another type",
			 name);
		return NULL;
	}
	return p;
}

static bool core_param_bool(const struct rmca_core *core, const char *name)
{
	const struct rmca_param *p = param_of(core, name, RMCA_PARAM_BOOL);

	return p ? p->v.b : false;
}

static long long core_param_int(const struct rmca_core *core, const char *name)
{
	const struct rmca_param *p = param_of(core, name, RMCA_PARAM_INT);

	return p ? p->v.i : 0;
}

static size_t core_param_size(const struct rmca_core *core, const char *name)
{
	const struct rmca_param *p = param_of(core, name, RMCA_PARAM_SIZE);

	return p ? p->v.size : 0;
}

static const char *core_param_string(const struct rmca_core *core,
				     const char *name)
{
	const struct rmca_param *p =
		rmca_params_find(rmca_core_ctx(core)->params, name);

	if (!p || (p->def.type != RMCA_PARAM_STRING &&
		   p->def.type != RMCA_PARAM_LIST))
		return "";
	return p->text ? p->text : "";
}

static int core_param_enum(const struct rmca_core *core, const char *name)
{
	const struct rmca_param *p = param_of(core, name, RMCA_PARAM_ENUM);

	return p ? p->v.e : 0;
}

static int core_fd_add(const struct rmca_core *core, int fd, uint32_t events,
		       rmca_fd_cb cb, void *arg)
{
	struct rmca_context *ctx = rmca_core_ctx(core);
	struct epoll_event ev = {.events = events & ~RMCA_FD_EAGER};
	uint32_t gen;

	if (fd < 0 || !cb)
		return RMCA_ERR_INVALID;
	if ((size_t)fd >= ctx->nfds) {
		size_t n = (size_t)fd + 64;
		struct rmca_fd_slot *s = realloc(ctx->fds, n * sizeof(*s));

		if (!s)
			return RMCA_ERR_NO_MEMORY;
		memset(s + ctx->nfds, 0, (n - ctx->nfds) * sizeof(*s));
		ctx->fds = s;
		ctx->nfds = n;
	}
	gen = ctx->fds[fd].gen + 1;
	ev.data.u64 = rmca_fd_event(fd, gen);
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fd, &ev))
		return errno == ENOMEM ? RMCA_ERR_NO_MEMORY : RMCA_ERR_INVALID;
	ctx->fds[fd].gen = gen;
	ctx->fds[fd].cb = cb;
	ctx->fds[fd].arg = arg;
	ctx->fds[fd].eager = events & RMCA_FD_EAGER;
	ctx->neager += ctx->fds[fd].eager;
	return 0;
}

static int core_fd_mod(const struct rmca_core *core, int fd, uint32_t events)
{
	struct rmca_context *ctx = rmca_core_ctx(core);
	struct epoll_event ev = {.events = events & ~RMCA_FD_EAGER};

	if (fd < 0 || (size_t)fd >= ctx->nfds || !ctx->fds[fd].cb)
		return RMCA_ERR_INVALID;
	ev.data.u64 = rmca_fd_event(fd, ctx->fds[fd].gen);
	return epoll_ctl(ctx->epfd, EPOLL_CTL_MOD, fd, &ev) ? RMCA_ERR_INVALID :
								 0;
}

static void core_fd_del(const struct rmca_core *core, int fd)
{
	struct rmca_context *ctx = rmca_core_ctx(core);

	epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (fd >= 0 && (size_t)fd < ctx->nfds) {
		ctx->neager -= ctx->fds[fd].eager;
		ctx->fds[fd] = (struct rmca_fd_slot){.gen = ctx->fds[fd].gen};
	}
	rmca_progress_fd_gone(ctx, fd);
}

static void core_conn_failed(const struct rmca_core *core, void *cookie,
			     int status)
{
	struct rmca_ep *ep = cookie;

	(void)core;
	if (!ep->failed) {
		ep->failed = true;
		ep->fail_status = status;
		/* A peer that closes is no failure to report as one. */
		if (status == RMCA_ERR_CONNECTION && rmca_ep_peer_closed(ep))
			rmca_log(1, "%s: closed by the peer", ep->peer);
		else
			rmca_log(1, "%s: connection failed: %s", ep->peer,
				 rmca_strerror(status));
	}
}

static int core_random(void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return RMCA_ERR_NO_MEMORY;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static const struct rmca_core_ops rmca_core_ops = {
	.complete = rmca_core_complete,
	.conn_failed = core_conn_failed,
	.fd_add = core_fd_add,
	.fd_del = core_fd_del,
	.fd_mod = core_fd_mod,
	.fair_victim = rmca_core_fair_victim,
	.list_selects = rmca_list_selects,
	.log = core_log,
	.may_sleep = rmca_core_may_sleep,
	.mem_find = rmca_mem_find,
	.no_module = core_no_module,
	.param_bool = core_param_bool,
	.param_enum = core_param_enum,
	.param_int = core_param_int,
	.param_register = core_param_register,
	.param_size = core_param_size,
	.param_string = core_param_string,
	.random = core_random,
	.route = rmca_route,
	.will_sleep = rmca_core_will_sleep,
};

/* ---- framework parameters ---- */

static const char *const atomic_modes[] = { "auto", "device", "cpu", NULL };

static const struct rmca_param_def framework_params[] = {
	{ .name = "verbose", .type = RMCA_PARAM_INT, .def = "0", .min = 0,
	  .max = 9,
	  .help = "Log level: 0 errors, 1 selection and connections, 2 details" },
	{ .name = "transports", .type = RMCA_PARAM_LIST, .def = "",
	  .help = "Components to use (ib,tcp) or to exclude (^iwarp); empty: all" },
	{ .name = "component_path", .type = RMCA_PARAM_STRING, .def = "",
	  .help = "Colon-separated directories searched for components before the installed ones" },
	{ .name = "connect_timeout", .type = RMCA_PARAM_INT, .def = "10000",
	  .min = 1, .max = 3600000,
	  .help = "Milliseconds a bootstrap handshake and data connection setup may take" },
	{ .name = "handshake_max", .type = RMCA_PARAM_INT, .def = "64",
	  .min = 1, .max = 65536,
	  .help = "Incoming handshakes (and endpoints not yet accepted) a listener holds at once; more peers wait in the kernel's backlog" },
	{ .name = "atomic_mode", .type = RMCA_PARAM_ENUM, .def = "auto",
	  .values = atomic_modes,
	  .help = "Who executes atomics for this context: auto, device (NIC) or cpu (target core); peers must agree" },
	{ .name = "ep_max_core_ops", .type = RMCA_PARAM_INT, .def = "16384",
	  .min = 1, .max = 1 << 24,
	  .help = "Operations the core holds per endpoint (atomics the peer's core executes, sends behind revoke messages) before a post returns RMCA_ERR_AGAIN" },
	{ .name = "ctrl_max_queued", .type = RMCA_PARAM_INT, .def = "4194304",
	  .min = 65536, .max = 1 << 30,
	  .help = "Bytes of answers queued for a peer on its control channel before rmca stops reading from it (an honest peer at the default ep_max_core_ops needs under 4 MiB)" },
	{ .name = "max_rails", .type = RMCA_PARAM_INT, .def = "4", .min = 1,
	  .max = 1 + RMCA_WIRE_MAX_RAILS,
	  .help = "Pairs of devices of one transport an endpoint uses together when several reach the peer at the same priority (rails); 1: one pair" },
	{ .name = "rail_min_size", .type = RMCA_PARAM_SIZE, .def = "256k",
	  .help = "Puts and gets of this many bytes or more are split across an endpoint's rails; smaller ones go on its first rail" },
	{ .name = "rail_transports", .type = RMCA_PARAM_LIST, .def = "ib,iwarp",
	  .help = "Transports whose devices are used together as rails (tcp's interfaces share one host stack)" },
	{ .name = "param_file", .type = RMCA_PARAM_STRING, .def = "",
	  .help = "File of name = value lines read before the user and system files (environment only)" },
};

static const char *const cap_names[] = {
	"atomic", "masked_atomic", "send_inv", "loopback", "remote_completion",
	"atomic_cpu", "short_read",
};

/*
 * RMCA_<comp>_caps takes capabilities away, to force the fallback paths:
 * "^atomic,^send_inv" or "^atomic,send_inv" (a leading caret applies to the
 * whole list). Adding a capability a device lacks is not possible.
 */
static int caps_mask_parse(const char *s, uint32_t *mask, char *err,
			   size_t err_len)
{
	char *dup, *tok, *save = NULL;
	int all_neg = s[0] == '^', rc = 0;

	*mask = 0;
	if (!*s)
		return 0;
	dup = strdup(s);
	if (!dup)
		return RMCA_ERR_NO_MEMORY;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		if (*tok == '^')
			tok++;
		else if (!all_neg) {
			snprintf(err, err_len,
				 "'%s': capabilities can only be taken away (^%s)",
				 tok, tok);
			rc = RMCA_ERR_INVALID;
			break;
		}
		for (i = 0; i < RMCA_ARRAY_SIZE(cap_names); i++)
			if (!strcmp(tok, cap_names[i]))
				break;
		if (i == RMCA_ARRAY_SIZE(cap_names)) {
			snprintf(err, err_len,
				 "unknown capability '%s'; accepted: atomic, masked_atomic, send_inv, loopback, remote_completion, atomic_cpu, short_read",
				 tok);
			rc = RMCA_ERR_INVALID;
			break;
		}
		*mask |= 1u << i;
	}
	free(dup);
	return rc;
}

static void host_identity(struct rmca_context *ctx)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	struct stat st;

	if (f) {
		if (!fgets(ctx->boot_id, sizeof(ctx->boot_id), f))
			ctx->boot_id[0] = '\0';
		ctx->boot_id[strcspn(ctx->boot_id, "\n")] = '\0';
		fclose(f);
	}
	if (!stat("/proc/self/ns/net", &st))
		ctx->netns = (uint64_t)st.st_ino;
}

static int fail_or_note(struct rmca_context *ctx, int rc)
{
	if (!ctx->init_error)
		ctx->init_error = rc;
	return ctx->inspect ? 0 : rc;
}

static int open_components(struct rmca_context *ctx)
{
	const struct rmca_core *core = &ctx->core;
	size_t nmods = 0;
	int rc;

	ctx->comps = calloc(ctx->reg.n ? ctx->reg.n : 1, sizeof(*ctx->comps));
	if (!ctx->comps)
		return RMCA_ERR_NO_MEMORY;
	for (size_t i = 0; i < ctx->reg.n; i++) {
		const struct rmca_component_entry *e = &ctx->reg.entries[i];
		struct rmca_comp *c;
		char name[96], defprio[16], err[256];
		const struct rmca_param *pp;
		struct rmca_param_def d;

		if (!e->comp)
			continue;
		c = &ctx->comps[ctx->ncomps++];
		c->comp = e->comp;
		c->entry = e;
		ctx->registering = e->comp->name;

		snprintf(name, sizeof(name), "%s_priority", e->comp->name);
		snprintf(defprio, sizeof(defprio), "%d", e->comp->priority);
		d = (struct rmca_param_def){ .name = name, .type = RMCA_PARAM_INT,
					     .def = defprio, .min = 0, .max = 1000,
					     .help = "Priority of the component when several reach a peer (higher wins)" };
		rc = core_param_register(core, &d);
		if (rc)
			goto fail;
		pp = rmca_params_find(ctx->params, name);
		c->priority = pp ? (int)pp->v.i : e->comp->priority;

		snprintf(name, sizeof(name), "%s_caps", e->comp->name);
		d = (struct rmca_param_def){ .name = name, .type = RMCA_PARAM_STRING,
					     .def = "",
					     .help = "Capabilities to mask, forcing the fallback paths (^atomic,^send_inv)" };
		rc = core_param_register(core, &d);
		if (rc)
			goto fail;
		if (caps_mask_parse(core_param_string(core, name), &c->caps_mask,
				    err, sizeof(err))) {
			rmca_log(0, "RMCA_%s=%s: %s", name,
				 core_param_string(core, name), err);
			rc = fail_or_note(ctx, RMCA_ERR_INVALID);
			if (rc)
				goto fail;
		}
		if (e->comp->register_params) {
			rc = e->comp->register_params(core);
			if (rc && !ctx->inspect)
				goto fail;
		}
		ctx->registering = NULL;

		c->enabled = rmca_list_selects(ctx->transports, e->comp->name);
		if (!c->enabled) {
			rmca_log(1, "%s: excluded by RMCA_transports=%s",
				 e->comp->name, ctx->transports);
			continue;
		}
		ctx->opening = c;
		c->open_status = e->comp->open(core, &c->modules, &c->nmodules);
		if (!c->open_status)
			c->open_status = rmca_registry_adopt(
				&ctx->reg.entries[i], core, &c->modules,
				&c->nmodules);
		ctx->opening = NULL;
		if (c->open_status || c->nmodules)
			c->why_none[0] = '\0';
		if (c->open_status) {
			rmca_log(c->open_status == RMCA_ERR_NOT_FOUND ? 1 : 0,
				 "%s: open failed: %s", e->comp->name,
				 rmca_strerror(c->open_status));
			c->modules = NULL;
			c->nmodules = 0;
			/* A parameter of the component names nothing usable
			 * (the component said which): the user's mistake,
			 * not a missing device. */
			if (c->open_status == RMCA_ERR_INVALID) {
				rc = fail_or_note(ctx, RMCA_ERR_INVALID);
				if (rc)
					goto fail;
			}
			continue;
		}
		nmods += (size_t)c->nmodules;
		/* every request has room for what the largest asks */
		if (c->nmodules && e->req_size > ctx->req_module_size)
			ctx->req_module_size = e->req_size;
	}
	/* one more: the self module, after the others (self.c) */
	ctx->mods = calloc(nmods + 1, sizeof(*ctx->mods));
	if (!ctx->mods)
		return RMCA_ERR_NO_MEMORY;
	for (size_t i = 0; i < ctx->ncomps; i++) {
		struct rmca_comp *c = &ctx->comps[i];

		for (int j = 0; j < c->nmodules; j++) {
			struct rmca_mod *m = &ctx->mods[ctx->nmods];

			m->m = c->modules[j];
			m->comp = c;
			m->caps = m->m->caps & ~c->caps_mask;
			m->index = (int)ctx->nmods++;
			m->ordered = c->entry->flags & RMCA_COMPONENT_ORDERED;
			/* only with a progress op to call when it is set */
			if (m->m->ops->progress && m->m->ops->progress_due)
				m->due = m->m->ops->progress_due(m->m);
			rmca_log(1, "%s %s: caps 0x%x (probed 0x%x) %s",
				 c->comp->name, m->m->device, m->caps,
				 m->m->caps, m->m->detail);
		}
	}
	rmca_progress_mods(ctx);
	return rmca_self_open(ctx, &ctx->mods[ctx->nmods]);
fail:
	ctx->registering = NULL;
	return rc;
}

/* A component's name: what it calls itself, or (refused) its file's. */
static const char *entry_name(const struct rmca_component_entry *e, char *buf,
			      size_t len)
{
	const char *base, *dot;

	if (e->comp)
		return e->comp->name;
	base = strrchr(e->path, '/');
	base = base ? base + 1 : e->path;
	if (!strncmp(base, "rmca_", 5))
		base += 5;
	dot = strchr(base, '.');
	snprintf(buf, len, "%.*s", dot ? (int)(dot - base) : (int)strlen(base),
		 base);
	return buf;
}

/*
 * RMCA_transports may only name components that exist (loaded, or found
 * and refused: the registry said why). A name that exists nowhere ("foo",
 * "TCP") would silently select nothing.
 */
static int transports_check(struct rmca_context *ctx)
{
	const char **known;
	char(*names)[64], err[768];
	int rc = 0;

	if (!ctx->transports || !*ctx->transports)
		return 0;
	known = calloc(ctx->reg.n ? ctx->reg.n : 1, sizeof(*known));
	names = calloc(ctx->reg.n ? ctx->reg.n : 1, sizeof(*names));
	if (!known || !names) {
		rc = RMCA_ERR_NO_MEMORY;
		goto out;
	}
	for (size_t i = 0; i < ctx->reg.n; i++)
		known[i] = entry_name(&ctx->reg.entries[i], names[i],
				      sizeof(names[i]));
	if (rmca_list_check_names(ctx->transports, "component", known,
				  ctx->reg.n, err, sizeof(err))) {
		rmca_log(0, "RMCA_transports=%s: %s", ctx->transports, err);
		rc = fail_or_note(ctx, RMCA_ERR_INVALID);
	}
out:
	free(known);
	free(names);
	return rc;
}

static int framework_params_read(struct rmca_context *ctx)
{
	const struct rmca_param *p;
	char err[256];
	int rc;

	for (size_t i = 0; i < RMCA_ARRAY_SIZE(framework_params); i++) {
		rc = core_param_register(&ctx->core, &framework_params[i]);
		if (rc)
			return rc;
	}
	p = rmca_params_find(ctx->params, "verbose");
	rmca_log_verbose = p ? (int)p->v.i : 0;
	p = rmca_params_find(ctx->params, "connect_timeout");
	ctx->connect_timeout_ms = p ? (int)p->v.i : 10000;
	p = rmca_params_find(ctx->params, "ep_max_core_ops");
	ctx->ep_max_core_ops = p ? (unsigned)p->v.i : 16384;
	p = rmca_params_find(ctx->params, "ctrl_max_queued");
	ctx->ctrl_max_queued = p ? (size_t)p->v.i : 4u << 20;
	p = rmca_params_find(ctx->params, "handshake_max");
	ctx->handshake_max = p ? (int)p->v.i : 64;
	p = rmca_params_find(ctx->params, "max_rails");
	ctx->max_rails = p ? (int)p->v.i : 4;
	p = rmca_params_find(ctx->params, "rail_min_size");
	ctx->rail_min_size = p ? p->v.size : 256u << 10;
	ctx->rail_transports = core_param_string(&ctx->core, "rail_transports");
	p = rmca_params_find(ctx->params, "atomic_mode");
	ctx->atomic_mode = p ? (enum rmca_atomic_mode)p->v.e : RMCA_ATOMIC_MODE_AUTO;
	ctx->transports = core_param_string(&ctx->core, "transports");
	if (rmca_list_validate(ctx->transports, err, sizeof(err))) {
		/* The params code logged it; select nothing rather than all. */
		return fail_or_note(ctx, RMCA_ERR_INVALID);
	}
	return 0;
}

/*
 * One atomic mode per context. auto picks device only when every module
 * has atomics its NIC executes; one CPU-executed or emulated path among
 * them makes it cpu, so the two kinds never meet on one word.
 */
static void atomic_mode_resolve(struct rmca_context *ctx)
{
	bool device = ctx->nmods > 0;

	if (ctx->atomic_mode != RMCA_ATOMIC_MODE_AUTO) {
		ctx->atomic_resolved = ctx->atomic_mode;
		return;
	}
	for (size_t i = 0; i < ctx->nmods; i++)
		if (!(ctx->mods[i].caps & RMCA_CAP_ATOMIC) ||
		    (ctx->mods[i].caps & RMCA_CAP_ATOMIC_CPU))
			device = false;
	ctx->atomic_resolved = device ? RMCA_ATOMIC_MODE_DEVICE :
					RMCA_ATOMIC_MODE_CPU;
	rmca_log(1, "atomic mode auto: %s", device ? "device" : "cpu");
}

static int context_init(rmca_context_t **out, bool inspect)
{
	struct rmca_context *ctx;
	int rc;

	if (!out)
		return RMCA_ERR_INVALID;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return RMCA_ERR_NO_MEMORY;
	ctx->core.ops = &rmca_core_ops;
	ctx->core.priv = ctx;
	ctx->core.req_offset = RMCA_REQ_MODULE_OFFSET;
	ctx->inspect = inspect;
	rmca_list_init(&ctx->eps);
	rmca_list_init(&ctx->mrs);
	rmca_list_init(&ctx->mems);
	rmca_list_init(&ctx->listeners);
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd < 0) {
		free(ctx);
		return RMCA_ERR_NO_MEMORY;
	}
	host_identity(ctx);
	rc = rmca_cq_init(ctx);
	if (!rc)
		rc = rmca_params_create(&ctx->params, RMCA_SYSCONFDIR);
	if (!rc)
		rc = framework_params_read(ctx);
	pthread_mutex_lock(&rmca_load_lock);
	if (!rc)
		rc = rmca_registry_scan(&ctx->reg,
					core_param_string(&ctx->core,
							  "component_path"),
					RMCA_PKGLIBDIR);
	if (!rc)
		rc = transports_check(ctx);
	if (!rc)
		rc = open_components(ctx);
	pthread_mutex_unlock(&rmca_load_lock);
	if (!rc) {
		rmca_params_check_unknown(ctx->params);
		if (ctx->init_error && !inspect)
			rc = ctx->init_error;
	}
	if (rc) {
		rmca_finalize(ctx);
		return rc;
	}
	if (!ctx->nmods)
		rmca_log(1, "no usable transport module found (RMCA_component_path, RMCA_transports)");
	atomic_mode_resolve(ctx);
	*out = ctx;
	return 0;
}

int rmca_init(rmca_context_t **ctx)
{
	return context_init(ctx, false);
}

int rmca_init_inspect(rmca_context_t **ctx)
{
	return context_init(ctx, true);
}

void rmca_finalize(rmca_context_t *ctx)
{
	if (!ctx)
		return;
	rmca_job_fini(ctx);
	/* Listeners first: they hold endpoints not yet accepted. */
	while (!rmca_list_empty(&ctx->listeners))
		rmca_listener_close(rmca_list_first(
			&ctx->listeners, struct rmca_listener, link));
	while (!rmca_list_empty(&ctx->eps))
		rmca_ep_destroy(
			rmca_list_first(&ctx->eps, struct rmca_ep, link));
	while (!rmca_list_empty(&ctx->mrs))
		rmca_mr_destroy(
			rmca_list_first(&ctx->mrs, struct rmca_mr, link));
	if (ctx->mods)
		rmca_self_close(&ctx->mods[ctx->nmods]);
	pthread_mutex_lock(&rmca_load_lock);
	for (size_t i = 0; i < ctx->ncomps; i++) {
		struct rmca_comp *c = &ctx->comps[i];

		if (c->modules && c->comp->close)
			c->comp->close(&ctx->core, c->modules, c->nmodules);
	}
	free(ctx->mods);
	free(ctx->comps);
	rmca_registry_release(&ctx->reg);
	pthread_mutex_unlock(&rmca_load_lock);
	if (ctx->params)
		rmca_params_destroy(ctx->params);
	rmca_cq_fini(ctx);
	/* Last: the modules that mapped or published them are closed. */
	rmca_mem_free_all(ctx);
	rmca_fair_fini(&ctx->fair);
	free(ctx->fds);
	close(ctx->epfd);
	free(ctx);
}
