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
 * Layout: 0 magic, 1 kind, 2 algo, 3 lambda, 4 comm_id, 8 version, 12 seq,
 * 16 src, 20 root, 24 len, 28 fragsz, 30 flags(8) + pad(8), 32 a,
 * then control only: 36 b, 40 mask.
 */
size_t ibmc__wire_encode(const struct ibmc__hdr *h, uint8_t *out)
{
	out[0] = IBMC__WIRE_MAGIC;
	out[1] = h->kind;
	out[2] = h->algo;
	out[3] = h->lambda;
	put32(out + 4, h->comm_id);
	put32(out + 8, h->version);
	put32(out + 12, h->seq);
	put32(out + 16, h->src);
	put32(out + 20, h->root);
	put32(out + 24, h->len);
	put16(out + 28, h->fragsz);
	out[30] = h->flags;
	out[31] = 0;
	put32(out + 32, h->a);
	if (h->kind == IBMC__K_DATA)
		return IBMC__WIRE_HDR;
	put32(out + 36, h->b);
	put64(out + 40, h->mask);
	return IBMC__WIRE_CTL;
}

int ibmc__wire_decode(const void *buf, size_t len, struct ibmc__hdr *h)
{
	const uint8_t *p = buf;

	if (len < IBMC__WIRE_HDR || p[0] != IBMC__WIRE_MAGIC)
		return -EBADMSG;
	memset(h, 0, sizeof(*h));
	h->kind = p[1];
	h->algo = p[2];
	h->lambda = p[3];
	h->comm_id = get32(p + 4);
	h->version = get32(p + 8);
	h->seq = get32(p + 12);
	h->src = get32(p + 16);
	h->root = get32(p + 20);
	h->len = get32(p + 24);
	h->fragsz = get16(p + 28);
	h->flags = p[30];
	h->a = get32(p + 32);
	if (h->kind < IBMC__K_DATA || h->kind > IBMC__K_FIN)
		return -EBADMSG;
	if (h->algo < IBMC__A_MCAST || h->algo > IBMC__A_POSTAL)
		return -EBADMSG;
	if (h->kind == IBMC__K_DATA)
		return h->fragsz ? 0 : -EBADMSG;
	if (len < IBMC__WIRE_CTL)
		return -EBADMSG;
	h->b = get32(p + 36);
	h->mask = get64(p + 40);
	return 0;
}
