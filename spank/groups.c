/* SPDX-License-Identifier: BSD-3-Clause */
/* Turns the server's job object into IBMCAST_GROUPS, checking each field
 * so that libjob never parses something the server did not mean. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mgid.h"
#include "spank/groups.h"

unsigned spank_mtu_bytes(long long enc)
{
	return enc >= 1 && enc <= 5 ? 128U << enc : 0;
}

static int hex_field(const json_t *o, const char *key, const char *what,
		     unsigned long max, unsigned long *v, char *why,
		     size_t why_len)
{
	const char *s = json_string_value(json_object_get(o, key));
	char *end;

	if (s && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2]) {
		errno = 0;
		*v = strtoul(s + 2, &end, 16);
		if (!errno && !*end && *v <= max)
			return 0;
	}
	snprintf(why, why_len, "server reply: %s '%s' is not a hex value",
		 what, s ? s : "(missing)");
	return -EINVAL;
}

int spank_groups_format(const json_t *job, char **out, unsigned *count,
			char *why, size_t why_len)
{
	const json_t *groups = json_object_get(job, "groups");
	unsigned long qkey, pkey, mlid;
	uint8_t mgid[16];
	char mgid_s[IBMC_MGID_STRLEN];
	size_t i, n, len = 0;
	const json_t *g;
	char *buf;
	unsigned mtu;

	*out = NULL;
	if (hex_field(job, "qkey", "qkey", 0xffffffffUL, &qkey, why, why_len) ||
	    hex_field(job, "pkey", "pkey", 0xffffUL, &pkey, why, why_len))
		return -EINVAL;
	n = json_array_size(groups);
	if (!n) {
		snprintf(why, why_len, "server reply: a ready pool without "
			 "groups");
		return -EINVAL;
	}
	/* MGID 39 + 4 separators + 6 + 10 + 6 + 4 + a space. */
	buf = malloc(n * 72 + 1);
	if (!buf) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	buf[0] = '\0';
	json_array_foreach(groups, i, g) {
		const char *m = json_string_value(json_object_get(g, "mgid"));

		if (!m || ibmc__mgid_parse(m, mgid)) {
			snprintf(why, why_len, "server reply: group %zu: bad "
				 "mgid '%s'", i, m ? m : "(missing)");
			goto fail;
		}
		if (hex_field(g, "mlid", "mlid", 0xffffUL, &mlid, why,
			      why_len))
			goto fail;
		mtu = spank_mtu_bytes(json_integer_value(
			json_object_get(g, "mtu")));
		if (!mtu) {
			snprintf(why, why_len, "server reply: group %zu: bad "
				 "mtu", i);
			goto fail;
		}
		ibmc__mgid_format(mgid, mgid_s);
		len += (size_t)snprintf(buf + len, 73, "%s%s/0x%04lx/0x%08lx/"
					"0x%04lx/%u", i ? " " : "", mgid_s,
					mlid, qkey, pkey, mtu);
	}
	*out = buf;
	*count = (unsigned)n;
	return 0;
fail:
	free(buf);
	return -EINVAL;
}
