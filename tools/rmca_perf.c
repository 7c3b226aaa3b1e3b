// SPDX-License-Identifier: BSD-3-Clause
/*
 * rmca_perf - latency, bandwidth and message rate of rmca operations.
 *
 *   rmca_perf -s [-l HOST:PORT] [--raw] [--spin]        serve one client
 *   rmca_perf [options] HOST:PORT                        measure
 *
 * --raw runs the same ping-pong and streaming over a plain TCP socket,
 * timed and printed by the same code, so a run of rmca next to a run of
 * --raw compares the library with what the kernel alone costs.
 *
 * What each test times (doc/bench.md says more):
 *   send_lat     ping-pong of messages, half the round trip
 *   put_lat      one put flagged RMCA_DELIVERED, post to completion
 *   get_lat      one get, post to completion
 *   atomic_lat   one 64-bit FADD, post to completion
 *   put_bw       puts without RMCA_DELIVERED, a window of them outstanding,
 *                until a final rmca_flush completes
 *   get_bw       gets, a window of them outstanding
 *   send_bw      sends, a window outstanding, until the receiver says it
 *                got the last one
 *   atomic_rate  FADDs, a window outstanding
 *
 * Only rmca.h is used: the tool is also an example of the public API.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <rmca.h>

#include "cli.h"

#define PERF_MAGIC   0x726d6361u /* "rmca" */
#define WAIT_LIMIT_S 30.0	 /* a peer silent for this long: give up */
#define MAX_POLL     64

enum test_id {
	T_QUIT,
	T_SETUP,
	T_SEND_LAT,
	T_PUT_LAT,
	T_GET_LAT,
	T_ATOMIC_LAT,
	T_PUT_BW,
	T_GET_BW,
	T_SEND_BW,
	T_ATOMIC_RATE,
};

struct test_desc {
	const char *name;
	enum test_id id;
	bool lat;   /* one op at a time, per-op times kept */
	bool sized; /* else 8 bytes only */
	bool raw;   /* also measured by --raw */
};

static const struct test_desc tests[] = {
	{"send_lat", T_SEND_LAT, true, true, true},
	{"put_lat", T_PUT_LAT, true, true, false},
	{"get_lat", T_GET_LAT, true, true, false},
	{"atomic_lat", T_ATOMIC_LAT, true, false, false},
	{"put_bw", T_PUT_BW, false, true, false},
	{"get_bw", T_GET_BW, false, true, false},
	{"send_bw", T_SEND_BW, false, true, true},
	{"atomic_rate", T_ATOMIC_RATE, false, false, false},
};
#define NTESTS (sizeof(tests) / sizeof(tests[0]))

/* Client to server, before each test; also the setup and the goodbye. */
struct ctrl {
	uint32_t magic, test;
	uint64_t size, iters, warmup, window;
	uint64_t rx_depth; /* receives the server keeps posted; 0: window */
};

/* Server to client, after T_SETUP: where the client's RMA lands. */
struct region {
	uint64_t addr, rkey, aaddr, arkey;
};

/* How results are printed: a table for people, or one of three for
 * scripts (then the header lines go to stderr). */
enum format { FMT_TABLE, FMT_PARSABLE, FMT_CSV, FMT_JSON };

struct opts {
	bool server, raw, spin;
	bool alloc; /* buffers from rmca_mem_alloc */
	enum format fmt;
	const char *listen_at, *peer, *tests, *sizes;
	long iters, window, warmup; /* warmup < 0: a tenth of iters */
	long rx_depth;		    /* 0: the window */
};

