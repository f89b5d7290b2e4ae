/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Early return of ibmc_bcast: a rank late to a broadcast no longer holds
 * the others. The root returns once its buffer may be reused and every
 * member once it holds the data, all before the late rank even entered;
 * the late rank still gets every byte, from ranks that already returned
 * (their progress thread, or their next call when IBMCAST_PROGRESS_THREAD
 * is 0), and from a root that returned and finalized at once (finalize
 * finishes what it owes). A broadcast larger than the root's window
 * (IBMCAST_BCAST_WINDOW fragments) needs every member's acks to finish
 * sending: there only the root returns before the late rank entered. With
 * IBMCAST_BCAST_SYNC=1 the root does not return before the late rank
 * entered: the control that shows the ordering is real.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define LATE 3			/* the late rank */
#define LATE_US 300000

struct plan {
	const char *algo;
	size_t len;
	int then_barrier;	/* others call a barrier after (no thread) */
	int root_quits;		/* the root finalizes right after returning */
	int64_t late_enter;
	int64_t leave[16];
	atomic_int bad;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int run(ibmc_context_t *ctx, int rank, void *arg)
{
	struct plan *p = arg;
	unsigned char *buf = malloc(p->len);
	ibmc_comm_t *c;
	int rc;

	if (!buf || ibmc_comm_create(ctx, NULL, 0, &c))
		return 1;
	ibmc_comm_set_algo(c, "bcast", p->algo);
	if (rank == 0)
		lbjob_fill(buf, p->len, 42);
	else
		memset(buf, 0, p->len);
	if (rank == LATE) {
		usleep(LATE_US);
		p->late_enter = now_ns();
	}
	rc = ibmc_bcast(c, buf, p->len, 0);
	p->leave[rank] = now_ns();
	/* The caller may reuse its buffer at once. */
	if (!rc && lbjob_check(buf, p->len, 42) >= 0)
		rc = -EBADMSG;
	memset(buf, 0xa5, p->len);
	if (!rc && p->then_barrier && !(p->root_quits && rank == 0))
		rc = ibmc_barrier(c);
	if (rc) {
		fprintf(stderr, "# %s rank %d: %s\n", p->algo, rank,
			strerror(-rc));
		atomic_fetch_add(&p->bad, 1);
	}
	free(buf);
	return ibmc_comm_free(c);
}

/* Ranks (not the late one) that left before the late one entered. */
static int early_leavers(const struct plan *p, int n)
{
	int r, k = 0;

	for (r = 0; r < n; r++)
		if (r != LATE && p->leave[r] < p->late_enter)
			k++;
	return k;
}

static void one(int n, const char *algo, size_t len, int thread,
		int sync, int root_quits)
{
	struct plan p = { .algo = algo, .len = len,
			  .then_barrier = !thread, .root_quits = root_quits };
	int fails, k;

	setenv("IBMCAST_PROGRESS_THREAD", thread ? "1" : "0", 1);
	setenv("IBMCAST_BCAST_SYNC", sync ? "1" : "0", 1);
	lbjob_env(2, 2048);
	fails = lbjob_run(n, run, &p);
	k = early_leavers(&p, n);
	tap_ok(!fails && !p.bad, "%d ranks, %s, %zu B, progress thread %s%s%s: every rank has the data",
	       n, algo, len, thread ? "on" : "off", sync ? ", sync" : "",
	       root_quits ? ", root finalizes at once" : "");
	if (sync)
		tap_ok(p.leave[0] > p.late_enter,
		       "  ... synchronizing: the root left only after rank %d entered",
		       LATE);
	else if (len > 64 * 2000)
		tap_ok(p.leave[0] < p.late_enter,
		       "  ... beyond one window: the root left before rank %d entered (%d of %d others did)",
		       LATE, k, n - 1);
	else
		tap_ok(k == n - 1, "  ... %d of %d others left before rank %d entered",
		       k, n - 1, LATE);
}

int main(void)
{
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "20000", 1);
	setenv("IBMCAST_BCAST_WINDOW", "64", 1);
	one(8, "mcast", 1000, 1, 0, 0);
	one(8, "mcast", 200000, 1, 0, 0);
	one(8, "mcast", 100000, 0, 0, 0);
	one(8, "mcast", 200000, 0, 0, 0);
	one(8, "mcast", 200000, 1, 0, 1);
	one(8, "binomial", 50000, 1, 0, 0);
	one(8, "mcast", 1000, 1, 1, 0);
	tap_plan(tap__n);
	return tap_done();
}
