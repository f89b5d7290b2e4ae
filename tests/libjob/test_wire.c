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
	tap_ok(!memcmp(&h, &d, sizeof(h)) || (d.mask == h.mask && d.seq == h.seq &&
					      d.len == h.len && d.b == h.b),
	       "ack round trip keeps every field");
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_CTL - 1, &d) < 0, "truncated ack rejected");
	h.kind = IBMC__K_DATA;
	tap_is_int(ibmc__wire_encode(&h, buf), IBMC__WIRE_HDR, "data header is shorter");
	tap_is_int(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d), 0, "data decodes");
	tap_is_int(d.a, 12, "fragment index kept");
	buf[0] ^= 1;
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d) < 0, "bad magic rejected");
	buf[0] ^= 1;
	buf[1] = 9;
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d) < 0, "unknown kind rejected");
	buf[1] = IBMC__K_DATA;
	buf[2] = 0;
	tap_ok(ibmc__wire_decode(buf, IBMC__WIRE_HDR, &d) < 0, "unknown algorithm rejected");
	tap_ok(ibmc__wire_decode(buf, 3, &d) < 0, "runt rejected");
	tap_plan(tap__n);
	return tap_done();
}