/* ---- time and statistics ----
 *
 * Timed as perftest times: one stamp per iteration, taken before the
 * operation is posted, and an operation's time is the distance to the next
 * stamp. The stamp is the CPU's cycle counter where there is one (x86:
 * rdtsc, perftest's get_cycles()), converted with the rate it had against
 * CLOCK_MONOTONIC over the same test; elsewhere CLOCK_MONOTONIC itself. In
 * a guest whose clock source has no vDSO path, clock_gettime is a system
 * call: two per operation made rmca's get_lat and atomic_lat in the qemu
 * guest 1.2 and 1.5 times ib_read_lat's and ib_atomic_lat's. Rates and
 * bandwidths stay CLOCK_MONOTONIC from the first stamp to the last. The
 * same for every transport and for --raw.
 */

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static uint64_t stamp(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* A stamp and the monotonic clock read together: both ends of a test. */
struct span {
	uint64_t tk;
	double us;
};

static struct span span_now(void)
{
	struct span s = {.tk = stamp()};

	s.us = now_us();
	return s;
}

/* Microseconds per stamp unit between a and b. */
static double us_per_stamp(struct span a, struct span b)
{
#if defined(__x86_64__) || defined(__i386__)
	return b.tk > a.tk ? (b.us - a.us) / (double)(b.tk - a.tk) : 0;
#else
	(void)a;
	(void)b;
	return 1e-3;
#endif
}

/*
 * Give up on a peer silent for WAIT_LIMIT_S. The clock is read lazily:
 * spinning, every DEADLINE_EVERY-th check only, and the limit starts at
 * the first read, so a wait shorter than that reads no clock at all.
 */
#define DEADLINE_EVERY 1024

struct deadline {
	double limit; /* us; 0: not started */
	unsigned long checks;
};

static bool deadline_passed(struct deadline *d, bool spin)
{
	double t;

	if (spin && ++d->checks % DEADLINE_EVERY)
		return false;
	t = now_us();
	if (!d->limit) {
		d->limit = t + WAIT_LIMIT_S * 1e6;
		return false;
	}
	return t > d->limit;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct result {
	const char *test;
	size_t size;
	long iters;
	int rtt; /* latency tests: 1 half a round trip, 2 a whole one */
	double min, med, mean, max, stdev, p99, p999; /* us, latency tests */
	double mbs;  /* 1e6 bytes per second, bandwidth tests */
	double mops; /* 1e6 operations per second, bandwidth and rate */
};

/* The statistics of n latencies (sorts v). */
static void percentiles(double *v, long n, struct result *r)
{
	double sum = 0, sq = 0;

	for (long i = 0; i < n; i++)
		sum += v[i];
	r->mean = sum / (double)n;
	for (long i = 0; i < n; i++)
		sq += (v[i] - r->mean) * (v[i] - r->mean);
	r->stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	r->min = v[0];
	r->max = v[n - 1];
	r->med = v[n / 2];
	r->p99 = v[(long)((double)(n - 1) * 0.99)];
	r->p999 = v[(long)((double)(n - 1) * 0.999)];
}

static const char *const rtt_name[] = {"-", "half", "whole"};

static void print_head(const struct opts *o)
{
	switch (o->fmt) {
	case FMT_TABLE:
		printf("# lat: half = half a round trip (ping-pong / 2), "
		       "whole = a whole round trip (post to completion)\n");
		printf("%-12s %8s %7s %5s %8s %8s %8s %8s %8s %8s %8s %10s "
		       "%9s\n",
		       "test", "bytes", "iters", "lat", "min_us", "med_us",
		       "avg_us", "max_us", "stdev", "p99_us", "p99.9_us",
		       "MB/s", "Mops");
		break;
	case FMT_CSV:
		printf("test,bytes,iters,lat,min_us,median_us,mean_us,max_us,"
		       "stdev_us,p99_us,p999_us,MBps,Mops\n");
		break;
	case FMT_JSON:
		printf("{\"tool\": \"rmca_perf\", \"version\": \"%s\", "
		       "\"results\": [",
		       rmca_version());
		break;
	case FMT_PARSABLE:
		break;
	}
	fflush(stdout);
}

static void print_tail(const struct opts *o, int nresults)
{
	if (o->fmt == FMT_JSON)
		printf("%s]}\n", nresults ? "\n" : "");
	fflush(stdout);
}

static void print_parsable(const struct result *r)
{
	const char *t = r->test;

	if (r->rtt) {
		static const char *const unit[] = {
			"us_median", "us_p99",	 "us_mean", "us_min",
			"us_max",    "us_stdev", "us_p999"};
		const double v[] = {r->med, r->p99,   r->mean, r->min,
				    r->max, r->stdev, r->p999};

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			printf("%s,%zu,%ld,%.3f,%s\n", t, r->size, r->iters,
			       v[i], unit[i]);
		printf("%s,%zu,%ld,%s,lat\n", t, r->size, r->iters,
		       r->rtt == 1 ? "half_rtt" : "rtt");
		return;
	}
	if (r->mbs > 0)
		printf("%s,%zu,%ld,%.3f,MB/s\n", t, r->size, r->iters, r->mbs);
	printf("%s,%zu,%ld,%.6f,Mops\n", t, r->size, r->iters, r->mops);
}

/* A number, or "-" (table) / "" (csv) / null (json) when not measured. */
static void cell(enum format f, const char *fmt, int width, bool have, double v)
{
	char buf[32];

	if (!have)
		snprintf(buf, sizeof(buf), "%s",
			 f == FMT_TABLE	 ? "-"
			 : f == FMT_JSON ? "null"
					 : "");
	else
		snprintf(buf, sizeof(buf), fmt, v);
	if (f == FMT_TABLE)
		printf(" %*s", width, buf);
	else
		printf(",%s", buf);
}

static void print_result(const struct opts *o, const struct result *r, int nth)
{
	bool lat = r->rtt != 0;
	const double v[] = {r->min,   r->med, r->mean, r->max,
			    r->stdev, r->p99, r->p999};
	static const char *const key[] = {"min_us", "median_us", "mean_us",
					  "max_us", "stdev_us",	 "p99_us",
					  "p999_us"};

	switch (o->fmt) {
	case FMT_PARSABLE:
		print_parsable(r);
		break;
	case FMT_TABLE:
	case FMT_CSV:
		printf(o->fmt == FMT_TABLE ? "%-12s %8zu %7ld %5s"
					   : "%s,%zu,%ld,%s",
		       r->test, r->size, r->iters, rtt_name[r->rtt]);
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			cell(o->fmt, "%.2f", 8, lat, v[i]);
		cell(o->fmt, o->fmt == FMT_TABLE ? "%.1f" : "%.3f", 10,
		     r->mbs > 0, r->mbs);
		cell(o->fmt, "%.4f", 9, !lat, r->mops);
		putchar('\n');
		break;
	case FMT_JSON:
		printf("%s\n  {\"test\": \"%s\", \"bytes\": %zu, "
		       "\"iters\": %ld",
		       nth ? "," : "", r->test, r->size, r->iters);
		if (lat) {
			printf(", \"lat\": \"%s\"",
			       r->rtt == 1 ? "half_rtt" : "rtt");
			for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
				printf(", \"%s\": %.3f", key[i], v[i]);
		} else {
			if (r->mbs > 0)
				printf(", \"MBps\": %.3f", r->mbs);
			printf(", \"Mops\": %.6f", r->mops);
		}
		putchar('}');
		break;
	}
	fflush(stdout);
}

/*
 * A progress line on stderr, at most once a second, when stderr is a
 * terminal: a long run shows it is alive. Scripts (stderr a file or a
 * pipe) never see it.
 */
static struct {
	bool on;	  /* stderr is a terminal */
	bool shown;	  /* a line is on the screen, to be wiped */
	const char *test; /* what runs now; NULL between tests */
	size_t size;
	long ops;	    /* completions since the test began */
	double start, next; /* us */
} prog;

static void progress_begin(const char *test, size_t size)
{
	prog.test = test;
	prog.size = size;
	prog.ops = 0;
	prog.start = now_us();
	prog.next = prog.start + 1e6;
}

static void progress_tick(void)
{
	double t;

	if (!prog.on || !prog.test)
		return;
	t = now_us();
	if (t < prog.next)
		return;
	prog.next = t + 1e6;
	fprintf(stderr, "\r# %s, %zu bytes: %ld operations in %.0f s ",
		prog.test, prog.size, prog.ops, (t - prog.start) / 1e6);
	prog.shown = true;
}

static void progress_end(void)
{
	prog.test = NULL;
	if (prog.shown)
		fprintf(stderr, "\r%72s\r", "");
	prog.shown = false;
}

/* Who is at the other end, for messages: HOST:PORT, or "the client". */
static const char *peer_name = "the client";

/* "rmca_perf: <what was being done>: <why>"; rc < 0 is an rmca status,
 * rc > 0 an errno. */
static void __attribute__((noreturn, format(printf, 2, 3)))
die(int rc, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rmca_perf: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", rc < 0 ? rmca_strerror(rc) : strerror(rc));
	exit(1);
}

#define CHECK(call, ...)                                                       \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_)                                                       \
			die(rc_, __VA_ARGS__);                                 \
	} while (0)

/* ---- progress ---- */

/*
 * One endpoint, one test at a time: completions are only counted, by kind,
 * and their status checked. Tags in user_ctx tell control traffic apart.
 */
static char tag_ctrl, tag_data;

struct bench {
	rmca_context_t *ctx;
	rmca_ep_t *ep;
	bool spin;
	bool closing; /* the goodbye: a peer already gone is no error */
	long sends, recvs, ctrl_recvs, puts, gets, atomics, flushes;
	uint64_t *res; /* atomic results, one slot per outstanding FADD */
	long *free_slots, nfree;
};

static void complete(struct bench *b, const struct rmca_completion *c)
{
	if (c->status && !b->closing) {
		static const char *const op[] = {"send", "receive", "put",
						 "get",	 "atomic",  "flush"};

		die(c->status, "a %s with %s completed with an error",
		    (unsigned)c->op < 6 ? op[c->op] : "operation", peer_name);
	}
	prog.ops++;
	switch (c->op) {
	case RMCA_OP_SEND:
		b->sends++;
		break;
	case RMCA_OP_RECV:
		if (c->user_ctx == &tag_ctrl)
			b->ctrl_recvs++;
		else
			b->recvs++;
		break;
	case RMCA_OP_PUT:
		b->puts++;
		break;
	case RMCA_OP_GET:
		b->gets++;
		break;
	case RMCA_OP_ATOMIC:
		b->atomics++;
		b->free_slots[b->nfree++] = (uint64_t *)c->user_ctx - b->res;
		break;
	case RMCA_OP_FLUSH:
		b->flushes++;
		break;
	}
}

/* Progress once; without --spin, sleep in poll() until there is work. */
static void pump(struct bench *b)
{
	struct rmca_completion c[MAX_POLL];
	int n = rmca_poll(b->ctx, c, MAX_POLL);

	if (n < 0)
		die(n, "progressing the connection with %s", peer_name);
	for (int i = 0; i < n; i++)
		complete(b, &c[i]);
	progress_tick();
	if (!n && !b->spin) {
		struct pollfd p = {.fd = rmca_wait_fd(b->ctx),
				   .events = POLLIN};

		poll(&p, 1, 100);
	}
}

/* Pump until *counter reaches want. The clock is read lazily (struct
 * deadline): where it is a system call (a guest without a vDSO clock),
 * reading it on every pump would be most of what a pump costs. */
static void wait_count(struct bench *b, const long *counter, long want)
{
	struct deadline d = {0};

	while (*counter < want) {
		pump(b);
		if (deadline_passed(&d, b->spin)) {
			fprintf(stderr, "rmca_perf: peer silent for %.0f s\n",
				WAIT_LIMIT_S);
			exit(1);
		}
	}
}

static void __attribute__((noreturn))
post_failed(int rc, const char *what, size_t size)
{
	if (size)
		die(rc, "posting %s of %zu bytes, peer %s", what, size,
		    peer_name);
	die(rc, "posting %s, peer %s", what, peer_name);
}

/* Post; while the transport says AGAIN, progress and retry. what names the
 * operation ("a put"), size its bytes (0: none). */
#define POST(b, call, what, size)                                              \
	do {                                                                   \
		int rc_;                                                       \
		while ((rc_ = (call)) == RMCA_ERR_AGAIN)                       \
			pump(b);                                               \
		if (rc_)                                                       \
			post_failed(rc_, what, (size_t)(size));                \
	} while (0)

static const char *path_name(enum rmca_path p)
{
	static const char *const n[] = {"none",	    "native",	"flush",
					"cas_loop", "emulated", "revoke_msg"};

	return (unsigned)p < sizeof(n) / sizeof(n[0]) ? n[p] : "?";
}

static void show_ep(const struct opts *o, rmca_ep_t *ep)
{
	struct rmca_ep_attr a;
	FILE *f = o->fmt != FMT_TABLE ? stderr : stdout;

	if (rmca_ep_query(ep, &a))
		return;
	fprintf(f, "# rmca %s: transport %s, device %s, peer %s\n",
		rmca_version(), a.transport, a.device,
		a.peer_is_local ? "on this host" : "remote");
	fprintf(f,
		"# paths: put_delivered=%s atomic=%s masked_atomic=%s "
		"send_inv=%s\n",
		path_name(a.put_delivered), path_name(a.atomic),
		path_name(a.masked_atomic), path_name(a.send_inv));
}

static void show_mode(const struct opts *o)
{
	FILE *f = o->fmt != FMT_TABLE ? stderr : stdout;

	fprintf(f,
		"# progress: %s; window %ld; receives posted %ld; warm-up %s\n",
		o->spin ? "spin (busy rmca_poll)"
			: "wait (poll() on the wait fd when idle)",
		o->window, o->rx_depth ? o->rx_depth : o->window,
		o->warmup < 0 ? "a tenth of iters, not timed"
			      : "-W ops, not timed");
}

static void *xalloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len ? len : 8))
		die(ENOMEM, "allocating %zu bytes", len);
	memset(p, 0, len);
	return p;
}

