/* SPDX-License-Identifier: BSD-3-Clause */
/* The IBMCAST_GROUPS codec both ways round: what is formatted parses back
 * to the same groups, what parses formats back to the same text, and
 * every malformed entry or list is refused where it goes wrong. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/groups.h"
#include "common/mgid.h"
#include "tests/tap.h"

#define G1 "ff12:1bca:ffff:0000:0000:0040:0000:0000/0xc001/0x1bca0040/0xffff/2048"
#define G2 "ff12:1bca:ffff:0000:0000:0040:0000:0001/0xc002/0x1bca0040/0xffff/4096"
#define G3 "ff12:1bca:8001:0000:ffff:fffd:0000:03ff/0xfffe/0xffffffff/0x8001/256"

static const char *const bad_entries[] = {
	"",
	"ff12::1/0xc001/0x1/0xffff",			/* four fields */
	"ff12::1/0xc001/0x1/0xffff/2048/1",		/* six fields */
	"ff12::1//0x1/0xffff/2048",			/* an empty field */
	"ff12::1/0xc001/0x1/0xffff/",			/* empty last field */
	"/0xc001/0x1/0xffff/2048",			/* no MGID */
	"not-a-gid/0xc001/0x1/0xffff/2048",
	"fe80::1/0xc001/0x1/0xffff/2048",		/* unicast GID */
	"ff12::1/0x1001/0x1/0xffff/2048",		/* unicast LID */
	"ff12::1/0xffff/0x1/0xffff/2048",		/* permissive LID */
	"ff12::1/c001/0x1/0xffff/2048",			/* no 0x */
	"ff12::1/0x/0x1/0xffff/2048",			/* 0x alone */
	"ff12::1/0x0xc001/0x1/0xffff/2048",		/* two prefixes */
	"ff12::1/0xc001/0x100000000/0xffff/2048",	/* Q_Key too wide */
	"ff12::1/0xc001/0x1/0x1ffff/2048",		/* P_Key too wide */
	"ff12::1/0xc001/0x1/0xffff/2000",		/* not an IB MTU */
	"ff12::1/0xc001/0x1/0xffff/8192",		/* above IB's MTUs */
	"ff12::1/0xc001/0x1/0xffff/2048x",		/* MTU junk */
	"ff12::1/0xc001/0x1/0xffff/+2048",		/* MTU sign */
	"ff12::1/0xc001/0x1/0xffff/0x800",		/* MTU in hex */
	"ff12::1/0xc001/0x1/0xffff/2048 ",		/* a space in it */
};

static void one_bad(const char *s)
{
	struct ibmc_tr_group g, before;

	memset(&g, 0xa5, sizeof(g));
	before = g;
	tap_ok(ibmc__group_parse(s, &g) == -EINVAL &&
	       !memcmp(&g, &before, sizeof(g)),
	       "entry refused, output untouched: \"%s\"", s);
}

static void list_bad(const char *s, int max, int want_rc, int want_n,
		     size_t want_at)
{
	struct ibmc_tr_group g[4];
	const char *at = NULL;
	int n = -1, rc = ibmc__groups_parse(s, g, max, &n, &at);

	if (!tap_ok(rc == want_rc && n == want_n && at == s + want_at,
		    "list refused at entry %d, offset %zu: \"%.50s\"", want_n,
		    want_at, s))
		tap_diag("  rc %d n %d offset %td", rc, n, at ? at - s : -1);
}

