/* SPDX-License-Identifier: BSD-3-Clause */
/* Encoding of the libjob datagram header (big-endian, fixed offsets), so
 * that ranks on hosts of different byte order still agree. */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "libjob/wire.h"

static void put16(uint8_t *p, uint16_t v) { v = htobe16(v); memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static uint16_t get16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return be16toh(v); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

/*
 * Layout: 0 magic, 1 kind, 2 flags, 3 collective (high nibble) and
 * algorithm (low nibble, DATA only), 4 comm_id, 8 version, 12 seq, 16 src,
 * 20 a; then
 *   DATA: 24 root, 28 len, 32 fragsz(16), 34 lambda, 35 ackint;
 *   ACK: 24 b, and 28 mask when F_MASK (a zero mask is not sent);
 *   REQ: 24 b, 28 mask;
 *   MSG: 24 b, then the payload;
 *   XDATA: 24 b, 28 len, then the payload;
 *   XACK: 24 b, 28 mask;
 *   MTINV, SWSEQ, SWAT: 24 b;
 *   SWOFFER: then the payload;
 *   POOL: 24 b, then the payload;
 *   LIVE: 24 b, 28 mask;
 *   PROBE, FIN, PULL, MTJOINED, MTPING, MTACK, MTDONE: nothing.
 */
size_t ibmc__wire_encode(const struct ibmc__hdr *h, uint8_t *out)
{
	uint8_t flags = h->flags & ~IBMC__F_MASK;

	if (h->kind == IBMC__K_ACK && h->mask)
		flags |= IBMC__F_MASK;
	out[0] = IBMC__WIRE_MAGIC;
	out[1] = h->kind;
	out[2] = flags;
	out[3] = (uint8_t)(h->coll << 4 |
			   (h->kind == IBMC__K_DATA ? h->algo & 0xf : 0));
	put32(out + 4, h->comm_id);
	put32(out + 8, h->version);
	put32(out + 12, h->seq);
	put32(out + 16, h->src);
	put32(out + 20, h->a);
	switch (h->kind) {
	case IBMC__K_DATA:
		put32(out + 24, h->root);
		put32(out + 28, h->len);
		put16(out + 32, h->fragsz);
		out[34] = h->lambda;
		out[35] = h->ackint;
		return IBMC__WIRE_HDR;
	case IBMC__K_ACK:
		put32(out + 24, h->b);
		if (!(flags & IBMC__F_MASK))
			return 28;
		put64(out + 28, h->mask);
		return 36;
	case IBMC__K_REQ:
		put32(out + 24, h->b);
		put64(out + 28, h->mask);
		return 36;
	case IBMC__K_MSG:
		put32(out + 24, h->b);
		return IBMC__WIRE_MSG;
	case IBMC__K_XDATA:
		put32(out + 24, h->b);
		put32(out + 28, h->len);
		return IBMC__WIRE_XDATA;
	case IBMC__K_XACK:
	case IBMC__K_LIVE:
		put32(out + 24, h->b);
		put64(out + 28, h->mask);
		return 36;
	case IBMC__K_MTINV:
	case IBMC__K_SWSEQ:
	case IBMC__K_SWAT:
		put32(out + 24, h->b);
		return 28;
	case IBMC__K_POOL:
		put32(out + 24, h->b);
		return IBMC__WIRE_POOL;
	default:
		return IBMC__WIRE_BASE;
	}
}

int ibmc__wire_decode(const void *buf, size_t len, struct ibmc__hdr *h)
{
	const uint8_t *p = buf;

	if (len < IBMC__WIRE_BASE || p[0] != IBMC__WIRE_MAGIC)
		return -EBADMSG;
	memset(h, 0, sizeof(*h));
	h->hlen = len > 0xffff ? 0xffff : (uint16_t)len;	/* no payload */
	h->kind = p[1];
	h->flags = p[2];
	h->coll = p[3] >> 4;
	h->algo = p[3] & 0xf;
	if (h->coll > IBMC__C_LIVE)
		return -EBADMSG;
	h->comm_id = get32(p + 4);
	h->version = get32(p + 8);
	h->seq = get32(p + 12);
	h->src = get32(p + 16);
	h->a = get32(p + 20);
	switch (h->kind) {
	case IBMC__K_DATA:
		if (len < IBMC__WIRE_HDR)
			return -EBADMSG;
		if (h->coll != IBMC__C_BCAST || h->algo < IBMC__A_MCAST ||
		    h->algo > IBMC__A_POSTAL)
			return -EBADMSG;
		h->root = get32(p + 24);
		h->len = get32(p + 28);
		h->fragsz = get16(p + 32);
		h->lambda = p[34];
		h->ackint = p[35];
		h->hlen = IBMC__WIRE_HDR;
		return h->fragsz ? 0 : -EBADMSG;
	case IBMC__K_ACK:
		if (len < 28)
			return -EBADMSG;
		h->b = get32(p + 24);
		if (!(h->flags & IBMC__F_MASK))
			return 0;
		if (len < 36)
			return -EBADMSG;
		h->mask = get64(p + 28);
		return 0;
	case IBMC__K_REQ:
		if (len < 36)
			return -EBADMSG;
		h->b = get32(p + 24);
		h->mask = get64(p + 28);
		return 0;
	case IBMC__K_MSG:
		if (len < IBMC__WIRE_MSG)
			return -EBADMSG;
		h->b = get32(p + 24);
		h->hlen = IBMC__WIRE_MSG;
		return 0;
	case IBMC__K_XDATA:
		if (len < IBMC__WIRE_XDATA)
			return -EBADMSG;
		h->b = get32(p + 24);
		h->len = get32(p + 28);
		h->hlen = IBMC__WIRE_XDATA;
		return 0;
	case IBMC__K_XACK:
		if (len < 36)
			return -EBADMSG;
		h->b = get32(p + 24);
		h->mask = get64(p + 28);
		return 0;
	case IBMC__K_LIVE:
		if (len < 36 || h->coll != IBMC__C_LIVE)
			return -EBADMSG;
		h->b = get32(p + 24);
		h->mask = get64(p + 28);
		return 0;
	case IBMC__K_MTINV:
		if (len < 28 || h->coll != IBMC__C_MTEST)
			return -EBADMSG;
		h->b = get32(p + 24);
		return 0;
	case IBMC__K_SWSEQ:
	case IBMC__K_SWAT:
		if (len < 28 || h->coll != IBMC__C_SWITCH)
			return -EBADMSG;
		h->b = get32(p + 24);
		return 0;
	case IBMC__K_POOL:
		if (len < IBMC__WIRE_POOL ||
		    (h->coll != IBMC__C_POOL && h->coll != IBMC__C_PRUNE))
			return -EBADMSG;
		h->b = get32(p + 24);
		h->hlen = IBMC__WIRE_POOL;
		return 0;
	case IBMC__K_SWOFFER:
		if (h->coll != IBMC__C_SWITCH)
			return -EBADMSG;
		h->hlen = IBMC__WIRE_BASE;
		return 0;
	case IBMC__K_MTJOINED:
	case IBMC__K_MTPING:
	case IBMC__K_MTACK:
	case IBMC__K_MTDONE:
		return h->coll == IBMC__C_MTEST ? 0 : -EBADMSG;
	case IBMC__K_PROBE:
	case IBMC__K_FIN:
	case IBMC__K_PULL:
	case IBMC__K_XSTOP:
		return 0;
	default:
		return -EBADMSG;
	}
}
