/* SPDX-License-Identifier: BSD-3-Clause */
/* Threads-as-ranks job runner and bootstrap for the libjob unit tests. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/libjob/lbjob.h"

#define CARD_MAX 256

static pthread_barrier_t bar;
static unsigned char *shared;
static int nranks;
static char hub[64];

struct rank_arg {
	int rank;
	lbjob_fn fn;
	void *arg;
	int rc;
};

static int allgather(void *arg, const void *in, void *out, size_t len)
{
	struct rank_arg *ra = arg;

	if (len > CARD_MAX)
		return -EMSGSIZE;
	memcpy(shared + (size_t)ra->rank * len, in, len);
	pthread_barrier_wait(&bar);
	memcpy(out, shared, len * (size_t)nranks);
	pthread_barrier_wait(&bar);
	return 0;
}

void lbjob_barrier(void)
{
	pthread_barrier_wait(&bar);
}

static void *rank_main(void *p)
{
	struct rank_arg *ra = p;
	ibmc_bootstrap_t bs = {
		.rank = ra->rank, .size = nranks,
		.allgather = allgather, .arg = ra,
	};
	ibmc_context_t *ctx;
	int rc;

	rc = ibmc_init(&bs, &ctx);
	if (rc) {
		fprintf(stderr, "# rank %d: ibmc_init: %s\n", ra->rank,
			strerror(-rc));
		ra->rc = rc;
		return NULL;
	}
	ra->rc = ra->fn(ctx, ra->rank, ra->arg);
	rc = ibmc_finalize(ctx);
	if (rc && !ra->rc)
		ra->rc = rc;
	return NULL;
}

int lbjob_run(int n, lbjob_fn fn, void *arg)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	struct rank_arg *ra = calloc((size_t)n, sizeof(*ra));
	int i, bad = 0;

	if (!t || !ra)
		abort();
	nranks = n;
	shared = calloc((size_t)n, CARD_MAX);
	if (!shared)
		abort();
	pthread_barrier_init(&bar, NULL, (unsigned)n);
	for (i = 0; i < n; i++) {
		ra[i].rank = i;
		ra[i].fn = fn;
		ra[i].arg = arg;
		if (pthread_create(&t[i], NULL, rank_main, &ra[i]))
			abort();
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		if (ra[i].rc)
			bad++;
	}
	pthread_barrier_destroy(&bar);
	free(shared);
	free(t);
	free(ra);
	return bad;
}

void lbjob_env(int ngroups, int group_mtu)
{
	static int serial;
	char groups[2048] = "", one[128], num[16];
	int g;

	snprintf(hub, sizeof(hub), "test-%d-%d", (int)getpid(), ++serial);
	setenv("IBMCAST_LOOPBACK_HUB", hub, 1);
	setenv("IBMCAST_TRANSPORT", "loopback", 1);
	setenv("IBMCAST_STATE", "ready", 1);
	unsetenv("IBMCAST_REASON");
	unsetenv("IBMCAST_COMM_MODE");
	for (g = 0; g < ngroups; g++) {
		snprintf(one, sizeof(one),
			 "%sff12:1bca:ffff:0000:0000:0042:0000:%04x/0x%x/0x1bca0042/0xffff/%d",
			 g ? " " : "", g, 0xc001 + g, group_mtu);
		strncat(groups, one, sizeof(groups) - strlen(groups) - 1);
	}
	setenv("IBMCAST_GROUPS", groups, 1);
	snprintf(num, sizeof(num), "%d", ngroups);
	setenv("IBMCAST_NGROUPS", num, 1);
	setenv("IBMCAST_NODE", "node1", 1);
	setenv("IBMCAST_JOB", "66", 1);
}

const char *lbjob_hub(void)
{
	return hub;
}

static unsigned char byte_at(uint32_t seed, size_t i)
{
	uint32_t x = seed * 2654435761u ^ (uint32_t)i * 40503u ^
		     (uint32_t)(i >> 16) * 9973u;

	return (unsigned char)(x ^ (x >> 13) ^ (x >> 24));
}

void lbjob_fill(unsigned char *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = byte_at(seed, i);
}

long lbjob_check(const unsigned char *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != byte_at(seed, i))
			return (long)i;
	return -1;
}

double lbjob_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void lbjob_nodes(const int *node, int n)
{
	char list[4096] = "", one[16];
	int r;

	for (r = 0; r < n; r++) {
		snprintf(one, sizeof(one), "%sn%d", r ? "," : "", node[r]);
		strncat(list, one, sizeof(list) - strlen(list) - 1);
	}
	setenv("IBMCAST_LOOPBACK_NODES", list, 1);
}
