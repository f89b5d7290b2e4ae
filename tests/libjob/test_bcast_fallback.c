/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fallbacks and failure bounds: multicast that delivers nothing (every
 * multicast datagram lost) still delivers through the tree's unicast
 * retransmissions and makes auto switch to point-to-point; a job state
 * other than ready, malformed IBMCAST_GROUPS and an exhausted pool give
 * point-to-point communicators with the reason; a rank that never enters
 * the broadcast makes it fail with -ETIMEDOUT in bounded time, not hang:
 * with IBMCAST_BCAST_SYNC=1 on the broadcast itself, with early return
 * (the default) on the next call of a member that returned before; inner
 * ranks of the tree whose length differs from the root's get -EMSGSIZE
 * while their subtrees still get the data promptly (no timeout), and the
 * communicator goes on working.
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/transport.h"
#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

struct res {
	atomic_int ok, bad;
	int rc[16];
	double secs[16];
	char algo[16][16];
	int state_rc[16];
	char why[16][200];
	int state2_rc[16];
};

static int bcast_check(ibmc_comm_t *c, int root, size_t len, uint32_t seed)
{
	unsigned char *buf = malloc(len ? len : 1);
	int rc;

	if (ibmc_comm_rank(c) == root)
		lbjob_fill(buf, len, seed);
	else
		memset(buf, 0, len);
	rc = ibmc_bcast(c, buf, len, root);
	if (!rc && lbjob_check(buf, len, seed) >= 0)
		rc = -EBADMSG;
	free(buf);
	return rc;
}

/* Broadcasts from rank 0 (six; twelve with early return, whose root
 * learns that multicast reached nobody up to four broadcasts late), then
 * what the root's auto chose last. */
static int run_auto(ibmc_context_t *ctx, int rank, void *arg)
{
	struct res *r = arg;
	const char *why = NULL;
	ibmc_comm_t *c, *c2;
	int i, rc, n = getenv("IBMCAST_BCAST_SYNC") ? 6 : 12;

	rc = ibmc_comm_create(ctx, NULL, 0, &c);
	if (rc)
		return rc;
	/* A second communicator: with one pool group it gets none. */
	rc = ibmc_comm_create(ctx, NULL, 0, &c2);
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		rc = bcast_check(c, 0, 65536, (uint32_t)i);
		if (rc)
			atomic_fetch_add(&r->bad, 1);
		else
			atomic_fetch_add(&r->ok, 1);
	}
	rc = bcast_check(c2, 1, 3000, 99);
	if (rc)
		atomic_fetch_add(&r->bad, 1);
	snprintf(r->algo[rank], sizeof(r->algo[rank]), "%s",
		 ibmc_comm_last_bcast_algo(c));
	r->state_rc[rank] = ibmc_comm_mcast_state(c, &why);
	snprintf(r->why[rank], sizeof(r->why[rank]), "%s", why ? why : "");
	r->state2_rc[rank] = ibmc_comm_mcast_state(c2, NULL);
	ibmc_comm_free(c2);
	return ibmc_comm_free(c);
}

static int run_dead(ibmc_context_t *ctx, int rank, void *arg)
{
	struct res *r = arg;
	ibmc_comm_t *c;
	double t0;
	int rc;

	rc = ibmc_comm_create(ctx, NULL, 0, &c);
	if (rc)
		return rc;
	if (rank != 3) {
		t0 = lbjob_now();
		r->rc[rank] = bcast_check(c, 0, 100000, 5);
		/* Returned early: the failure comes with the next call. */
		if (!r->rc[rank] && rank != 1 && !getenv("IBMCAST_BCAST_SYNC"))
			r->rc[rank] = ibmc_barrier(c);
		r->secs[rank] = lbjob_now() - t0;
	}
	/* Rank 3 is "dead": it enters no broadcast until all gave up. */
	lbjob_barrier();
	return ibmc_comm_free(c);
}