int main(void)
{
	struct ibmc_tr_group in[3], out[4], g;
	char buf[IBMC_GROUP_STRLEN], *text;
	const char *at;
	size_t i;
	int n;

	/* Format, then parse: the same groups, at the edges of each field. */
	ibmc__mgid_derive(64, 0, 0xffff, in[0].mgid);
	in[0].mlid = 0xc000;
	in[0].qkey = 0;
	in[0].pkey = 0;
	in[0].mtu = 512;
	ibmc__mgid_derive(0xfffffffdU, 1023, 0x8001, in[1].mgid);
	in[1].mlid = 0xfffe;
	in[1].qkey = 0xffffffffU;
	in[1].pkey = 0xffff;
	in[1].mtu = 4096;
	ibmc__mgid_derive(7, 3, 0x7fff, in[2].mgid);
	in[2].mlid = 0xc123;
	in[2].qkey = ibmc__qkey_for_job(7);
	in[2].pkey = 0x7fff;
	in[2].mtu = 1024;
	for (i = 0; i < 3; i++) {
		tap_is_int(ibmc__group_format(&in[i], buf), 0,
			   "group %zu formats: %s", i, buf);
		tap_ok(strlen(buf) < IBMC_GROUP_STRLEN, "  ... within %d",
		       IBMC_GROUP_STRLEN);
		tap_ok(!ibmc__group_parse(buf, &g) &&
		       !memcmp(&g, &in[i], sizeof(g)),
		       "  ... and parses back to the same group");
	}
	tap_is_int(ibmc__groups_format(in, 3, &text), 0, "list formats");
	tap_ok(!ibmc__groups_parse(text, out, 4, &n, &at) && n == 3 &&
	       !memcmp(out, in, sizeof(in)),
	       "  ... and parses back to the same three groups");
	free(text);

	/* Parse, then format: the same text. */
	tap_ok(!ibmc__groups_parse(G1 " " G2 " " G3, out, 4, &n, &at) &&
	       n == 3, "the documented form parses");
	tap_is_int(out[1].mlid, 0xc002, "  ... MLID");
	tap_is_int(out[2].qkey, 0xffffffffU, "  ... Q_Key");
	tap_is_int(out[2].pkey, 0x8001, "  ... P_Key");
	tap_is_int(out[0].mtu, 2048, "  ... MTU");
	tap_is_int(out[1].mgid[15], 1, "  ... MGID");
	tap_is_int(ibmc__groups_format(out, 3, &text), 0, "  ... formats");
	tap_is_str(text, G1 " " G2 " " G3, "  ... back to the same text");
	free(text);
	tap_ok(!ibmc__group_parse(G3, &g) && !ibmc__group_format(&g, buf),
	       "one entry parses and formats");
	tap_is_str(buf, G3, "  ... back to the same text");
	tap_ok(!ibmc__group_parse("ff12:1bca:ffff::40:0:0/0xC001/0x1BCA0040/"
				  "0XFFFF/2048", &g) &&
	       !ibmc__group_format(&g, buf),
	       "a compressed MGID and upper-case hex parse");
	tap_is_str(buf, G1, "  ... and format in the one written form");

	/* Refusals. */
	for (i = 0; i < sizeof(bad_entries) / sizeof(bad_entries[0]); i++)
		one_bad(bad_entries[i]);
	tap_is_int(ibmc__group_parse(NULL, &g), -EINVAL, "NULL entry refused");
	g = in[0];
	g.mlid = 0x1001;
	tap_is_int(ibmc__group_format(&g, buf), -EINVAL,
		   "a unicast LID is not formatted");
	g = in[0];
	g.mtu = 2000;
	tap_is_int(ibmc__group_format(&g, buf), -EINVAL,
		   "an MTU that is not IB's is not formatted");
	g = in[0];
	g.mgid[0] = 0xfe;
	tap_is_int(ibmc__group_format(&g, buf), -EINVAL,
		   "a unicast GID is not formatted");
	text = (char *)"untouched";
	in[1].mlid = 0;
	tap_ok(ibmc__groups_format(in, 3, &text) == -EINVAL && !text,
	       "a list with a bad group is not formatted");
	tap_ok(ibmc__groups_format(in, 0, &text) == -EINVAL && !text,
	       "an empty list is not formatted");

	list_bad("", 4, -EINVAL, 0, 0);
	list_bad(" " G1, 4, -EINVAL, 0, 0);
	list_bad(G1 " ", 4, -EINVAL, 1, strlen(G1) + 1);
	list_bad(G1 "  " G2, 4, -EINVAL, 1, strlen(G1) + 1);
	list_bad(G1 " " G2 "x " G3, 4, -EINVAL, 1, strlen(G1) + 1);
	list_bad(G1 " " G2 " " G3, 2, -E2BIG, 2, 2 * strlen(G1) + 2);
	tap_ok(ibmc__groups_parse(NULL, out, 4, &n, &at) == -EINVAL && !n,
	       "a NULL list is refused");

	tap_plan(tap__n);
	return tap_done();
}
