/* SPDX-License-Identifier: BSD-3-Clause */
/* Invariants shared by the fuzz targets: how a failed check is reported,
 * and what a hostlist expansion and its compressed form must satisfy. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "tests/fuzz/fuzz.h"

void fuzz_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "fuzz: invariant failed: %s (%s:%d)\n", what, file,
		line);
	/* abort() so that libFuzzer saves the input as a crash and the
	 * replay's child shows a signal, not a plain failure code. */
	abort();
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A sorted copy, so that two expansions compare as sets. */
static char **sorted(const struct ibmc_hostlist *hl)
{
	char **v = malloc((hl->count ? hl->count : 1) * sizeof(*v));

	FUZZ_CHECK(v);
	memcpy(v, hl->names, hl->count * sizeof(*v));
	qsort(v, hl->count, sizeof(*v), cmp_name);
	return v;
}

/* What hostlist.h promises of every name it hands out. */
static void check_name(const char *name)
{
	size_t len;

	FUZZ_CHECK(name);
	len = strlen(name);
	FUZZ_CHECK(len >= 1 && len <= 63);
	for (; *name; name++)
		FUZZ_CHECK(*name > ' ' && *name < 0x7f && *name != ',' &&
			   *name != '[' && *name != ']');
}

int fuzz_check_hostlist(const char *expr, size_t max_names)
{
	struct ibmc_hostlist hl, again, tight;
	char **a, **b, *text, *text2;
	size_t i;
	int rc;

	rc = ibmc__hostlist_expand(expr, max_names, &hl);
	if (rc) {
		FUZZ_CHECK(rc == -EINVAL || rc == -E2BIG || rc == -ENOMEM);
		FUZZ_CHECK(!hl.names && !hl.count);
		return rc;
	}
	/* An expression always names someone: ops.c relies on it only as
	 * a second line of defence. */
	FUZZ_CHECK(hl.count >= 1 && hl.count <= max_names);
	for (i = 0; i < hl.count; i++)
		check_name(hl.names[i]);
	a = sorted(&hl);
	for (i = 1; i < hl.count; i++)
		FUZZ_CHECK(strcmp(a[i - 1], a[i])); /* duplicates removed */

	/* The bound counts names before duplicates go, so one less than
	 * what came out must be refused, and before any allocation. */
	FUZZ_CHECK(ibmc__hostlist_expand(expr, hl.count - 1, &tight) ==
		   -E2BIG);
	FUZZ_CHECK(!tight.names && !tight.count);

	/* The display form names exactly the same nodes, each once: with
	 * the bound at count, a repeated name would not fit. */
	text = ibmc__hostlist_compress(hl.names, hl.count);
	FUZZ_CHECK(text);
	rc = ibmc__hostlist_expand(text, hl.count, &again);
	if (rc)
		fprintf(stderr, "fuzz: compress gave \"%.200s\": %s\n", text,
			strerror(-rc));
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(again.count == hl.count);
	b = sorted(&again);
	for (i = 0; i < hl.count; i++)
		FUZZ_CHECK(!strcmp(a[i], b[i]));

	/* And it is canonical: compressing its own expansion changes
	 * nothing, so the text a job shows is stable. */
	text2 = ibmc__hostlist_compress(again.names, again.count);
	FUZZ_CHECK(text2);
	FUZZ_CHECK(!strcmp(text, text2));

	free(text2);
	free(b);
	ibmc__hostlist_free(&again);
	free(text);
	free(a);
	ibmc__hostlist_free(&hl);
	return 0;
}
