/* SPDX-License-Identifier: BSD-3-Clause */
/* Turns the server's job object into IBMCAST_GROUPS, checking each field
 * so that libjob never parses something the server did not mean. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/groups.h"
#include "common/mgid.h"
#include "common/parse.h"
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

	if (!ibmc__parse_hex(s, 0, max, v))
		return 0;
	snprintf(why, why_len, "server reply: %s '%s' is not a hex value",
		 what, s ? s : "(missing)");
	return -EINVAL;
}

int spank_groups_format(const json_t *job, char **out, unsigned *count,
			char *why, size_t why_len)
{
	const json_t *groups = json_object_get(job, "groups");
	unsigned long qkey, pkey, mlid;
	struct ibmc_tr_group *gs;
	size_t i, n;
	const json_t *g;
	int rc = -EINVAL;

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
	gs = calloc(n, sizeof(*gs));
	if (!gs) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	json_array_foreach(groups, i, g) {
		const char *m = json_string_value(json_object_get(g, "mgid"));
		struct ibmc_tr_group *t = &gs[i];

		if (!m || ibmc__mgid_parse(m, t->mgid)) {
			snprintf(why, why_len, "server reply: group %zu: bad "
				 "mgid '%s'", i, m ? m : "(missing)");
			goto out;
		}
		if (hex_field(g, "mlid", "mlid", 0xffffUL, &mlid, why,
			      why_len))
			goto out;
		t->mtu = spank_mtu_bytes(json_integer_value(
			json_object_get(g, "mtu")));
		if (!t->mtu) {
			snprintf(why, why_len, "server reply: group %zu: bad "
				 "mtu", i);
			goto out;
		}
		t->mlid = (uint16_t)mlid;
		t->qkey = (uint32_t)qkey;
		t->pkey = (uint16_t)pkey;
		/* What libjob would refuse: better said here, by name. */
		if (ibmc__group_check(t)) {
			snprintf(why, why_len, "server reply: group %zu: mgid "
				 "'%s' with mlid 0x%04lx is not a multicast "
				 "group", i, m, mlid);
			goto out;
		}
	}
	rc = ibmc__groups_format(gs, n, out);
	if (rc) {
		snprintf(why, why_len, "%s", rc == -ENOMEM ? "out of memory" :
			 "server reply: groups IBMCAST_GROUPS cannot carry");
		goto out;
	}
	*count = (unsigned)n;
out:
	free(gs);
	return rc;
}
