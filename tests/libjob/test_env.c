/* SPDX-License-Identifier: BSD-3-Clause */
/* IBMCAST_* parsing: valid pools, and every malformed form turning
 * multicast off with a reason instead of failing. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/env.h"
#include "libjob/wire.h"
#include "tests/tap.h"

#define G1 "ff12:1bca:ffff:0000:0000:0040:0000:0000/0xc001/0x1bca0040/0xffff/2048"
#define G2 "ff12:1bca:ffff:0000:0000:0040:0000:0001/0xc002/0x1bca0040/0xffff/4096"

static struct ibmc__env e;

static int pool(const char *state, const char *groups, const char *ngroups)
{
	setenv("IBMCAST_STATE", state, 1);
	if (groups)
		setenv("IBMCAST_GROUPS", groups, 1);
	else
		unsetenv("IBMCAST_GROUPS");
	if (ngroups)
		setenv("IBMCAST_NGROUPS", ngroups, 1);
	else
		unsetenv("IBMCAST_NGROUPS");
	return ibmc__env_read(&e);
}

static void bad(const char *groups, const char *ngroups, const char *what)
{
	int rc = pool("ready", groups, ngroups);

	tap_ok(!rc && e.mcast_err && e.ngroups == 0 && e.mcast_why[0],
	       "%s: multicast off (%s)", what, e.mcast_why);
}

int main(void)
{
	struct ibmc_tr_group g;

	tap_is_int(pool("ready", G1 " " G2, "2"), 0, "two groups parse");
	tap_is_int(e.mcast_err, 0, "  ... multicast allowed");
	tap_is_int(e.ngroups, 2, "  ... two of them");
	tap_is_int(e.groups[1].mlid, 0xc002, "  ... MLID");
	tap_is_int(e.groups[0].qkey, 0x1bca0040, "  ... Q_Key");
	tap_is_int(e.groups[1].mtu, 4096, "  ... MTU");
	tap_is_int(e.groups[0].mgid[15], 0, "  ... MGID");
	tap_is_int(e.groups[1].mgid[15], 1, "  ... second MGID");
	tap_is_int(pool("ready", G1, NULL), 0, "NGROUPS is optional");
	tap_is_int(e.ngroups, 1, "  ... one group");

	bad(G1 " " G2, "3", "NGROUPS disagrees");
	bad(G1 "  " G2, NULL, "two spaces");
	bad(G1 " ", NULL, "trailing space");
	bad("", NULL, "empty");
	bad(NULL, NULL, "unset");
	bad("ff12::1/0xc001/0x1/0xffff", NULL, "four fields");
	bad("ff12::1/0xc001/0x1/0xffff/2048/1", NULL, "six fields");
	bad("fe80::1/0xc001/0x1/0xffff/2048", NULL, "unicast GID");
	bad("ff12::1/0x1001/0x1/0xffff/2048", NULL, "unicast LID");
	bad("ff12::1/c001/0x1/0xffff/2048", NULL, "no 0x");
	bad("ff12::1/0xc001/0x1/0x1ffff/2048", NULL, "P_Key too wide");
	bad("ff12::1/0xc001/0x1/0xffff/2000", NULL, "MTU not an IB MTU");
	bad("ff12::1/0xc001/0x1/0xffff/2048x", NULL, "MTU junk");
	bad(G1, "two", "NGROUPS not a number");

	tap_is_int(pool("timeout", G1, "1"), 0, "state timeout: no failure");
	tap_is_int(e.mcast_err, -ENETDOWN, "  ... multicast off");
	tap_is_int(pool("disabled", NULL, NULL), 0, "state disabled: no failure");
	tap_is_int(e.mcast_err, -ENODATA, "  ... multicast off");
	unsetenv("IBMCAST_STATE");
	tap_is_int(ibmc__env_read(&e), 0, "no state at all: no failure");
	tap_ok(e.mcast_err && strstr(e.mcast_why, "not set"), "  ... says so: %s", e.mcast_why);

	setenv("IBMCAST_BCAST_WINDOW", "0", 1);
	tap_is_int(ibmc__env_read(&e), -EINVAL, "a window of 0 is the caller's error");
	unsetenv("IBMCAST_BCAST_WINDOW");
	setenv("IBMCAST_BCAST_ALGO", "ring", 1);
	tap_is_int(ibmc__env_read(&e), -EINVAL, "an unknown algorithm is the caller's error");
	unsetenv("IBMCAST_BCAST_ALGO");

	tap_is_int(ibmc__group_parse(G2, &g), 0, "one group parses alone");
	tap_is_int(ibmc__algo_parse("postal"), IBMC__A_POSTAL, "postal by name");
	tap_is_int(ibmc__algo_parse("Postal"), -EINVAL, "names are exact");
	tap_plan(tap__n);
	return tap_done();
}