/* A data buffer: from rmca_mem_alloc with --alloc (ucx_perftest allocates
 * its buffers through UCX too), else xalloc. Freed by bufs_free. */
static void *buf_alloc(rmca_context_t *ctx, bool alloc, size_t len)
{
	void *p;

	if (!alloc)
		return xalloc(len);
	CHECK(rmca_mem_alloc(ctx, len ? len : 8, &p),
	      "allocating %zu bytes with rmca_mem_alloc", len);
	return p;
}

/* Buffers of buf_alloc: rmca_finalize already freed those of --alloc. */
static void buf_free(bool alloc, void *p)
{
	if (!alloc)
		free(p);
}

/* ---- rmca server ---- */

struct server_bufs {
	size_t max;
	bool alloc;
	char *rma, *sbuf, *rbuf;
	uint64_t *word;
	rmca_mr_t *rma_mr, *smr, *rmr, *word_mr;
};

static void setup_buffers(struct bench *b, struct server_bufs *s, size_t max,
			  struct region *out)
{
	unsigned rw = RMCA_ACCESS_REMOTE_READ | RMCA_ACCESS_REMOTE_WRITE;

	s->max = max;
	s->rma = buf_alloc(b->ctx, s->alloc, max);
	s->sbuf = buf_alloc(b->ctx, s->alloc, max);
	s->rbuf = buf_alloc(b->ctx, s->alloc, max);
	s->word = xalloc(64);
	CHECK(rmca_mr_reg(b->ctx, s->rma, max, rw, &s->rma_mr),
	      "registering %zu bytes for the client's puts and gets", max);
	CHECK(rmca_mr_reg(b->ctx, s->sbuf, max, RMCA_ACCESS_LOCAL, &s->smr),
	      "registering %zu bytes to send from", max);
	CHECK(rmca_mr_reg(b->ctx, s->rbuf, max, RMCA_ACCESS_LOCAL, &s->rmr),
	      "registering %zu bytes to receive into", max);
	*out = (struct region){.addr = (uintptr_t)s->rma,
			       .rkey = rmca_mr_rkey(s->rma_mr, b->ep)};
	/* A transport without any atomics path refuses the region: the
	 * client then skips the atomic tests. */
	if (!rmca_mr_reg(b->ctx, s->word, 64, rw | RMCA_ACCESS_REMOTE_ATOMIC,
			 &s->word_mr)) {
		out->aaddr = (uintptr_t)s->word;
		out->arkey = rmca_mr_rkey(s->word_mr, b->ep);
	}
}

/* Receives the server keeps posted in send_lat and send_bw. */
static long rx_depth(const struct ctrl *t)
{
	uint64_t d = t->rx_depth ? t->rx_depth : t->window;

	return d < 1 ? 1 : d > 65536 ? 65536 : (long)d;
}

/*
 * The test loops are never inlined: run-vm.sh --instructions counts under
 * callgrind only between the entry and the exit of run_* and serve_send_*
 * (its toggles), not the set-up around them.
 */
#define TEST_LOOP __attribute__((noinline))

