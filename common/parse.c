/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded integer parsing: strtol()/strtoul() with their leniencies
 * (leading blanks, a sign, wrap-around of "-1", a partial parse) closed. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

/* strto*() skip white space and take a sign themselves: refuse anything
 * but a digit or letter (digits above 9; or '-' where a sign is allowed)
 * first, so that " 5", "+5" and, for unsigned, "-1" (which strtoul()
 * turns into ULONG_MAX) fail. */
static int starts_well(const char *s, int minus_ok)
{
	if (!s || !*s)
		return 0;
	if (*s == '-' && minus_ok)
		s++;
	return (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
	       (*s >= 'A' && *s <= 'Z');
}

/* What strto*() made of s: 0 if it read all of s and the value is in
 * range, else why not. */
static int verdict(const char *s, const char *end, int in_range)
{
	if (end == s || *end)
		return -EINVAL;
	if (errno == ERANGE || !in_range)
		return -ERANGE;
	return errno ? -EINVAL : 0;
}

int ibmc__parse_long(const char *s, int base, long lo, long hi, long *out)
{
	char *end;
	long v;
	int rc;

	if (!starts_well(s, 1))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, base);
	rc = verdict(s, end, v >= lo && v <= hi);
	if (!rc)
		*out = v;
	return rc;
}

int ibmc__parse_ulong(const char *s, int base, unsigned long lo,
		      unsigned long hi, unsigned long *out)
{
	unsigned long v;
	char *end;
	int rc;

	if (!starts_well(s, 0))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, base);
	rc = verdict(s, end, v >= lo && v <= hi);
	if (!rc)
		*out = v;
	return rc;
}

int ibmc__parse_hex(const char *s, unsigned long lo, unsigned long hi,
		    unsigned long *out)
{
	/* Base 16 would also take a second prefix: "0x0x1" is refused. */
	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') ||
	    !s[2] || s[2 + strspn(s + 2, "0123456789abcdefABCDEF")])
		return -EINVAL;
	return ibmc__parse_ulong(s + 2, 16, lo, hi, out);
}