/* Inner ranks of the tree rooted at 0 of 8 pass other lengths than the
 * root's: in the binomial tree (also the multicast's ack tree) rank 4,
 * parent of 5 and 6, half of it and rank 2, parent of 3, twice it; in the
 * postal tree (lambda 2) rank 5, parent of 6 and 7, and rank 3, parent
 * of 4. */
struct mm_res {
	size_t len;		/* the root's */
	int shorter, longer;	/* the ranks that pass other lengths */
	int rc[8], rc2[8];
	long bad_byte[8];
	double secs[8];
};

static size_t mm_len(const struct mm_res *r, int rank)
{
	if (rank == r->shorter)
		return r->len / 2;
	if (rank == r->longer)
		return r->len * 2;
	return r->len;
}

static int run_mismatch(ibmc_context_t *ctx, int rank, void *arg)
{
	struct mm_res *r = arg;
	size_t full = r->len;
	size_t len = mm_len(r, rank);
	unsigned char *buf = malloc(full * 2);
	ibmc_comm_t *c;
	double t0;
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = ibmc_comm_create(ctx, NULL, 0, &c);
	if (rc) {
		free(buf);
		return rc;
	}
	if (rank == 0)
		lbjob_fill(buf, len, 11);
	else
		memset(buf, 0xee, full * 2);
	t0 = lbjob_now();
	r->rc[rank] = ibmc_bcast(c, buf, len, 0);
	/* What fits arrived on every rank, the rest of a longer buffer is
	 * left alone. */
	r->bad_byte[rank] = lbjob_check(buf, len < full ? len : full, 11);
	if (len > full && buf[full] != 0xee)
		r->bad_byte[rank] = (long)full;
	/* The communicator still works (a failure of the first broadcast
	 * after an early return would come here too). */
	r->rc2[rank] = bcast_check(c, 3, 5000, 12);
	r->secs[rank] = lbjob_now() - t0;
	free(buf);
	return ibmc_comm_free(c);
}

static void length_mismatch(const char *algo, size_t len)
{
	int postal = !strcmp(algo, "postal");
	struct mm_res r = { .len = len, .shorter = postal ? 5 : 4,
			    .longer = postal ? 3 : 2 };
	int bad, i, ok_rc = 1, ok_data = 1, ok_next = 1;
	double worst = 0;

	lbjob_env(2, 2048);
	setenv("IBMCAST_BCAST_ALGO", algo, 1);
	setenv("IBMCAST_POSTAL_LAMBDA", "2", 1);
	bad = lbjob_run(8, run_mismatch, &r);
	unsetenv("IBMCAST_BCAST_ALGO");
	for (i = 0; i < 8; i++) {
		int want = i == r.shorter || i == r.longer ? -EMSGSIZE : 0;

		if (r.rc[i] != want) {
			ok_rc = 0;
			tap_diag("  rank %d: %s", i, strerror(-r.rc[i]));
		}
		if (r.bad_byte[i] >= 0) {
			ok_data = 0;
			tap_diag("  rank %d: byte %ld differs", i,
				 r.bad_byte[i]);
		}
		if (r.rc2[i])
			ok_next = 0;
		if (r.secs[i] > worst)
			worst = r.secs[i];
	}
	tap_ok(!bad && ok_rc,
	       "%s, %zu bytes, rank %d shorter and rank %d longer: only they get EMSGSIZE",
	       algo, len, r.shorter, r.longer);
	tap_ok(ok_data, "  ... every rank holds what fits of the root's data");
	tap_ok(ok_next, "  ... the next broadcast succeeds everywhere");
	tap_ok(worst < 4.0, "  ... no timeout: slowest rank took %.3fs (timeout 8s)",
	       worst);
}