/* Echo every message back: the other half of send_lat. */
static TEST_LOOP void serve_send_lat(struct bench *b, struct server_bufs *s,
				     const struct ctrl *t)
{
	long total = (long)(t->iters + t->warmup), posted = 0;
	long depth = rx_depth(t);
	long r0 = b->recvs, s0 = b->sends;

	for (; posted < total && posted < depth; posted++)
		POST(b, rmca_recv(b->ep, s->rbuf, t->size, s->rmr, &tag_data),
		     "a receive", t->size);
	for (long i = 0; i < total; i++) {
		wait_count(b, &b->recvs, r0 + i + 1);
		POST(b, rmca_send(b->ep, s->sbuf, t->size, s->smr, &tag_data),
		     "a send", t->size);
		if (posted < total) {
			POST(b,
			     rmca_recv(b->ep, s->rbuf, t->size, s->rmr,
				       &tag_data),
			     "a receive", t->size);
			posted++;
		}
	}
	wait_count(b, &b->sends, s0 + total);
}

/* Receive warm-up then timed messages; after each phase say so. */
static TEST_LOOP void serve_send_bw(struct bench *b, struct server_bufs *s,
				    const struct ctrl *t, uint64_t *ack,
				    rmca_mr_t *ack_mr)
{
	long phase[2] = {(long)t->warmup, (long)t->iters};
	long depth = rx_depth(t);

	for (int p = 0; p < 2; p++) {
		long r0 = b->recvs, s0 = b->sends, posted = 0;

		for (; posted < phase[p] && posted < depth; posted++)
			POST(b,
			     rmca_recv(b->ep, s->rbuf, t->size, s->rmr,
				       &tag_data),
			     "a receive", t->size);
		while (b->recvs - r0 < phase[p]) {
			long before = b->recvs;

			pump(b);
			for (long k = before; k < b->recvs && posted < phase[p];
			     k++, posted++)
				POST(b,
				     rmca_recv(b->ep, s->rbuf, t->size, s->rmr,
					       &tag_data),
				     "a receive", t->size);
		}
		*ack = (uint64_t)phase[p];
		POST(b, rmca_send(b->ep, ack, sizeof(*ack), ack_mr, &tag_ctrl),
		     "a send", sizeof(*ack));
		wait_count(b, &b->sends, s0 + 1);
	}
}

static int serve(const struct opts *o)
{
	struct bench b = {.spin = o->spin};
	struct server_bufs s = {.alloc = o->alloc};
	rmca_listener_t *l;
	struct ctrl t;
	struct region reg = {0};
	uint64_t ack;
	rmca_mr_t *tmr, *regmr, *ackmr;

	CHECK(rmca_init(&b.ctx), "rmca could not start");
	CHECK(rmca_listen(b.ctx, o->listen_at, &l), "listening on %s",
	      o->listen_at);
	printf("listening on port %d\n", rmca_listener_port(l));
	fflush(stdout);
	CHECK(rmca_accept(l, -1, &b.ep), "accepting a client on %s",
	      o->listen_at);
	show_ep(o, b.ep);
	CHECK(rmca_mr_reg(b.ctx, &t, sizeof(t), RMCA_ACCESS_LOCAL, &tmr),
	      "registering the control buffer");
	CHECK(rmca_mr_reg(b.ctx, &reg, sizeof(reg), RMCA_ACCESS_LOCAL, &regmr),
	      "registering the region buffer");
	CHECK(rmca_mr_reg(b.ctx, &ack, sizeof(ack), RMCA_ACCESS_LOCAL, &ackmr),
	      "registering the acknowledgement buffer");
	for (;;) {
		/* While waiting here the server keeps progressing: the
		 * client's puts, gets and atomics are executed inside these
		 * rmca_poll calls on tcp. */
		long c0 = b.ctrl_recvs;

		POST(&b, rmca_recv(b.ep, &t, sizeof(t), tmr, &tag_ctrl),
		     "a receive", sizeof(t));
		while (b.ctrl_recvs == c0)
			pump(&b);
		if (t.magic != PERF_MAGIC)
			die(RMCA_ERR_PROTOCOL,
			    "reading a control message from %s", peer_name);
		if (t.test == T_QUIT)
			break;
		if (t.test == T_SETUP) {
			long s0 = b.sends;

			if (s.max || !t.size || t.size > (1ull << 34))
				die(RMCA_ERR_PROTOCOL,
				    "setting up the buffers %s asked for",
				    peer_name);
			setup_buffers(&b, &s, t.size, &reg);
			POST(&b,
			     rmca_send(b.ep, &reg, sizeof(reg), regmr,
				       &tag_ctrl),
			     "a send", sizeof(reg));
			wait_count(&b, &b.sends, s0 + 1);
			continue;
		}
		if (!s.max || t.size > s.max)
			die(RMCA_ERR_PROTOCOL,
			    "reading a control message from %s", peer_name);
		if (t.test == T_SEND_LAT)
			serve_send_lat(&b, &s, &t);
		else if (t.test == T_SEND_BW)
			serve_send_bw(&b, &s, &t, &ack, ackmr);
	}
	rmca_ep_close(b.ep);
	rmca_listener_close(l);
	/* The regions go with the context; their memory only after it. */
	rmca_finalize(b.ctx);
	buf_free(s.alloc, s.rma);
	buf_free(s.alloc, s.sbuf);
	buf_free(s.alloc, s.rbuf);
	free(s.word);
	return 0;
}

/* ---- rmca client ---- */

struct client {
	struct bench b;
	const struct opts *o;
	struct region reg;
	char *src, *dst;
	rmca_mr_t *src_mr, *dst_mr, *res_mr, *ctrl_mr, *ack_mr;
	struct ctrl t;
	uint64_t ack;
	double *lat;
	uint64_t *stamps; /* one per timed iteration, and the end */
};

/* c->lat[0..n) from c->stamps[0..n] (over span a to b), divided by div. */
static void lat_from_stamps(struct client *c, long n, struct span a,
			    struct span b, double div)
{
	double k = us_per_stamp(a, b) / div;

	for (long i = 0; i < n; i++)
		c->lat[i] = (double)(c->stamps[i + 1] - c->stamps[i]) * k;
}

static void tell(struct client *c, enum test_id id, size_t size, long iters,
		 long warmup)
{
	long s0 = c->b.sends;

	c->t = (struct ctrl){.magic = PERF_MAGIC,
			     .test = id,
			     .size = size,
			     .iters = (uint64_t)iters,
			     .warmup = (uint64_t)warmup,
			     .window = (uint64_t)c->o->window,
			     .rx_depth = (uint64_t)c->o->rx_depth};
	POST(&c->b,
	     rmca_send(c->b.ep, &c->t, sizeof(c->t), c->ctrl_mr, &tag_ctrl),
	     "a send", sizeof(c->t));
	wait_count(&c->b, &c->b.sends, s0 + 1);
}

