/* SPDX-License-Identifier: BSD-3-Clause */
/* FNV-1a against the reference vectors, and fed in pieces. */
#include "config.h"

#include <string.h>

#include "common/fnv.h"
#include "tests/tap.h"

static uint32_t h32(const char *s)
{
	return ibmc__fnv1a32(IBMC__FNV32_INIT, s, strlen(s));
}

static uint64_t h64(const char *s)
{
	return ibmc__fnv1a64(IBMC__FNV64_INIT, s, strlen(s));
}

int main(void)
{
	tap_plan(8);

	tap_is_int(h32(""), 0x811c9dc5u, "32: empty input is the offset basis");
	tap_is_int(h32("a"), 0xe40c292cu, "32: \"a\"");
	tap_is_int(h32("foobar"), 0xbf9cf968u, "32: \"foobar\"");
	tap_is_int(ibmc__fnv1a32(h32("foo"), "bar", 3), h32("foobar"),
		   "32: \"foo\" then \"bar\" equals \"foobar\"");

	/* tap_is_int compares long long: compare the 64-bit ones whole. */
	tap_ok(h64("") == 0xcbf29ce484222325ULL,
	       "64: empty input is the offset basis");
	tap_ok(h64("a") == 0xaf63dc4c8601ec8cULL, "64: \"a\"");
	tap_ok(h64("foobar") == 0x85944171f73967e8ULL, "64: \"foobar\"");
	tap_ok(ibmc__fnv1a64(h64("foo"), "bar", 3) == h64("foobar"),
	       "64: \"foo\" then \"bar\" equals \"foobar\"");
	return tap_done();
}
