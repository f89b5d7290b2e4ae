/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded integer parsing: what is taken, what is refused and with which
 * error, and that a refusal leaves the output alone. */
#include "config.h"

#include <errno.h>
#include <limits.h>

#include "common/parse.h"
#include "tests/tap.h"

static void long_ok(const char *s, int base, long lo, long hi, long want)
{
	long v = -12345;
	int rc = ibmc__parse_long(s, base, lo, hi, &v);

	tap_ok(!rc && v == want, "long \"%s\" base %d in %ld..%ld is %ld", s,
	       base, lo, hi, want);
	if (rc || v != want)
		tap_diag("  rc %d value %ld", rc, v);
}

static void long_bad(const char *s, int base, long lo, long hi, int want)
{
	long v = -12345;
	int rc = ibmc__parse_long(s, base, lo, hi, &v);

	tap_ok(rc == want && v == -12345, "long \"%s\" base %d in %ld..%ld: %s",
	       s ? s : "(null)", base, lo, hi,
	       want == -ERANGE ? "-ERANGE" : "-EINVAL");
	if (rc != want || v != -12345)
		tap_diag("  rc %d value %ld", rc, v);
}

static void ulong_ok(const char *s, int base, unsigned long lo,
		     unsigned long hi, unsigned long want)
{
	unsigned long v = 12345;
	int rc = ibmc__parse_ulong(s, base, lo, hi, &v);

	tap_ok(!rc && v == want, "ulong \"%s\" base %d in %lu..%lu is %lu", s,
	       base, lo, hi, want);
	if (rc || v != want)
		tap_diag("  rc %d value %lu", rc, v);
}

static void ulong_bad(const char *s, int base, unsigned long lo,
		      unsigned long hi, int want)
{
	unsigned long v = 12345;
	int rc = ibmc__parse_ulong(s, base, lo, hi, &v);

	tap_ok(rc == want && v == 12345, "ulong \"%s\" base %d in %lu..%lu: %s",
	       s ? s : "(null)", base, lo, hi,
	       want == -ERANGE ? "-ERANGE" : "-EINVAL");
	if (rc != want || v != 12345)
		tap_diag("  rc %d value %lu", rc, v);
}

int main(void)
{
	unsigned long u = 0;

	tap_plan(46);

	long_ok("0", 10, 0, 10, 0);
	long_ok("10", 10, 0, 10, 10);
	long_ok("-7", 10, -10, 10, -7);
	long_ok("0x1f", 0, 0, 100, 31);
	long_ok("017", 0, 0, 100, 15);
	long_ok("017", 10, 0, 100, 17);
	long_ok("9223372036854775807", 10, 0, LONG_MAX, LONG_MAX);
	long_ok("-9223372036854775808", 10, LONG_MIN, 0, LONG_MIN);

	long_bad(NULL, 10, 0, 10, -EINVAL);
	long_bad("", 10, 0, 10, -EINVAL);
	long_bad("-", 10, -10, 10, -EINVAL);
	long_bad("12x", 10, 0, 100, -EINVAL);
	long_bad(" 5", 10, 0, 10, -EINVAL);
	long_bad("5 ", 10, 0, 10, -EINVAL);
	long_bad("+5", 10, 0, 10, -EINVAL);
	long_bad("--5", 10, -10, 10, -EINVAL);
	long_bad("0x", 0, 0, 10, -EINVAL);
	long_bad("0x10", 10, 0, 100, -EINVAL);
	long_bad("11", 10, 0, 10, -ERANGE);
	long_bad("-1", 10, 0, 10, -ERANGE);
	long_bad("9223372036854775808", 10, 0, LONG_MAX, -ERANGE);
	long_bad("-99999999999999999999", 10, LONG_MIN, 0, -ERANGE);

	ulong_ok("0", 10, 0, 1, 0);
	ulong_ok("4294967295", 10, 0, 0xffffffffUL, 0xffffffffUL);
	ulong_ok("0xc000", 0, 0xc000, 0xffff, 0xc000);
	ulong_ok("ffff", 16, 0, 0xffff, 0xffff);
	ulong_ok("18446744073709551615", 10, 0, ULONG_MAX, ULONG_MAX);

	ulong_bad(NULL, 10, 0, 10, -EINVAL);
	ulong_bad("", 10, 0, 10, -EINVAL);
	ulong_bad("-1", 10, 0, ULONG_MAX, -EINVAL);
	ulong_bad("-0", 10, 0, 10, -EINVAL);
	ulong_bad("1.5", 10, 0, 10, -EINVAL);
	ulong_bad("\t3", 10, 0, 10, -EINVAL);
	ulong_bad("4294967296", 10, 0, 0xffffffffUL, -ERANGE);
	ulong_bad("0", 10, 1, 10, -ERANGE);
	ulong_bad("18446744073709551616", 10, 0, ULONG_MAX, -ERANGE);

	tap_is_int(ibmc__parse_hex("0xc001", 0, 0xffff, &u), 0, "hex 0xc001");
	tap_is_int(u, 0xc001, "  ... is 0xc001");
	tap_is_int(ibmc__parse_hex("0XFFFF", 0, 0xffff, &u), 0, "hex 0XFFFF");
	tap_is_int(ibmc__parse_hex("0x1ffff", 0, 0xffff, &u), -ERANGE,
		   "hex above hi");
	tap_is_int(ibmc__parse_hex("c001", 0, 0xffff, &u), -EINVAL,
		   "hex without 0x");
	tap_is_int(ibmc__parse_hex("0x", 0, 0xffff, &u), -EINVAL,
		   "hex with nothing after 0x");
	tap_is_int(ibmc__parse_hex("0x0x1", 0, 0xffff, &u), -EINVAL,
		   "hex with two prefixes");
	tap_is_int(ibmc__parse_hex("0x-1", 0, ULONG_MAX, &u), -EINVAL,
		   "hex with a sign");
	tap_is_int(ibmc__parse_hex("0xc00g", 0, 0xffff, &u), -EINVAL,
		   "hex with junk");
	tap_is_int(ibmc__parse_hex(NULL, 0, 0xffff, &u), -EINVAL, "hex NULL");

	return tap_done();
}