static void post_op(struct client *c, enum test_id id, size_t size)
{
	struct bench *b = &c->b;
	const struct region *r = &c->reg;

	switch (id) {
	case T_PUT_LAT:
		POST(b,
		     rmca_put(b->ep, c->src, size, c->src_mr, r->addr, r->rkey,
			      RMCA_DELIVERED, &tag_data),
		     "a put", size);
		break;
	case T_PUT_BW:
		POST(b,
		     rmca_put(b->ep, c->src, size, c->src_mr, r->addr, r->rkey,
			      0, &tag_data),
		     "a put", size);
		break;
	case T_GET_LAT:
	case T_GET_BW:
		POST(b,
		     rmca_get(b->ep, c->dst, size, c->dst_mr, r->addr, r->rkey,
			      &tag_data),
		     "a get", size);
		break;
	case T_ATOMIC_LAT:
	case T_ATOMIC_RATE: {
		struct rmca_atomic a = {.kind = RMCA_ATOMIC_FADD,
					.raddr = r->aaddr,
					.rkey = r->arkey,
					.operand = 1};
		uint64_t *res;

		while (!b->nfree)
			pump(b);
		res = &b->res[b->free_slots[--b->nfree]];
		POST(b, rmca_atomic(b->ep, &a, res, c->res_mr, res),
		     "an atomic", 8);
		break;
	}
	default:
		break;
	}
}

static long *done_counter(struct bench *b, enum test_id id)
{
	switch (id) {
	case T_PUT_LAT:
	case T_PUT_BW:
		return &b->puts;
	case T_GET_LAT:
	case T_GET_BW:
		return &b->gets;
	case T_SEND_BW:
		return &b->sends;
	default:
		return &b->atomics;
	}
}

/* One RMA or atomic op at a time; an op's time is from its post to the
 * next one's (its completion and the loop). */
static TEST_LOOP void run_rma_lat(struct client *c, enum test_id id,
				  size_t size, long iters, long warmup,
				  struct result *r)
{
	long *done = done_counter(&c->b, id);
	struct span s0 = {0}, s1;

	for (long i = -warmup; i < iters; i++) {
		long want = *done + 1;

		if (!i) {
			s0 = span_now();
			c->stamps[0] = s0.tk;
		} else if (i > 0) {
			c->stamps[i] = stamp();
		}
		post_op(c, id, size);
		wait_count(&c->b, done, want);
	}
	s1 = span_now();
	c->stamps[iters] = s1.tk;
	r->mops = iters / (s1.us - s0.us);
	lat_from_stamps(c, iters, s0, s1, 1);
	percentiles(c->lat, iters, r);
}

/* Ping-pong: the server echoes each message; half the round trip. */
static TEST_LOOP void run_send_lat(struct client *c, size_t size, long iters,
				   long warmup, struct result *r)
{
	struct bench *b = &c->b;
	long total = iters + warmup, posted = 0, r0 = b->recvs;
	long s0_sends = b->sends;
	long depth = c->o->window < 1 ? 1 : c->o->window;
	struct span s0 = {0}, s1;

	tell(c, T_SEND_LAT, size, iters, warmup);
	for (; posted < total && posted < depth; posted++)
		POST(b, rmca_recv(b->ep, c->dst, size, c->dst_mr, &tag_data),
		     "a receive", size);
	for (long i = 0; i < total; i++) {
		if (i == warmup) {
			s0 = span_now();
			c->stamps[0] = s0.tk;
		} else if (i > warmup) {
			c->stamps[i - warmup] = stamp();
		}
		POST(b, rmca_send(b->ep, c->src, size, c->src_mr, &tag_data),
		     "a send", size);
		wait_count(b, &b->recvs, r0 + i + 1);
		if (posted < total) {
			POST(b,
			     rmca_recv(b->ep, c->dst, size, c->dst_mr,
				       &tag_data),
			     "a receive", size);
			posted++;
		}
	}
	s1 = span_now();
	c->stamps[iters] = s1.tk;
	r->mops = iters / (s1.us - s0.us);
	lat_from_stamps(c, iters, s0, s1, 2);
	wait_count(b, &b->sends, s0_sends + total + 1);
	percentiles(c->lat, iters, r);
}

/* n ops with up to window outstanding; returns when all completed. */
static void stream(struct client *c, enum test_id id, size_t size, long n)
{
	struct bench *b = &c->b;
	long *done = done_counter(b, id), d0 = *done, posted = 0;

	while (*done - d0 < n) {
		while (posted < n && posted - (*done - d0) < c->o->window) {
			if (id == T_SEND_BW)
				POST(b,
				     rmca_send(b->ep, c->src, size, c->src_mr,
					       &tag_data),
				     "a send", size);
			else
				post_op(c, id, size);
			posted++;
		}
		pump(b);
	}
}

static TEST_LOOP void run_bw(struct client *c, enum test_id id, size_t size,
			     long iters, long warmup, struct result *r)
{
	struct bench *b = &c->b;
	double t0, t;

	if (id == T_SEND_BW) {
		long r0 = b->recvs;

		tell(c, T_SEND_BW, size, iters, warmup);
		for (int p = 0; p < 2; p++)
			POST(b,
			     rmca_recv(b->ep, &c->ack, sizeof(c->ack),
				       c->ack_mr, &tag_data),
			     "a receive", sizeof(c->ack));
		stream(c, id, size, warmup);
		wait_count(b, &b->recvs, r0 + 1);
		t0 = now_us();
		stream(c, id, size, iters);
		wait_count(b, &b->recvs, r0 + 2); /* all of them arrived */
	} else {
		stream(c, id, size, warmup);
		t0 = now_us();
		stream(c, id, size, iters);
		if (id == T_PUT_BW) { /* in the target's memory, all of it */
			long f0 = b->flushes;

			POST(b, rmca_flush(b->ep, &tag_data), "a flush", 0);
			wait_count(b, &b->flushes, f0 + 1);
		}
	}
	t = now_us() - t0;
	r->mops = iters / t;
	if (id != T_ATOMIC_RATE)
		r->mbs = (double)size * iters / t;
}

/* ---- raw TCP, the baseline ---- */

static int raw_fd;

