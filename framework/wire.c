// SPDX-License-Identifier: BSD-3-Clause
/*
 * Hello encoding and decoding. The decoder is the first code that reads
 * bytes from the network, so it checks every length against what is left
 * before it reads, and every string lands NUL-terminated in a fixed field.
 */
#include <stdio.h>
#include <string.h>

#include <rmca.h>

#include "wire.h"

struct wbuf {
	uint8_t *p;
	size_t len, off;
	int overflow;
};

static void put_bytes(struct wbuf *w, const void *src, size_t n)
{
	if (w->overflow || n > w->len - w->off) {
		w->overflow = 1;
		return;
	}
	memcpy(w->p + w->off, src, n);
	w->off += n;
}

static void put_u8(struct wbuf *w, uint8_t v)
{
	put_bytes(w, &v, 1);
}

static void put_le(struct wbuf *w, uint64_t v, unsigned n)
{
	uint8_t b[8];

	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put_bytes(w, b, n);
}

/* A string from a field of size cap (NUL-terminated within it). */
static void put_str(struct wbuf *w, const char *s, size_t cap)
{
	size_t n = strnlen(s, cap < 256 ? cap : 255);

	put_u8(w, (uint8_t)n);
	put_bytes(w, s, n);
}

int rmca_hello_encode(const struct rmca_hello *h, uint8_t *buf, size_t len)
{
	struct wbuf w = { .p = buf, .len = len };

	put_le(&w, RMCA_WIRE_MAGIC, 4);
	put_le(&w, h->version, 2);
	put_u8(&w, h->kind);
	put_u8(&w, 0);
	if (h->kind == RMCA_WIRE_REJECT) {
		put_le(&w, (uint16_t)-h->status, 2);
		put_str(&w, h->reason, sizeof(h->reason));
	} else if (h->kind == RMCA_WIRE_RAILS) {
		if (h->ntaken > RMCA_WIRE_MAX_RAILS)
			return RMCA_ERR_INVALID;
		put_u8(&w, h->ntaken);
		put_bytes(&w, h->taken, h->ntaken);
	} else {
		if (h->nmods > RMCA_HELLO_MAX_MODS)
			return RMCA_ERR_INVALID;
		put_le(&w, h->token, 8);
		put_u8(&w, h->role);
		put_u8(&w, h->atomic_mode);
		put_u8(&w, h->choice_a);
		put_u8(&w, h->choice_p);
		put_le(&w, h->netns, 8);
		put_str(&w, h->boot_id, sizeof(h->boot_id));
		put_u8(&w, h->nmods);
		for (unsigned i = 0; i < h->nmods; i++) {
			const struct rmca_wire_mod *m = &h->mods[i];

			if (m->addr_len > RMCA_WIRE_ADDR_MAX)
				return RMCA_ERR_INVALID;
			put_str(&w, m->component, sizeof(m->component));
			put_str(&w, m->device, sizeof(m->device));
			put_le(&w, m->caps, 4);
			put_le(&w, (uint32_t)m->priority, 4);
			put_le(&w, m->addr_len, 2);
			put_bytes(&w, m->addr, m->addr_len);
		}
		if (h->nrails > RMCA_WIRE_MAX_RAILS)
			return RMCA_ERR_INVALID;
		put_u8(&w, h->nrails);
		for (unsigned i = 0;
		     h->role == RMCA_ROLE_PASSIVE && i < h->nrails; i++) {
			put_u8(&w, h->rail_a[i]);
			put_u8(&w, h->rail_p[i]);
		}
	}
	return w.overflow ? RMCA_ERR_NO_MEMORY : (int)w.off;
}

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	int short_read;
};

static int get_bytes(struct rbuf *r, void *dst, size_t n)
{
	if (r->short_read || n > r->len - r->off) {
		r->short_read = 1;
		return -1;
	}
	memcpy(dst, r->p + r->off, n);
	r->off += n;
	return 0;
}

