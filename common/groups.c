/* SPDX-License-Identifier: BSD-3-Clause */
/* IBMCAST_GROUPS: formatting and strict parsing of the job's pool text. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/groups.h"
#include "common/mgid.h"
#include "common/parse.h"

/* Longer than any entry we write; longer input is malformed anyway. */
#define ENTRY_MAX 128

int ibmc__group_check(const struct ibmc_tr_group *g)
{
	if (g->mgid[0] != 0xff || g->mlid < 0xc000 || g->mlid > 0xfffe)
		return -EINVAL;
	switch (g->mtu) {
	case 256: case 512: case 1024: case 2048: case 4096:
		return 0;
	}
	return -EINVAL;
}

int ibmc__group_format(const struct ibmc_tr_group *g,
		       char buf[IBMC_GROUP_STRLEN])
{
	char mgid[IBMC_MGID_STRLEN];

	if (ibmc__group_check(g))
		return -EINVAL;
	ibmc__mgid_format(g->mgid, mgid);
	snprintf(buf, IBMC_GROUP_STRLEN, "%s/0x%04x/0x%08x/0x%04x/%u", mgid,
		 (unsigned)g->mlid, (unsigned)g->qkey, (unsigned)g->pkey,
		 (unsigned)g->mtu);
	return 0;
}

int ibmc__group_parse(const char *s, struct ibmc_tr_group *g)
{
	char buf[ENTRY_MAX], *f[5], *p = buf;
	unsigned long mlid, qkey, pkey, mtu;
	struct ibmc_tr_group t;
	int i;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (i = 0; i < 5; i++) {
		char *slash = strchr(p, '/');

		/* Four slashes exactly, and never an empty field. */
		if ((i < 4) != !!slash || slash == p || !*p)
			return -EINVAL;
		f[i] = p;
		if (slash) {
			*slash = '\0';
			p = slash + 1;
		}
	}
	if (ibmc__mgid_parse(f[0], t.mgid) ||
	    ibmc__parse_hex(f[1], 0, 0xffff, &mlid) ||
	    ibmc__parse_hex(f[2], 0, 0xffffffffUL, &qkey) ||
	    ibmc__parse_hex(f[3], 0, 0xffff, &pkey) ||
	    ibmc__parse_ulong(f[4], 10, 0, 4096, &mtu))
		return -EINVAL;
	t.mlid = (uint16_t)mlid;
	t.qkey = (uint32_t)qkey;
	t.pkey = (uint16_t)pkey;
	t.mtu = (uint32_t)mtu;
	if (ibmc__group_check(&t))
		return -EINVAL;
	*g = t;
	return 0;
}

int ibmc__groups_format(const struct ibmc_tr_group *g, size_t n,
			char **out)
{
	char *buf, *p;
	size_t i;

	*out = NULL;
	if (!n)
		return -EINVAL;
	/* Each entry with the space (or final NUL) after it. */
	buf = malloc(n * IBMC_GROUP_STRLEN);
	if (!buf)
		return -ENOMEM;
	for (i = 0, p = buf; i < n; i++) {
		if (i)
			*p++ = ' ';
		if (ibmc__group_format(&g[i], p)) {
			free(buf);
			return -EINVAL;
		}
		p += strlen(p);
	}
	*out = buf;
	return 0;
}

int ibmc__groups_parse(const char *s, struct ibmc_tr_group *g, int max,
		       int *n, const char **at)
{
	char one[ENTRY_MAX];
	const char *p;
	size_t len;

	*n = 0;
	*at = s;
	if (!s)
		return -EINVAL;
	for (p = s;; p += len + 1) {
		*at = p;
		len = strcspn(p, " ");
		if (!len || len >= sizeof(one))
			return -EINVAL;
		if (*n == max)
			return -E2BIG;
		memcpy(one, p, len);
		one[len] = '\0';
		if (ibmc__group_parse(one, &g[*n]))
			return -EINVAL;
		(*n)++;
		if (!p[len])
			return 0;
	}
}