static void fault_mcast_broken(void)
{
	struct ibmc_loopback_faults f = { .mcast_broken = 1, .seed = 3 };
	struct res r = { 0 };
	int bad, n = getenv("IBMCAST_BCAST_SYNC") ? 48 : 96;

	lbjob_env(1, 2048);
	ibmc__loopback_set_faults(lbjob_hub(), &f);
	bad = lbjob_run(8, run_auto, &r);
	tap_ok(!bad && !r.bad && r.ok == n,
	       "multicast broken: every broadcast still delivered (%d ok, %d bad)",
	       (int)r.ok, (int)r.bad + bad);
	tap_ok(strcmp(r.algo[0], "mcast") != 0,
	       "multicast broken: auto at the root moved to point-to-point (%s)",
	       r.algo[0]);
	tap_is_int(r.state_rc[0], -EHOSTUNREACH,
		   "the root's ibmc_comm_mcast_state says multicast reached nobody");
	tap_diag("  why: %s", r.why[0]);
	tap_is_int(r.state2_rc[0], -ENOSPC,
		   "a second communicator with a one-group pool has none");
}

static void state_not_ready(const char *var, const char *val,
			    int want_rc, const char *want_why)
{
	struct res r = { 0 };
	int bad;

	lbjob_env(2, 2048);
	setenv(var, val, 1);
	setenv("IBMCAST_REASON", "the SM did not confirm in time", 1);
	bad = lbjob_run(5, run_auto, &r);
	tap_ok(!bad && !r.bad && r.ok == (getenv("IBMCAST_BCAST_SYNC") ? 30 : 60),
	       "%s=%.30s: context and broadcasts work (%d ok)", var, val,
	       (int)r.ok);
	tap_is_int(r.state_rc[2], want_rc, "  ... communicator state");
	tap_ok(strstr(r.why[2], want_why) != NULL,
	       "  ... reason \"%s\" mentions \"%s\"", r.why[2], want_why);
	tap_ok(strcmp(r.algo[2], "mcast") != 0, "  ... auto used %s",
	       r.algo[2]);
}

static void dead_rank(const char *algo)
{
	struct res r = { 0 };
	int bad, i;

	lbjob_env(2, 2048);
	setenv("IBMCAST_BCAST_ALGO", algo, 1);
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "800", 1);
	bad = lbjob_run(4, run_dead, &r);
	unsetenv("IBMCAST_BCAST_ALGO");
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "20000", 1);
	tap_ok(!bad, "%s, rank 3 dead: no rank hung", algo);
	tap_is_int(r.rc[0], -ETIMEDOUT, "  ... the root gives up with -ETIMEDOUT");
	tap_is_int(r.rc[2], -ETIMEDOUT,
		   "  ... the dead rank's parent (rank 2) too");
	tap_is_int(r.rc[1], 0, "  ... rank 1 outside that subtree has its data");
	for (i = 0; i < 3; i++)
		tap_ok(r.secs[i] < 10.0, "  ... rank %d returned in %.2fs", i,
		       r.secs[i]);
}

int main(void)
{
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "20000", 1);
	unsetenv("IBMCAST_BCAST_ALGO");
	fault_mcast_broken();
	state_not_ready("IBMCAST_STATE", "timeout", -ENETDOWN, "timeout");
	state_not_ready("IBMCAST_STATE", "bogus", -EINVAL, "malformed");
	state_not_ready("IBMCAST_GROUPS", "ff12::1/0xc001/0x1/0xffff/999",
			-EINVAL, "malformed");
	state_not_ready("IBMCAST_COMM_MODE", "p2p", -ECANCELED, "p2p");
	dead_rank("mcast");
	dead_rank("binomial");
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "8000", 1);
	length_mismatch("mcast", 100000);
	length_mismatch("binomial", 100000);
	length_mismatch("postal", 1000);
	length_mismatch("postal", 100000);
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "20000", 1);
	/* The synchronizing return: failures come with the call itself. */
	setenv("IBMCAST_BCAST_SYNC", "1", 1);
	fault_mcast_broken();
	dead_rank("mcast");
	dead_rank("binomial");
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "8000", 1);
	length_mismatch("mcast", 100000);
	length_mismatch("binomial", 100000);
	length_mismatch("postal", 1000);
	setenv("IBMCAST_BCAST_TIMEOUT_MS", "20000", 1);
	unsetenv("IBMCAST_BCAST_SYNC");
	tap_plan(tap__n);
	return tap_done();
}
