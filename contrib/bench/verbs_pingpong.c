/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_pingpong - a bare verbs SEND ping-pong over rdma_cm, with rmca's
 * choices on the wire and the device switched on one at a time, to tell
 * which of them (if any) a device pays for: contrib/bench/pingpong-vm.sh
 * runs it on rxe0 and siw0 in the project's guest.
 *
 *   verbs_pingpong -s [options]         the server (run first)
 *   verbs_pingpong [options]            the client; prints one line:
 *   <options> min <us> med <us>         half round trips over -n
 *
 * Both sides busy-poll one CQ for send and receive completions, as
 * ib_send_lat does, and wait for each signalled send's completion before
 * they go on. Options (both sides alike):
 *   -a ADDR   the server's address (10.0.1.1, siw0)    -p PORT (7999)
 *   -n N      timed round trips (20000, after 1000 not timed)
 *   -S BYTES  message size (8)
 *   -g 2      each receive in two SGEs: 8 bytes into a second region
 *             (rmca's iWARP header), then the message
 *   -h 1      each send carries 8 bytes from the second region first
 *             (with -g 2: the receive takes both)
 *   -u 1      sends unsignalled but one in 64 (rmca signals few)
 *   -i 1      sends inline (max_inline_data from -I, 64)
 *   -C N      CQ entries (64)              -e 1  CQ with a completion channel
 *   -r N      receives kept posted (1)     -R N  max_recv_wr beyond -r (16)
 *   -Q N      max_send_wr (128)            -D N  ORD and IRD asked (1)
 *   -P N      bytes of connection private data (0; rmca's: 24)
 *   -m 1      sends with an immediate, the count of receives posted, as
 *             rmca's ib sends carry it (IB transport only: iWARP has none)
 *   -w N      N calls through a function pointer between a message's
 *             arrival and the answer (what user-space work costs the
 *             guest's emulated CPU)
 */
#include <endian.h>
#include <getopt.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define WARMUP	     1000
#define SLOTS	     64
#define SIGNAL_EVERY 64

struct opts {
	int server, iters, size, sges, hdr, unsig, inl, cq, chan, depth;
	int rq_extra, sq, rd, inl_max, pdata, work, imm;
	const char *addr, *port;
};

struct pp {
	const struct opts *o;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *hmr;
	char *buf, *hbuf;
	long slot, sent;
	int early; /* receives found while waiting for a send */
	uint32_t imm_seen; /* the last immediate received (-m 1) */
};

static void die(const char *what)
{
	fprintf(stderr, "verbs_pingpong: %s\n", what);
	exit(1);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static __attribute__((noinline)) long step(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

static long (*volatile step_fn)(long) = step;

static void post_recv(struct pp *p)
{
	struct ibv_sge sg[2];
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = sg}, *bad;
	long s = p->slot++ % SLOTS;

	if (p->o->sges == 2)
		sg[wr.num_sge++] = (struct ibv_sge){.addr = (uintptr_t)p->hbuf +
							    (uint64_t)s * 8,
						    .length = 8,
						    .lkey = p->hmr->lkey};
	sg[wr.num_sge++] = (struct ibv_sge){.addr = (uintptr_t)p->buf + 4096 +
						    (uint64_t)s * 64,
					    .length = (uint32_t)p->o->size,
					    .lkey = p->mr->lkey};
	if (ibv_post_recv(p->id->qp, &wr, &bad))
		die("ibv_post_recv");
}

/* Poll until a completion of wr_id `want` (1 receive, 2 send) comes. */
static void wait_for(struct pp *p, uint64_t want)
{
	struct ibv_wc wc;

	if (want == 1 && p->early) {
		p->early--;
		return;
	}
	for (;;) {
		int n = ibv_poll_cq(p->cq, 1, &wc);

		if (n < 0)
			die("ibv_poll_cq");
		if (!n)
			continue;
		if (wc.status) {
			fprintf(stderr, "verbs_pingpong: %s\n",
				ibv_wc_status_str(wc.status));
			exit(1);
		}
		/* the receiver reads the immediate, as rmca takes its count */
		if (wc.wc_flags & IBV_WC_WITH_IMM)
			p->imm_seen = be32toh(wc.imm_data);
		if (wc.wr_id == want)
			return;
		p->early += wc.wr_id == 1;
	}
}

static void send_one(struct pp *p)
{
	const struct opts *o = p->o;
	struct ibv_sge sg[2];
	struct ibv_send_wr wr = {.wr_id = 2,
				 .sg_list = sg,
				 .opcode = o->imm ? IBV_WR_SEND_WITH_IMM :
						    IBV_WR_SEND},
			   *bad;
	int sig = !o->unsig || p->sent % SIGNAL_EVERY == SIGNAL_EVERY - 1;

	if (o->hdr)
		sg[wr.num_sge++] =
			(struct ibv_sge){.addr = (uintptr_t)p->hbuf + 2048,
					 .length = 8,
					 .lkey = p->hmr->lkey};
	sg[wr.num_sge++] = (struct ibv_sge){.addr = (uintptr_t)p->buf,
					    .length = (uint32_t)o->size,
					    .lkey = p->mr->lkey};
	wr.send_flags =
		(sig ? IBV_SEND_SIGNALED : 0) | (o->inl ? IBV_SEND_INLINE : 0);
	if (o->imm)
		wr.imm_data = htobe32((uint32_t)p->slot);
	if (ibv_post_send(p->id->qp, &wr, &bad))
		die("ibv_post_send");
	p->sent++;
	if (sig)
		wait_for(p, 2);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ec,
				    enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ec, &ev))
		die("rdma_get_cm_event");
	if (ev->event != type) {
		fprintf(stderr, "verbs_pingpong: %s, not %s\n",
			rdma_event_str(ev->event), rdma_event_str(type));
		exit(1);
	}
	return ev;
}

static void connect_qp(struct pp *p, struct rdma_event_channel *ec)
{
	const struct opts *o = p->o;
	static char pdata[64];
	struct rdma_conn_param cp = {.private_data = o->pdata ? pdata : NULL,
				     .private_data_len = (uint8_t)o->pdata,
				     .initiator_depth = (uint8_t)o->rd,
				     .responder_resources = (uint8_t)o->rd,
				     .retry_count = 7,
				     .rnr_retry_count = 7};
	struct ibv_comp_channel *cc = NULL;
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC};
	struct ibv_pd *pd = ibv_alloc_pd(p->id->verbs);
	size_t len = 4 * 4096;

	if (o->chan)
		cc = ibv_create_comp_channel(p->id->verbs);
	p->cq = ibv_create_cq(p->id->verbs, o->cq, NULL, cc, 0);
	if (!pd || !p->cq || (o->chan && !cc))
		die("cannot make the PD or CQ");
	qa.send_cq = qa.recv_cq = p->cq;
	qa.cap.max_send_wr = (uint32_t)o->sq;
	qa.cap.max_recv_wr = (uint32_t)(o->depth + o->rq_extra);
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 2;
	qa.cap.max_inline_data = o->inl ? (uint32_t)o->inl_max : 0;
	if (rdma_create_qp(p->id, pd, &qa))
		die("rdma_create_qp");
	p->buf = aligned_alloc(4096, len);
	p->hbuf = aligned_alloc(4096, 4096);
	if (!p->buf || !p->hbuf)
		die("out of memory");
	memset(p->buf, 0, len);
	memset(p->hbuf, 0, 4096);
	p->mr = ibv_reg_mr(pd, p->buf, len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE);
	p->hmr = ibv_reg_mr(pd, p->hbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!p->mr || !p->hmr)
		die("ibv_reg_mr");
	for (int i = 0; i < o->depth; i++)
		post_recv(p);
	if (o->server ? rdma_accept(p->id, &cp) : rdma_connect(p->id, &cp))
		die("rdma_accept/rdma_connect");
	rdma_ack_cm_event(expect(ec, RDMA_CM_EVENT_ESTABLISHED));
}

static void usage(void)
{
	fprintf(stderr, "usage: verbs_pingpong [-s] [-a ADDR] [-p PORT] [-n N] "
			"[-S BYTES] [-g 1|2] [-h 0|1] [-u 0|1] [-i 0|1] [-C N] "
			"[-e 0|1] [-r N] [-R N] [-Q N] [-D N] [-I N] [-P N] "
			"[-w N] [-m 0|1]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.iters = 20000,
			 .size = 8,
			 .sges = 1,
			 .cq = 64,
			 .depth = 1,
			 .rq_extra = 16,
			 .sq = 128,
			 .rd = 1,
			 .inl_max = 64,
			 .addr = "10.0.1.1",
			 .port = "7999"};
	struct pp p = {.o = &o};
	struct rdma_event_channel *ec;
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;
	struct addrinfo *ai;
	double *t;
	int c;

	while ((c = getopt(argc, argv,
			   "sa:p:n:S:g:h:u:i:C:e:r:R:Q:D:I:P:w:m:")) != -1) {
		int v = optarg ? atoi(optarg) : 0;

		switch (c) {
		case 's':
			o.server = 1;
			break;
		case 'a':
			o.addr = optarg;
			break;
		case 'p':
			o.port = optarg;
			break;
		case 'n':
			o.iters = v;
			break;
		case 'S':
			o.size = v;
			break;
		case 'g':
			o.sges = v;
			break;
		case 'h':
			o.hdr = v;
			break;
		case 'u':
			o.unsig = v;
			break;
		case 'i':
			o.inl = v;
			break;
		case 'C':
			o.cq = v;
			break;
		case 'e':
			o.chan = v;
			break;
		case 'r':
			o.depth = v;
			break;
		case 'R':
			o.rq_extra = v;
			break;
		case 'Q':
			o.sq = v;
			break;
		case 'D':
			o.rd = v;
			break;
		case 'I':
			o.inl_max = v;
			break;
		case 'P':
			o.pdata = v;
			break;
		case 'w':
			o.work = v;
			break;
		case 'm':
			o.imm = v;
			break;
		default:
			usage();
		}
	}
	if (o.iters < 1 || o.size < 1 || o.size > 64 || o.depth < 1 ||
	    (o.sges != 1 && o.sges != 2) || o.pdata < 0 || o.pdata > 64)
		usage();
	if (getaddrinfo(o.addr, o.port, NULL, &ai))
		die("cannot resolve the address");
	ec = rdma_create_event_channel();
	if (!ec)
		die("rdma_create_event_channel");
	if (o.server) {
		if (rdma_create_id(ec, &lid, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 1))
			die("cannot listen");
		ev = expect(ec, RDMA_CM_EVENT_CONNECT_REQUEST);
		p.id = ev->id;
		rdma_ack_cm_event(ev);
	} else {
		if (rdma_create_id(ec, &p.id, NULL, RDMA_PS_TCP) ||
		    rdma_resolve_addr(p.id, NULL, ai->ai_addr, 2000))
			die("cannot resolve");
		rdma_ack_cm_event(expect(ec, RDMA_CM_EVENT_ADDR_RESOLVED));
		if (rdma_resolve_route(p.id, 2000))
			die("cannot resolve the route");
		rdma_ack_cm_event(expect(ec, RDMA_CM_EVENT_ROUTE_RESOLVED));
	}
	connect_qp(&p, ec);
	usleep(200000); /* the server's receives posted before the first */
	t = malloc(sizeof(*t) * (size_t)o.iters);
	if (!t)
		die("out of memory");
	for (int i = 0; i < o.iters + WARMUP; i++) {
		double t0 = now_us();
		long x = 0;

		if (!o.server)
			send_one(&p);
		wait_for(&p, 1);
		post_recv(&p);
		for (int k = 0; k < o.work; k++)
			x = step_fn(x);
		if (x < 0)
			die("never");
		if (o.server)
			send_one(&p);
		if (i >= WARMUP)
			t[i - WARMUP] = (now_us() - t0) / 2;
	}
	if (!o.server) {
		qsort(t, (size_t)o.iters, sizeof(*t), cmp_double);
		printf("S=%d g=%d h=%d u=%d i=%d C=%d e=%d r=%d R=%d Q=%d D=%d "
		       "P=%d w=%d m=%d min %.2f med %.2f\n",
		       o.size, o.sges, o.hdr, o.unsig, o.inl, o.cq, o.chan,
		       o.depth, o.rq_extra, o.sq, o.rd, o.pdata, o.work, o.imm,
		       t[0], t[o.iters / 2]);
	}
	return 0;
}
