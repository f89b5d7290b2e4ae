/* SPDX-License-Identifier: BSD-3-Clause */
/* Hostlist expansion (Slurm syntax, bounds, errors) and compression. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hostlist.h"
#include "tests/tap.h"

/* Expand and join with spaces, or "E<errno>" on failure. */
static char *expand(const char *expr, size_t max)
{
	struct ibmc_hostlist hl;
	static char out[8192];
	size_t i, off = 0;
	int rc;

	rc = ibmc__hostlist_expand(expr, max, &hl);
	if (rc) {
		snprintf(out, sizeof(out), "E%d", -rc);
		if (hl.names || hl.count)
			snprintf(out, sizeof(out), "not empty on error");
		return out;
	}
	out[0] = '\0';
	for (i = 0; i < hl.count; i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%s",
					i ? " " : "", hl.names[i]);
	ibmc__hostlist_free(&hl);
	return out;
}

static void ok_expand(const char *expr, const char *want)
{
	tap_is_str(expand(expr, 1000), want, "expand %s", expr);
}

static void bad_expand(const char *expr, int err)
{
	char want[16];

	snprintf(want, sizeof(want), "E%d", err);
	tap_is_str(expand(expr, 1000), want, "refuse \"%s\" with %s", expr,
		   err == EINVAL ? "EINVAL" : "E2BIG");
}

/* Compress names given as one space-separated string. */
static void ok_compress(const char *names, const char *want)
{
	char *copy = strdup(names), *tok, *save, *got;
	char *v[64];
	size_t n = 0;

	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save))
		v[n++] = tok;
	got = ibmc__hostlist_compress(v, n);
	tap_is_str(got, want, "compress \"%s\"", names);
	free(got);
	free(copy);
}

/* compress(expand(x)) == x for canonical expressions. */
static void round_trip(const char *expr)
{
	struct ibmc_hostlist hl;
	char *got = NULL;

	if (!ibmc__hostlist_expand(expr, 100000, &hl)) {
		got = ibmc__hostlist_compress(hl.names, hl.count);
		ibmc__hostlist_free(&hl);
	}
	tap_is_str(got, expr, "round trip %s", expr);
	free(got);
}

int main(void)
{
	struct timespec t0, t1;
	struct ibmc_hostlist hl;
	double ms;
	int rc;

	tap_plan(47);

	ok_expand("node1", "node1");
	ok_expand("a,b,c", "a b c");
	ok_expand("node[1-4]", "node1 node2 node3 node4");
	ok_expand("node[1-3,7]", "node1 node2 node3 node7");
	ok_expand("n[08-10]", "n08 n09 n10");
	ok_expand("n[001-003]", "n001 n002 n003");
	ok_expand("n[8-10]", "n8 n9 n10");
	ok_expand("node[1-3],gpu[01-02],login",
		  "node1 node2 node3 gpu01 gpu02 login");
	ok_expand("rack[1-2]n[1-2]", "rack1n1 rack1n2 rack2n1 rack2n2");
	ok_expand("n[1-2]-ib", "n1-ib n2-ib");
	ok_expand("n[3],n[1-3],n2", "n3 n1 n2");
	ok_expand("a.example.org,b_1", "a.example.org b_1");
	ok_expand("x12345678901234567890123456789012345678901234567890123"
		  "456789[1-2]",
		  "x12345678901234567890123456789012345678901234567890123"
		  "4567891 "
		  "x12345678901234567890123456789012345678901234567890123"
		  "4567892");
	rc = ibmc__hostlist_expand("n[001-100]", 100, &hl);
	tap_ok(!rc && hl.count == 100 && !strcmp(hl.names[0], "n001") &&
	       !strcmp(hl.names[99], "n100"),
	       "n[001-100]: 100 names, n001..n100");
	ibmc__hostlist_free(&hl);
	rc = ibmc__hostlist_expand("node[1-16,20]", 17, &hl);
	tap_ok(!rc && hl.count == 17 && !strcmp(hl.names[16], "node20"),
	       "node[1-16,20]: 17 names at max_names 17");
	ibmc__hostlist_free(&hl);

	bad_expand("", EINVAL);
	bad_expand(",a", EINVAL);
	bad_expand("a,", EINVAL);
	bad_expand("a,,b", EINVAL);
	bad_expand("n[1-3", EINVAL);
	bad_expand("n1-3]", EINVAL);
	bad_expand("n[]", EINVAL);
	bad_expand("n[3-1]", EINVAL);
	bad_expand("n[a-b]", EINVAL);
	bad_expand("n[1-]", EINVAL);
	bad_expand("n[1,,2]", EINVAL);
	bad_expand("n[[1]]", EINVAL);
	bad_expand("a b", EINVAL);
	bad_expand("x123456789012345678901234567890123456789012345678901234"
		   "567890123", EINVAL);
	bad_expand("x12345678901234567890123456789012345678901234567890123"
		   "456789012[1-2]", EINVAL);
	bad_expand("n[1-1001]", E2BIG);
	bad_expand("n[1-600],m[1-600]", E2BIG);
	bad_expand("a[1-100]b[1-100]", E2BIG);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = ibmc__hostlist_expand("n[1-4000000000]", 65536, &hl);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	     (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	tap_is_int(rc, -E2BIG, "n[1-4000000000] refused with E2BIG");
	tap_ok(ms < 50, "... fast (%.3f ms)", ms);
	rc = ibmc__hostlist_expand("a[1-99999]b[1-99999]c[1-99999]d[1-99999]"
				   "e[1-99999]", 65536, &hl);
	tap_is_int(rc, -E2BIG, "product overflow refused with E2BIG");

	ok_compress("node1 node2 node3 node4 node7", "node[1-4,7]");
	ok_compress("n08 n09 n10", "n[08-10]");
	ok_compress("n8 n9 n10", "n[8-10]");
	ok_compress("login", "login");
	ok_compress("node3 gpu01 node1 gpu02 login node2",
		    "node[1-3],gpu[01-02],login");
	ok_compress("n1 n01", "n[1,01]");
	ok_compress("", "");

	round_trip("node[1-16,20]");
	round_trip("n[001-100]");
	round_trip("node[1-3],gpu[01-02],login");
	round_trip("a,b,c");

	return tap_done();
}
