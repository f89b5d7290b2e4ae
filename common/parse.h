/* SPDX-License-Identifier: BSD-3-Clause */
/* Bounded integers from text (options, environment, file names), so that
 * every caller refuses the same things: "", "12x", " 12", "+12", overflow. */
#ifndef IBMCAST_COMMON_PARSE_H
#define IBMCAST_COMMON_PARSE_H

/*
 * The whole of s must be one number in base (as strtol() reads it; 0 lets
 * a 0x or 0 prefix choose), with nothing before or after it: no white
 * space, no '+', and a '-' only for the signed form. Returns 0 with the
 * value in *out, -EINVAL for an empty, NULL or malformed s, -ERANGE for a
 * number outside lo..hi (or outside long/unsigned long); *out is written
 * only on success.
 */
int ibmc__parse_long(const char *s, int base, long lo, long hi, long *out);
int ibmc__parse_ulong(const char *s, int base, unsigned long lo,
		      unsigned long hi, unsigned long *out);

/* A hex number written with its 0x (or 0X) prefix, as the SM's replies
 * and IBMCAST_GROUPS carry them: "0x" then hex digits only. Returns as
 * ibmc__parse_ulong() does. */
int ibmc__parse_hex(const char *s, unsigned long lo, unsigned long hi,
		    unsigned long *out);

#endif