static void raw_io(bool out, void *buf, size_t len, bool spin)
{
	char *p = buf;
	struct deadline d = {0};

	while (len) {
		ssize_t n = out ? send(raw_fd, p, len,
				       MSG_NOSIGNAL | (spin ? MSG_DONTWAIT : 0))
				: recv(raw_fd, p, len,
				       spin ? MSG_DONTWAIT : MSG_WAITALL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (!n)
			die(ECONNRESET, "%s %s",
			    out ? "sending to" : "receiving from", peer_name);
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			die(errno, "%s %s",
			    out ? "sending to" : "receiving from", peer_name);
		if (deadline_passed(&d, spin))
			die(ETIMEDOUT, "%s %s",
			    out ? "sending to" : "receiving from", peer_name);
	}
	prog.ops++;
	progress_tick();
}

static void raw_setsock(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int raw_addr(const char *host_port, bool passive, struct addrinfo **ai)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = passive ? AI_PASSIVE : 0};
	char host[256];
	const char *colon = strrchr(host_port, ':');
	size_t hl;

	if (!colon)
		return EINVAL;
	hl = (size_t)(colon - host_port);
	if (host_port[0] == '[' && hl >= 2 && host_port[hl - 1] == ']') {
		host_port++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return EINVAL;
	memcpy(host, host_port, hl);
	host[hl] = 0;
	return getaddrinfo(hl ? host : NULL, colon + 1, &hints, ai) ? EINVAL
								    : 0;
}

static int raw_serve(const struct opts *o)
{
	struct addrinfo *ai;
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	char *buf = NULL;
	int lfd, one = 1;
	struct ctrl t;

	CHECK(raw_addr(o->listen_at, true, &ai), "resolving %s", o->listen_at);
	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd < 0)
		die(errno, "creating a socket to listen on %s", o->listen_at);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl))
		die(errno, "listening on %s", o->listen_at);
	freeaddrinfo(ai);
	printf("listening on port %d\n",
	       ntohs(sa.ss_family == AF_INET6
			     ? ((struct sockaddr_in6 *)&sa)->sin6_port
			     : ((struct sockaddr_in *)&sa)->sin_port));
	fflush(stdout);
	raw_fd = accept(lfd, NULL, NULL);
	if (raw_fd < 0)
		die(errno, "accepting a client on %s", o->listen_at);
	close(lfd);
	raw_setsock(raw_fd);
	for (;;) {
		raw_io(false, &t, sizeof(t), o->spin);
		if (t.magic != PERF_MAGIC)
			die(RMCA_ERR_PROTOCOL,
			    "reading a control message from %s", peer_name);
		if (t.test == T_QUIT)
			break;
		if (t.test == T_SETUP) {
			if (buf || !t.size || t.size > (1ull << 34))
				die(RMCA_ERR_PROTOCOL,
				    "setting up the buffers %s asked for",
				    peer_name);
			buf = xalloc(t.size);
			continue;
		}
		if (!buf)
			die(RMCA_ERR_PROTOCOL,
			    "reading a control message from %s", peer_name);
		if (t.test == T_SEND_LAT) {
			for (uint64_t i = 0; i < t.iters + t.warmup; i++) {
				raw_io(false, buf, t.size, o->spin);
				raw_io(true, buf, t.size, o->spin);
			}
		} else if (t.test == T_SEND_BW) {
			uint64_t phase[2] = {t.warmup, t.iters};

			for (int p = 0; p < 2; p++) {
				for (uint64_t i = 0; i < phase[p]; i++)
					raw_io(false, buf, t.size, o->spin);
				raw_io(true, &phase[p], sizeof(phase[p]),
				       o->spin);
			}
		}
	}
	close(raw_fd);
	free(buf);
	return 0;
}

/* The same two tests as rmca's send_lat and send_bw: one send() or recv()
 * per message, fixed sizes so no framing; the socket buffer is the window. */
static void raw_run(struct client *c, enum test_id id, size_t size, long iters,
		    long warmup, struct result *r)
{
	bool spin = c->o->spin;
	struct ctrl t = {.magic = PERF_MAGIC,
			 .test = id,
			 .size = size,
			 .iters = (uint64_t)iters,
			 .warmup = (uint64_t)warmup};
	struct span s0 = {0}, s1;
	double t0, t1;
	uint64_t ack;

	raw_io(true, &t, sizeof(t), spin);
	if (id == T_SEND_LAT) {
		for (long i = -warmup; i < iters; i++) {
			if (!i) {
				s0 = span_now();
				c->stamps[0] = s0.tk;
			} else if (i > 0) {
				c->stamps[i] = stamp();
			}
			raw_io(true, c->src, size, spin);
			raw_io(false, c->dst, size, spin);
		}
		s1 = span_now();
		c->stamps[iters] = s1.tk;
		r->mops = iters / (s1.us - s0.us);
		lat_from_stamps(c, iters, s0, s1, 2);
		percentiles(c->lat, iters, r);
		return;
	}
	for (long i = 0; i < warmup; i++)
		raw_io(true, c->src, size, spin);
	raw_io(false, &ack, sizeof(ack), spin);
	t0 = now_us();
	for (long i = 0; i < iters; i++)
		raw_io(true, c->src, size, spin);
	raw_io(false, &ack, sizeof(ack), spin);
	t1 = now_us() - t0;
	r->mops = iters / t1;
	r->mbs = (double)size * iters / t1;
}

/* ---- the client's plan ---- */

#define MAX_SIZES 64

static const char default_lat_sizes[] = "8,64,512,4096,32768";
static const char default_bw_sizes[] =
	"8,64,512,4096,32768,262144,1048576,4194304";

/* "8,64,1k" or "8:4m" (powers of two from 8 to 4 MiB), mixed freely.
 * Returns the count, or -1 with *why saying what is wrong. */
static int parse_sizes(const char *s, size_t *out, const char **why)
{
	int n = 0;

	while (*s) {
		size_t l = strcspn(s, ",");
		char item[64], *colon;
		uint64_t a, b;

		if (!l || l >= sizeof(item)) {
			*why = "an empty or overlong element; give sizes as "
			       "8,64,1k or a range 8:4m";
			return -1;
		}
		memcpy(item, s, l);
		item[l] = '\0';
		colon = strchr(item, ':');
		if (colon)
			*colon = '\0';
		if (cli_size(item, &a, why) ||
		    (colon && cli_size(colon + 1, &b, why)))
			return -1;
		if (!colon)
			b = a;
		if (!a || b < a || b > (1ull << 34)) {
			*why = "sizes run from 1 byte to 16g, and a range A:B "
			       "from small to large";
			return -1;
		}
		for (uint64_t v = a; v <= b; v *= 2) {
			if (n == MAX_SIZES) {
				*why = "more than 64 sizes";
				return -1;
			}
			out[n++] = (size_t)v;
		}
		s += l + (s[l] == ',');
	}
	return n;
}

/* Fewer iterations for big messages: each (test, size) moves at most a
 * bounded number of bytes, so a run stays short. */
static long iters_for(const struct opts *o, const struct test_desc *d,
		      size_t size)
{
	double budget = d->lat ? 64.0 * (1 << 20) : 256.0 * (1 << 20);
	long n = o->iters;

	if ((double)n * (double)size > budget)
		n = (long)(budget / (double)size);
	return n < 16 ? 16 : n;
}

static bool wanted(const struct opts *o, const char *name)
{
	const char *p = o->tests;
	size_t l = strlen(name);

	if (!p || !strcmp(p, "all"))
		return true;
	while ((p = strstr(p, name))) {
		if ((p == o->tests || p[-1] == ',') && (!p[l] || p[l] == ','))
			return true;
		p += l;
	}
	return false;
}