static uint64_t get_le(struct rbuf *r, unsigned n)
{
	uint8_t b[8] = { 0 };
	uint64_t v = 0;

	if (get_bytes(r, b, n))
		return 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

/* A string into a fixed field of size cap: longer ones are malformed. */
static int get_str(struct rbuf *r, char *dst, size_t cap)
{
	uint8_t n = (uint8_t)get_le(r, 1);

	if (r->short_read || (size_t)n >= cap)
		return -1;
	if (get_bytes(r, dst, n))
		return -1;
	dst[n] = '\0';
	/* Names end up in logs and in rmca_ep_attr: printable ASCII only. */
	for (unsigned i = 0; i < n; i++)
		if (dst[i] < 0x20 || dst[i] > 0x7e)
			return -1;
	return 0;
}

#define BAD(...)                                         \
	do {                                             \
		snprintf(why, why_len, __VA_ARGS__);     \
		return RMCA_ERR_PROTOCOL;                \
	} while (0)

int rmca_hello_decode(const uint8_t *buf, size_t len, struct rmca_hello *h,
		      char *why, size_t why_len)
{
	struct rbuf r = { .p = buf, .len = len };
	uint32_t magic;

	memset(h, 0, sizeof(*h));
	magic = (uint32_t)get_le(&r, 4);
	if (r.short_read)
		BAD("truncated header (%zu bytes)", len);
	if (magic != RMCA_WIRE_MAGIC)
		BAD("not an rmca peer (magic 0x%08x)", magic);
	h->version = (uint16_t)get_le(&r, 2);
	h->kind = (uint8_t)get_le(&r, 1);
	if (get_le(&r, 1))
		BAD("reserved header byte set");
	if (r.short_read)
		BAD("truncated header (%zu bytes)", len);
	if (h->version != RMCA_WIRE_VERSION)
		BAD("protocol version %u, expected %u", h->version,
		    RMCA_WIRE_VERSION);

	switch (h->kind) {
	case RMCA_WIRE_REJECT:
		h->status = -(int)get_le(&r, 2);
		if (get_str(&r, h->reason, sizeof(h->reason)))
			BAD("truncated or malformed reject");
		break;
	case RMCA_WIRE_HELLO:
		h->token = get_le(&r, 8);
		h->role = (uint8_t)get_le(&r, 1);
		h->atomic_mode = (uint8_t)get_le(&r, 1);
		h->choice_a = (uint8_t)get_le(&r, 1);
		h->choice_p = (uint8_t)get_le(&r, 1);
		h->netns = get_le(&r, 8);
		if (get_str(&r, h->boot_id, sizeof(h->boot_id)))
			BAD("truncated or malformed host identity");
		h->nmods = (uint8_t)get_le(&r, 1);
		if (r.short_read)
			BAD("truncated hello");
		if (h->role < RMCA_ROLE_ACTIVE || h->role > RMCA_ROLE_PROBE)
			BAD("unknown role %u", h->role);
		if (h->nmods > RMCA_HELLO_MAX_MODS)
			BAD("%u modules, at most %u", h->nmods,
			    RMCA_HELLO_MAX_MODS);
		for (unsigned i = 0; i < h->nmods; i++) {
			struct rmca_wire_mod *m = &h->mods[i];

			if (get_str(&r, m->component, sizeof(m->component)) ||
			    get_str(&r, m->device, sizeof(m->device)))
				BAD("truncated or malformed module %u", i);
			m->caps = (uint32_t)get_le(&r, 4);
			m->priority = (int32_t)(uint32_t)get_le(&r, 4);
			m->addr_len = (uint16_t)get_le(&r, 2);
			if (r.short_read || m->addr_len > RMCA_WIRE_ADDR_MAX)
				BAD("truncated or oversized address of module %u",
				    i);
			if (get_bytes(&r, m->addr, m->addr_len))
				BAD("truncated address of module %u", i);
		}
		if (h->choice_a != RMCA_WIRE_NO_CHOICE &&
		    h->choice_p == RMCA_WIRE_NO_CHOICE)
			BAD("half a transport choice");
		h->nrails = (uint8_t)get_le(&r, 1);
		if (r.short_read)
			BAD("truncated hello (no rail count)");
		if (h->nrails > RMCA_WIRE_MAX_RAILS)
			BAD("%u rails, at most %u", h->nrails,
			    RMCA_WIRE_MAX_RAILS);
		if (h->role == RMCA_ROLE_PASSIVE && h->nrails &&
		    h->choice_p == RMCA_WIRE_NO_CHOICE)
			BAD("rails without a transport choice");
		/* the active side says how many it takes; the passive's
		 * answer lists them */
		for (unsigned i = 0;
		     h->role == RMCA_ROLE_PASSIVE && i < h->nrails; i++) {
			h->rail_a[i] = (uint8_t)get_le(&r, 1);
			h->rail_p[i] = (uint8_t)get_le(&r, 1);
			if (r.short_read)
				BAD("truncated rail %u", i);
			/* the active's indexes are checked by the active side,
			 * which knows what it offered */
			if (h->rail_p[i] >= h->nmods)
				BAD("rail %u names module %u of %u", i,
				    h->rail_p[i], h->nmods);
		}
		break;
	case RMCA_WIRE_RAILS:
		/* whether each names a rail the answer listed is the
		 * passive side's check: it knows what it listed */
		h->ntaken = (uint8_t)get_le(&r, 1);
		if (r.short_read)
			BAD("truncated rails answer");
		if (h->ntaken > RMCA_WIRE_MAX_RAILS)
			BAD("takes %u rails, at most %u", h->ntaken,
			    RMCA_WIRE_MAX_RAILS);
		for (unsigned i = 0; i < h->ntaken; i++) {
			h->taken[i] = (uint8_t)get_le(&r, 1);
			if (r.short_read)
				BAD("truncated rails answer");
			if (i && h->taken[i] <= h->taken[i - 1])
				BAD("rail %u taken after rail %u (increasing, "
				    "once each)",
				    h->taken[i], h->taken[i - 1]);
		}
		break;
	default:
		BAD("unknown message kind %u", h->kind);
	}
	if (r.off != len)
		BAD("%zu trailing bytes", len - r.off);
	return 0;
}
