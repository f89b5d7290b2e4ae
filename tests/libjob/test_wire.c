/* SPDX-License-Identifier: BSD-3-Clause */
/* The datagram header: round trips for data and control packets, and
 * rejection of datagrams that are not ours or are truncated. */
#include "config.h"

#include <string.h>

#include "libjob/wire.h"
#include "tests/tap.h"

int main(void)
{
	struct ibmc__hdr h = {
		.kind = IBMC__K_ACK, .algo = IBMC__A_MCAST, .lambda = 2,
		.flags = IBMC__F_MC, .comm_id = 0xdeadbeef, .version = 7,
		.seq = 0xfffffffe, .src = 31, .root = 4, .len = 0xffffffff,
		.fragsz = 4060, .a = 12, .b = 9, .mask = 0x8000000000000001ULL,
	}, d;
	unsigned char buf[IBMC__WIRE_CTL];

	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_CTL, "ack is a control-sized packet");
	tap_is_int(ibmc__wire_decode(buf, sizeof(buf), &d), 0, "ack decodes");
	tap_ok(d.kind == h.kind && d.flags == (h.flags | IBMC__F_MASK) &&
	       d.comm_id == h.comm_id && d.version == h.version &&
	       d.seq == h.seq && d.src == h.src && d.a == h.a && d.b == h.b &&
	       d.mask == h.mask, "ack round trip keeps every field it carries");
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_CTL - 1, &d) < 0, "truncated ack rejected");
	h.mask = 0;
	tap_is_int(ibmc__wire_encode(&h, buf), 28, "ack without a mask is 28 bytes");
	tap_is_int(ibmc__wire_decode(buf, 28, &d), 0, "short ack decodes");
	tap_ok(d.a == 12 && d.b == 9 && d.mask == 0 && (d.flags & IBMC__F_MC),
	       "short ack keeps have, cum and flags");
	h.kind = IBMC__K_REQ;
	h.mask = 0x5;
	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_CTL, "request carries its mask");
	tap_ok(!ibmc__wire_decode(buf, IBMC__WIRE_CTL, &d) && d.mask == 0x5 &&
	       d.b == 9, "request round trip");
	h.kind = IBMC__K_FIN;
	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_BASE, "fin is the 24-byte base");
	tap_ok(!ibmc__wire_decode(buf, IBMC__WIRE_BASE, &d) && d.kind == IBMC__K_FIN &&
	       d.seq == h.seq && d.src == h.src && d.comm_id == h.comm_id &&
	       d.version == h.version, "fin round trip");
	h.kind = IBMC__K_DATA;
	h.ackint = 32;
	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_HDR, "data header size");
	tap_is_int(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d), 0, "data decodes");
	tap_is_int(d.a, 12, "fragment index kept");
	tap_ok(d.root == 4 && d.len == 0xffffffff && d.fragsz == 4060 &&
	       d.lambda == 2 && d.ackint == 32 && d.algo == IBMC__A_MCAST,
	       "data keeps the broadcast's shape");
	buf[0] ^= 1;
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d) < 0, "bad magic rejected");
	buf[0] ^= 1;
	buf[1] = 0xee;	/* no such kind */
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d) < 0, "unknown kind rejected");
	buf[1] = IBMC__K_DATA;
	buf[3] = 0;
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d) < 0, "unknown algorithm rejected");
	tap_ok(ibmc__wire_decode(buf, 3, &d) < 0, "runt rejected");
	/* Multicast testing (mcast_test.c). */
	memset(&h, 0, sizeof(h));
	h.kind = IBMC__K_MTINV;
	h.coll = IBMC__C_MTEST;
	h.comm_id = 0x03ff126d;
	h.a = 0xc00a;
	h.b = 2048;
	tap_is_int(ibmc__wire_encode(&h, buf), 28, "invitation is 28 bytes");
	tap_ok(!ibmc__wire_decode(buf, 28, &d) && d.coll == IBMC__C_MTEST &&
	       d.a == 0xc00a && d.b == 2048, "invitation keeps MLID and MTU");
	tap_ok(ibmc__wire_decode(buf, 24, &d) < 0, "truncated invitation rejected");
	h.kind = IBMC__K_MTACK;
	h.a = 77;
	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_BASE, "test ack is the base");
	tap_ok(!ibmc__wire_decode(buf, IBMC__WIRE_BASE, &d) &&
	       d.kind == IBMC__K_MTACK && d.a == 77, "test ack round trip");
	h.coll = IBMC__C_BCAST;
	ibmc__wire_encode(&h, buf);
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_BASE, &d) < 0,
	       "a test kind of a collective is rejected");
	/* The switch to multicast (mcast_switch.c). */
	memset(&h, 0, sizeof(h));
	h.kind = IBMC__K_SWSEQ;
	h.coll = IBMC__C_SWITCH;
	h.comm_id = 0x1234abcd;
	h.a = 0xfffffffe;	/* sequence numbers wrap */
	h.b = 0;
	tap_is_int(ibmc__wire_encode(&h, buf), 28, "switch answer is 28 bytes");
	tap_ok(!ibmc__wire_decode(buf, 28, &d) && d.kind == IBMC__K_SWSEQ &&
	       d.coll == IBMC__C_SWITCH && d.a == 0xfffffffe && d.b == 0,
	       "switch answer keeps the member's sequence number");
	tap_ok(ibmc__wire_decode(buf, 24, &d) < 0, "truncated switch answer rejected");
	h.kind = IBMC__K_SWAT;
	h.a = 41;
	h.b = 110;	/* ETIMEDOUT: never */
	ibmc__wire_encode(&h, buf);
	tap_ok(!ibmc__wire_decode(buf, 28, &d) && d.kind == IBMC__K_SWAT &&
	       d.a == 41 && d.b == 110, "switch decision keeps its call and error");
	h.kind = IBMC__K_SWOFFER;
	h.a = h.b = 0;
	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_BASE,
		   "switch offer header is the base");
	memcpy(buf + IBMC__WIRE_BASE, "x", 1);
	tap_ok(!ibmc__wire_decode(buf, IBMC__WIRE_BASE + 1, &d) &&
	       d.kind == IBMC__K_SWOFFER && d.hlen == IBMC__WIRE_BASE,
	       "switch offer: the group's address follows the base");
	h.coll = IBMC__C_MTEST;
	ibmc__wire_encode(&h, buf);
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_BASE, &d) < 0,
	       "a switch kind outside the switch is rejected");
	buf[3] = (uint8_t)((IBMC__C_LIVE + 1) << 4);
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_BASE, &d) < 0,
	       "an unknown collective is rejected");

	/* The keeper of mode pool's own pool (pool_keep.c). */
	memset(&h, 0, sizeof(h));
	h.kind = IBMC__K_POOL;
	h.coll = IBMC__C_POOL;
	h.comm_id = 0x1bcb0001;
	h.seq = 0xdeadbeef;	/* the communicator's id */
	h.a = 2;
	h.b = 0xffffffff;	/* no slot */
	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_POOL,
		   "pool message header is 28 bytes");
	buf[IBMC__WIRE_POOL] = 0x0f;	/* a member bitmask */
	tap_ok(!ibmc__wire_decode(buf, IBMC__WIRE_POOL + 1, &d) &&
	       d.kind == IBMC__K_POOL && d.coll == IBMC__C_POOL &&
	       d.seq == 0xdeadbeef && d.a == 2 && d.b == 0xffffffff &&
	       d.hlen == IBMC__WIRE_POOL,
	       "pool message keeps id, operation and slot; its payload follows");
	tap_ok(ibmc__wire_decode(buf, 24, &d) < 0,
	       "truncated pool message rejected");
	h.coll = IBMC__C_PRUNE;	/* the prune keeper's, same shape */
	ibmc__wire_encode(&h, buf);
	tap_ok(!ibmc__wire_decode(buf, IBMC__WIRE_POOL + 1, &d) &&
	       d.kind == IBMC__K_POOL && d.coll == IBMC__C_PRUNE &&
	       d.seq == 0xdeadbeef && d.a == 2 && d.b == 0xffffffff &&
	       d.hlen == IBMC__WIRE_POOL,
	       "prune keeper's message keeps id, operation and group");
	h.coll = IBMC__C_SWITCH;
	ibmc__wire_encode(&h, buf);
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_POOL, &d) < 0,
	       "a keeper's message outside the keepers' collectives is rejected");

	/* Liveness (live.c): who asks or answers, and how far it is. */
	memset(&h, 0, sizeof(h));
	h.kind = IBMC__K_LIVE;
	h.coll = IBMC__C_LIVE;
	h.flags = IBMC__F_NOCOMM;
	h.comm_id = 0x1bcb0002;
	h.seq = 77;
	h.src = 5;
	h.a = IBMC__LIVE_ALIVE;
	h.b = 1023;		/* the answerer's context rank */
	h.mask = 0x123456789ull;	/* its next sequence number */
	tap_is_int(ibmc__wire_encode(&h, buf), 36,
		   "liveness message is 36 bytes");
	tap_ok(!ibmc__wire_decode(buf, 36, &d) && d.kind == IBMC__K_LIVE &&
	       d.coll == IBMC__C_LIVE && d.a == IBMC__LIVE_ALIVE &&
	       d.b == 1023 && d.mask == 0x123456789ull && d.seq == 77 &&
	       d.src == 5 && (d.flags & IBMC__F_NOCOMM),
	       "liveness answer keeps its op, sender, progress and flags");
	tap_ok(ibmc__wire_decode(buf, 28, &d) < 0,
	       "truncated liveness message rejected");
	h.coll = IBMC__C_BCAST;
	ibmc__wire_encode(&h, buf);
	tap_ok(ibmc__wire_decode(buf, 36, &d) < 0,
	       "a liveness message outside the liveness collective is rejected");
	tap_plan(tap__n);
	return tap_done();
}