static int client(const struct opts *o)
{
	size_t lat_sizes[MAX_SIZES], bw_sizes[MAX_SIZES], max = 8;
	int nlat, nbw;
	struct client c = {.o = o, .b = {.spin = o->spin}};
	struct bench *b = &c.b;
	long maxiters = o->iters < 16 ? 16 : o->iters;
	const char *why = NULL;
	int nresults = 0;

	nlat = parse_sizes(o->sizes ? o->sizes : default_lat_sizes, lat_sizes,
			   &why);
	nbw = nlat > 0 ? parse_sizes(o->sizes ? o->sizes : default_bw_sizes,
				     bw_sizes, &why)
		       : nlat;
	if (nlat <= 0 || nbw <= 0)
		return cli_bad("rmca_perf", "-S", o->sizes ? o->sizes : "",
			       why);
	for (int i = 0; i < nlat; i++)
		max = lat_sizes[i] > max ? lat_sizes[i] : max;
	for (int i = 0; i < nbw; i++)
		max = bw_sizes[i] > max ? bw_sizes[i] : max;
	/* With --alloc, once the context is there. */
	if (!o->alloc || o->raw) {
		c.src = xalloc(max);
		c.dst = xalloc(max);
	}
	c.lat = calloc((size_t)maxiters, sizeof(*c.lat));
	c.stamps = calloc((size_t)maxiters + 1, sizeof(*c.stamps));
	b->res = xalloc((size_t)o->window * sizeof(*b->res));
	b->free_slots = calloc((size_t)o->window, sizeof(*b->free_slots));
	if (!c.lat || !c.stamps || !b->free_slots)
		die(ENOMEM, "allocating the result arrays");
	for (long i = 0; i < o->window; i++)
		b->free_slots[b->nfree++] = i;
	if (c.src)
		memset(c.src, 0x5a, max);

	if (o->raw) {
		struct addrinfo *ai;
		struct ctrl t = {
			.magic = PERF_MAGIC, .test = T_SETUP, .size = max};

		CHECK(raw_addr(o->peer, false, &ai), "resolving %s", o->peer);
		raw_fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (raw_fd < 0 || connect(raw_fd, ai->ai_addr, ai->ai_addrlen))
			die(errno, "connecting to %s", o->peer);
		freeaddrinfo(ai);
		raw_setsock(raw_fd);
		fprintf(o->fmt != FMT_TABLE ? stderr : stdout,
			"# raw: plain TCP socket to %s, TCP_NODELAY, one "
			"send()/recv() per message\n",
			o->peer);
		raw_io(true, &t, sizeof(t), o->spin);
	} else {
		long r0;

		CHECK(rmca_init(&b->ctx), "rmca could not start");
		if (o->alloc) {
			c.src = buf_alloc(b->ctx, true, max);
			c.dst = buf_alloc(b->ctx, true, max);
			memset(c.src, 0x5a, max);
		}
		CHECK(rmca_connect(b->ctx, o->peer, 10000, &b->ep),
		      "connecting to %s", o->peer);
		show_ep(o, b->ep);
		CHECK(rmca_mr_reg(b->ctx, c.src, max, RMCA_ACCESS_LOCAL,
				  &c.src_mr),
		      "registering %zu bytes to send from", max);
		CHECK(rmca_mr_reg(b->ctx, c.dst, max, RMCA_ACCESS_LOCAL,
				  &c.dst_mr),
		      "registering %zu bytes to receive into", max);
		CHECK(rmca_mr_reg(b->ctx, b->res,
				  (size_t)o->window * sizeof(*b->res),
				  RMCA_ACCESS_LOCAL, &c.res_mr),
		      "registering the atomic results");
		CHECK(rmca_mr_reg(b->ctx, &c.t, sizeof(c.t), RMCA_ACCESS_LOCAL,
				  &c.ctrl_mr),
		      "registering the control buffer");
		CHECK(rmca_mr_reg(b->ctx, &c.ack, sizeof(c.ack),
				  RMCA_ACCESS_LOCAL, &c.ack_mr),
		      "registering the acknowledgement buffer");
		/* The region reply reuses the ack buffer's neighbour: c.reg. */
		{
			rmca_mr_t *regmr;

			CHECK(rmca_mr_reg(b->ctx, &c.reg, sizeof(c.reg),
					  RMCA_ACCESS_LOCAL, &regmr),
			      "registering the region buffer");
			r0 = b->recvs;
			POST(b,
			     rmca_recv(b->ep, &c.reg, sizeof(c.reg), regmr,
				       &tag_data),
			     "a receive", sizeof(c.reg));
			tell(&c, T_SETUP, max, 0, 0);
			wait_count(b, &b->recvs, r0 + 1);
		}
	}
	show_mode(o);
	print_head(o);

	for (size_t i = 0; i < NTESTS; i++) {
		const struct test_desc *d = &tests[i];
		const size_t *sizes = d->lat ? lat_sizes : bw_sizes;
		int n = d->sized ? (d->lat ? nlat : nbw) : 1;

		if (!wanted(o, d->name) || (o->raw && !d->raw))
			continue;
		if ((d->id == T_ATOMIC_LAT || d->id == T_ATOMIC_RATE) &&
		    !o->raw && !c.reg.arkey) {
			fprintf(stderr,
				"rmca_perf: %s skipped: no atomics on this "
				"endpoint\n",
				d->name);
			continue;
		}
		for (int k = 0; k < n; k++) {
			size_t size = d->sized ? sizes[k] : 8;
			long iters = iters_for(o, d, size);
			long warmup =
				o->warmup >= 0 ? o->warmup : iters / 10 + 1;
			struct result r = {.test = d->name,
					   .size = size,
					   .iters = iters,
					   .rtt = !d->lat		? 0
						  : d->id == T_SEND_LAT ? 1
									: 2};

			if (iters > maxiters)
				iters = r.iters = maxiters;
			progress_begin(d->name, size);
			if (o->raw)
				raw_run(&c, d->id, size, iters, warmup, &r);
			else if (d->id == T_SEND_LAT)
				run_send_lat(&c, size, iters, warmup, &r);
			else if (d->lat)
				run_rma_lat(&c, d->id, size, iters, warmup, &r);
			else
				run_bw(&c, d->id, size, iters, warmup, &r);
			progress_end();
			print_result(o, &r, nresults++);
		}
	}

	print_tail(o, nresults);
	if (o->raw) {
		struct ctrl t = {.magic = PERF_MAGIC, .test = T_QUIT};

		raw_io(true, &t, sizeof(t), o->spin);
		close(raw_fd);
	} else {
		/* The server closes as soon as it reads this; on iWARP the
		 * send completes only once a later read confirms it, which
		 * then fails: either way the server got it. */
		b->closing = true;
		tell(&c, T_QUIT, 0, 0, 0);
		rmca_ep_close(b->ep);
		rmca_finalize(b->ctx);
	}
	buf_free(o->alloc && !o->raw, c.src);
	buf_free(o->alloc && !o->raw, c.dst);
	free(c.lat);
	free(c.stamps);
	free(b->res);
	free(b->free_slots);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: rmca_perf -s [-l HOST:PORT] [--raw] [--spin] "
		   "[--alloc]\n"
		   "       rmca_perf [-t TESTS] [-n N] [-w N] [-W N] [-S "
		   "SIZES] [--raw] [--spin]\n"
		   "                 [--alloc]\n"
		   "                 [--parsable | --csv | --json] HOST:PORT\n"
		   "       rmca_perf -h | --help | -V | --version\n"
		   "Latency, bandwidth and message rate of rmca operations "
		   "between two\n"
		   "processes (doc/bench.md).\n"
		   "\n"
		   "  -s, --server        serve one client; prints \"listening "
		   "on port N\"\n"
		   "  -l, --listen HOST:PORT  where to listen (127.0.0.1:0: "
		   "any free port)\n"
		   "  -t, --tests LIST    tests, comma separated, or all "
		   "(default):\n"
		   "                      send_lat put_lat get_lat atomic_lat\n"
		   "                      put_bw get_bw send_bw atomic_rate\n"
		   "  -n, --iterations N  iterations per size (10000; fewer "
		   "for big sizes)\n"
		   "  -w, --window N      ops outstanding in *_bw and *_rate "
		   "(64)\n"
		   "  -r, --rx-depth N    receives the server keeps posted in "
		   "send_lat and\n"
		   "                      send_bw (the window)\n"
		   "  -W, --warmup N      warm-up ops per size, not timed "
		   "(iters/10+1)\n"
		   "  -S, --sizes LIST    sizes, \"8,64,1k\" or \"8:4m\" "
		   "(doubling);\n"
		   "                      suffixes k, m, g (1024-based)\n"
		   "      --raw           plain TCP socket instead of rmca "
		   "(send_lat, send_bw)\n"
		   "      --spin          busy-poll instead of sleeping in "
		   "poll()\n"
		   "      --alloc         data buffers from rmca_mem_alloc "
		   "(memory a same-host\n"
		   "                      peer maps), as ucx_perftest "
		   "allocates its through UCX\n"
		   "      --parsable      one line per value: "
		   "test,size,iters,value,unit\n"
		   "      --csv           one line per result, every column, "
		   "with a header\n"
		   "      --json          one JSON object with every result\n"
		   "  -h, --help          this text\n"
		   "  -V, --version       the version of rmca_perf and of "
		   "librmca\n"
		   "\n"
		   "Latency rows say whether they are half a round trip "
		   "(send_lat) or a whole\n"
		   "one (put_lat, get_lat, atomic_lat). On a terminal, a "
		   "progress line on stderr\n"
		   "shows a long run is alive.\n"
		   "Exit status: 0 done, 1 a failure, 2 bad usage.\n");
}

/* The tests named in a comma list all exist; else an error that names one. */
static int check_tests(const char *list)
{
	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");
		bool ok = l == 3 && !strncmp(p, "all", 3);
		char bad[192];

		for (size_t i = 0; i < NTESTS && !ok; i++)
			ok = strlen(tests[i].name) == l &&
			     !strncmp(p, tests[i].name, l);
		if (!ok) {
			snprintf(bad, sizeof(bad),
				 "no test '%.*s': try send_lat, put_lat, "
				 "get_lat, atomic_lat, put_bw, get_bw, "
				 "send_bw, atomic_rate or all",
				 (int)(l < 32 ? l : 32), p);
			return cli_bad("rmca_perf", "-t", list, bad);
		}
		p += l + (p[l] == ',');
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"alloc", no_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{"iterations", required_argument, NULL, 'n'},
		{"listen", required_argument, NULL, 'l'},
		{"csv", no_argument, NULL, 'C'},
		{"json", no_argument, NULL, 'J'},
		{"parsable", no_argument, NULL, 'p'},
		{"raw", no_argument, NULL, 'R'},
		{"rx-depth", required_argument, NULL, 'r'},
		{"server", no_argument, NULL, 's'},
		{"sizes", required_argument, NULL, 'S'},
		{"spin", no_argument, NULL, 'P'},
		{"tests", required_argument, NULL, 't'},
		{"version", no_argument, NULL, 'V'},
		{"warmup", required_argument, NULL, 'W'},
		{"window", required_argument, NULL, 'w'},
		{0},
	};
	struct opts o = {.listen_at = "127.0.0.1:0",
			 .tests = "all",
			 .iters = 10000,
			 .window = 64,
			 .warmup = -1};
	const char *why;
	int opt;

	while ((opt = getopt_long(argc, argv, "sl:t:n:w:r:W:S:hV", lopts,
				  NULL)) != -1) {
		switch (opt) {
		case 's':
			o.server = true;
			break;
		case 'l':
			o.listen_at = optarg;
			break;
		case 't':
			o.tests = optarg;
			break;
		case 'n':
			if (cli_long(optarg, 1, 1000000000, &o.iters, &why))
				return cli_bad("rmca_perf", "-n", optarg, why);
			break;
		case 'w':
			if (cli_long(optarg, 1, 65536, &o.window, &why))
				return cli_bad("rmca_perf", "-w", optarg, why);
			break;
		case 'r':
			if (cli_long(optarg, 1, 65536, &o.rx_depth, &why))
				return cli_bad("rmca_perf", "-r", optarg, why);
			break;
		case 'W':
			if (cli_long(optarg, 0, 1000000000, &o.warmup, &why))
				return cli_bad("rmca_perf", "-W", optarg, why);
			break;
		case 'S':
			o.sizes = optarg;
			break;
		case 'R':
			o.raw = true;
			break;
		case 'A':
			o.alloc = true;
			break;
		case 'P':
			o.spin = true;
			break;
		case 'p':
		case 'C':
		case 'J': {
			enum format f = opt == 'p'   ? FMT_PARSABLE
					: opt == 'C' ? FMT_CSV
						     : FMT_JSON;

			if (o.fmt != FMT_TABLE && o.fmt != f) {
				fprintf(stderr,
					"rmca_perf: --parsable, --csv and "
					"--json exclude each other\n");
				return cli_hint("rmca_perf");
			}
			o.fmt = f;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			cli_version("rmca_perf");
			return 0;
		default:
			return cli_hint("rmca_perf"); /* getopt said why */
		}
	}
	if (o.server && optind != argc) {
		fprintf(stderr,
			"rmca_perf: -s takes no HOST:PORT ('%s'); use -l %s to "
			"choose where to listen\n",
			argv[optind], argv[optind]);
		return cli_hint("rmca_perf");
	}
	if (!o.server && optind == argc) {
		fprintf(stderr, "rmca_perf: missing HOST:PORT of a server "
				"started with rmca_perf -s\n");
		return cli_hint("rmca_perf");
	}
	if (!o.server && optind != argc - 1) {
		fprintf(stderr,
			"rmca_perf: one HOST:PORT only ('%s' is one too "
			"many)\n",
			argv[optind + 1]);
		return cli_hint("rmca_perf");
	}
	if (check_tests(o.tests))
		return CLI_USAGE;
	if (!o.server)
		o.peer = peer_name = argv[optind];
	prog.on = isatty(STDERR_FILENO);
	if (o.server)
		return o.raw ? raw_serve(&o) : serve(&o);
	return client(&o);
}
