/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The node-leader broadcast ("shm_mcast") on the loopback hub, ranks as
 * threads on fake nodes (IBMCAST_LOOPBACK_NODES): 1 to 8 ranks per node,
 * uneven, interleaved and cyclic placements, every root on small jobs
 * (leaders and not), 0 B to 1 MiB checked byte for byte on every rank,
 * the same counts and algorithm name on every rank; with loss; several
 * broadcasts in flight on two communicators; a local rank or a leader
 * that never comes (the others fail bounded, nothing stays in /dev/shm);
 * a rank whose length differs from its node's (EMSGSIZE, no hang).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libjob/context.h"
#include "libjob/transport.h"
#include "tests/libjob/lbjob.h"
#include "tests/tap.h"

#define MAXR 16
#define MIB (1024 * 1024)

/* Fragments are MTU (2048) less the header: 1500 is one, 7000 four. */
static const size_t sizes[] = { 0, 1, 1500, 7000, MIB };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct plan {
	int n;
	int roots[MAXR];
	int nroots;
	int big_roots;		/* 1 MiB from the first big_roots only */
	atomic_int ok, bad;
	uint64_t bcasts[MAXR], mcasts[MAXR];
	atomic_int resent;	/* retransmissions, repairs, duplicates */
	char used[MAXR][24];
};

static int one(ibmc_comm_t *c, int rank, int root, size_t len,
	       uint32_t seed)
{
	unsigned char *buf = malloc(len + 1);
	long at;
	int rc;

	if (!buf)
		return -ENOMEM;
	if (rank == root)
		lbjob_fill(buf, len, seed);
	else
		memset(buf, 0xee, len + 1);
	rc = ibmc_bcast(c, buf, len, root);
	at = rc ? -1 : lbjob_check(buf, len, seed);
	if (rc || at >= 0)
		fprintf(stderr, "# rank %d root %d %zu B: %s %ld\n", rank,
			root, len, rc ? strerror(-rc) : "wrong byte at",
			at);
	free(buf);
	return rc ? rc : at >= 0 ? -EBADMSG : 0;
}

static int run(ibmc_context_t *ctx, int rank, void *arg)
{
	struct plan *p = arg;
	ibmc_comm_stats_t st;
	ibmc_comm_t *c;
	size_t i;
	int k;

	if (ibmc_comm_create(ctx, NULL, 0, &c) ||
	    ibmc_comm_set_bcast_algo(c, "shm_mcast"))
		return 1;
	for (k = 0; k < p->nroots; k++)
		for (i = 0; i < NSIZES; i++) {
			if (sizes[i] == MIB && k >= p->big_roots)
				continue;
			if (one(c, rank, p->roots[k], sizes[i],
				(uint32_t)(k * 31 + i)))
				atomic_fetch_add(&p->bad, 1);
			else
				atomic_fetch_add(&p->ok, 1);
		}
	ibmc_comm_get_stats(c, &st);
	p->bcasts[rank] = st.bcasts;
	p->mcasts[rank] = st.mcast_bcasts;
	atomic_fetch_add(&p->resent, (int)(st.retransmits + st.repairs +
					   st.duplicates));
	snprintf(p->used[rank], sizeof(p->used[rank]), "%s",
		 ibmc_comm_last_bcast_algo(c));
	return ibmc_comm_free(c);
}

/* Entries of /dev/shm of this job's segments, of every node or (node_only)
 * of this rank's node; -1 when /dev/shm cannot be read, so that "none"
 * is never what an unreadable directory says. */
static int job_segments(ibmc_context_t *ctx, int node_only)
{
	char prefix[64], node[16];
	struct dirent *e;
	DIR *d = opendir("/dev/shm");
	int n = 0;

	if (!d)
		return -1;
	snprintf(prefix, sizeof(prefix), "ibmcast-%u-%08x-",
		 (unsigned)getuid(), ctx->job_key);
	snprintf(node, sizeof(node), "-%08x-", ctx->node[ctx->rank]);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix)) &&
		     (!node_only || strstr(e->d_name + strlen(prefix), node));
	closedir(d);
	return n;
}

static int is_leader(const int *node, int r)
{
	int q;

	for (q = 0; q < r; q++)
		if (node[q] == node[r])
			return 0;
	return 1;
}

static void bcast_case(const char *what, const int *node, int n,
		       uint32_t loss)
{
	struct ibmc_loopback_faults f = {
		.loss_ppm = loss, .dup_ppm = loss ? 20000 : 0,
		.reorder_ppm = loss ? 50000 : 0, .seed = 7 + loss + (uint64_t)n,
	};
	struct plan p = { .n = n };
	double t0 = lbjob_now();
	int fails, r, calls, same = 1, nonlead = -1;

	/* Every root on small jobs; else the first rank, a non-leader and
	 * the last rank. */
	for (r = 0; r < n; r++)
		if (!is_leader(node, r) && nonlead < 0)
			nonlead = r;
	if (n <= 6) {
		for (r = 0; r < n; r++)
			p.roots[p.nroots++] = r;
	} else {
		p.roots[p.nroots++] = 0;
		if (nonlead > 0)
			p.roots[p.nroots++] = nonlead;
		p.roots[p.nroots++] = n - 1;
	}
	p.big_roots = nonlead > 0 ? 2 : 1;
	if (p.big_roots > p.nroots)
		p.big_roots = p.nroots;
	calls = p.nroots * (int)(NSIZES - 1) + p.big_roots;
	lbjob_env(2, 2048);
	ibmc__loopback_set_faults(lbjob_hub(), &f);
	lbjob_nodes(node, n);
	fails = lbjob_run(n, run, &p);
	for (r = 0; r < n; r++)
		same &= p.bcasts[r] == (uint64_t)calls &&
			p.mcasts[r] == p.mcasts[0] &&
			!strcmp(p.used[r], "shm_mcast");
	tap_ok(!fails && !p.bad && p.ok == n * calls && (!loss || p.resent),
	       "%s%s: %d/%d broadcasts ok (%d roots, 0 B..1 MiB, every byte on every rank; %d fragments resent or duplicated), %.2fs",
	       what, loss ? ", 5% loss" : "", (int)p.ok, n * calls, p.nroots,
	       (int)p.resent, lbjob_now() - t0);
	for (r = 0; !same && r < n; r++)
		tap_diag("rank %d: %llu broadcasts, %llu multicast, \"%s\"",
			 r, (unsigned long long)p.bcasts[r],
			 (unsigned long long)p.mcasts[r], p.used[r]);
	tap_ok(same,
	       "  ... every rank counted %d broadcasts (rank 0 %llu), %llu over multicast (the same on every rank), last algorithm \"%s\"",
	       calls, (unsigned long long)p.bcasts[0],
	       (unsigned long long)p.mcasts[0], p.used[0]);
}

/* --- several in flight, two communicators ------------------------------ */

#define NB 4

static atomic_int nb_ok, nb_bad;

static int inflight(ibmc_context_t *ctx, int rank, void *arg)
{
	static const size_t len[NB] = { 100, 70001, 5, 300000 };
	int n = ibmc_context_size(ctx), i, rc = 0, nonlead = *(int *)arg;
	unsigned char *buf[2 * NB];
	ibmc_request_t *q[2 * NB];
	ibmc_comm_t *c[2];

	if (ibmc_comm_create(ctx, NULL, 0, &c[0]) ||
	    ibmc_comm_create(ctx, NULL, 0, &c[1]) ||
	    ibmc_comm_set_bcast_algo(c[0], "shm_mcast") ||
	    ibmc_comm_set_bcast_algo(c[1], "shm_mcast"))
		return 1;
	/* Roots: leaders and a non-leader, alternating communicators. */
	for (i = 0; i < 2 * NB; i++) {
		int root = i % 3 == 0 ? nonlead : (i * 5) % n;

		buf[i] = malloc(len[i % NB]);
		if (!buf[i])
			return 1;
		if (rank == root)
			lbjob_fill(buf[i], len[i % NB], 100 + (uint32_t)i);
		else
			memset(buf[i], 0, len[i % NB]);
		rc = rc ?: ibmc_ibcast(c[i % 2], buf[i], len[i % NB], root,
				       &q[i]);
	}
	for (i = 2 * NB - 1; !rc && i >= 0; i--)
		rc = ibmc_wait(&q[i]);
	for (i = 0; i < 2 * NB; i++) {
		if (!rc && lbjob_check(buf[i], len[i % NB],
				       100 + (uint32_t)i) < 0)
			atomic_fetch_add(&nb_ok, 1);
		else
			atomic_fetch_add(&nb_bad, 1);
		free(buf[i]);
	}
	return ibmc_comm_free(c[1]) || ibmc_comm_free(c[0]);
}

/* --- a rank that never comes ------------------------------------------- */

static atomic_int gone_rc[MAXR], seen_seg, left_seg, gone_done;
static double gone_s[MAXR];	/* each rank's time in its broadcasts */

/* Two broadcasts; the victim calls neither, and watches for its node's
 * segment while the others wait for it (a segment that existed, so that
 * "none left" afterwards is not what a directory never holding one
 * says). */
static int absent(ibmc_context_t *ctx, int rank, void *arg)
{
	int victim = *(int *)arg, rc = 0, i;
	unsigned char buf[4096];
	ibmc_comm_t *c;
	double t0;

	if (ibmc_comm_create(ctx, NULL, 0, &c) ||
	    ibmc_comm_set_bcast_algo(c, "shm_mcast"))
		return 1;
	t0 = lbjob_now();
	if (rank == victim) {
		/* Bounded: until seen, or until the 4 others are back. */
		for (i = 0; i < 5000 && atomic_load(&gone_done) < 4; i++) {
			seen_seg = job_segments(ctx, 1);
			if (seen_seg)
				break;
			usleep(2000);
		}
	}
	for (i = 0; rank != victim && !rc && i < 2; i++)
		rc = ibmc_bcast(c, buf, sizeof(buf), 0);
	gone_s[rank] = lbjob_now() - t0;
	gone_rc[rank] = rc;
	if (rank != victim)
		atomic_fetch_add(&gone_done, 1);
	lbjob_barrier();
	ibmc_comm_free(c);
	lbjob_barrier();
	if (rank == 0)
		left_seg = job_segments(ctx, 0);
	lbjob_barrier();
	return 0;
}

static void absent_case(int victim, const char *who)
{
	static const int node[] = { 0, 0, 1, 1, 1 };
	/* Each of the two calls fails at most one timeout after it stopped
	 * moving (IBMCAST_BCAST_TIMEOUT_MS, 1.5 s in main); the slack is a
	 * loaded host's. */
	const double bound = 2 * 1.5 + 1.5;
	double t0 = lbjob_now(), longest = 0;
	int r, timedout = 0, ok = 0, other = 0;

	seen_seg = left_seg = gone_done = 0;
	lbjob_env(2, 2048);
	lbjob_nodes(node, 5);
	lbjob_run(5, absent, &victim);
	for (r = 0; r < 5; r++) {
		if (r == victim)
			continue;
		if (gone_rc[r] == -ETIMEDOUT)
			timedout += node[r] == node[victim];
		else if (!gone_rc[r])
			ok += node[r] != node[victim];
		else
			other++;
		if (gone_s[r] > longest)
			longest = gone_s[r];
		gone_rc[r] = 0;
	}
	/* The victim's node-mates wait for it (a local rank: at the second
	 * call's free segment; the leader: at once); other nodes' ranks
	 * succeed or fail by the network's timeout, never hang. */
	tap_ok(timedout == 2 && longest < bound,
	       "%s never comes: its 2 node-mates fail with ETIMEDOUT (%d), the other node: %d ok, %d failed; the longest rank's broadcasts took %.1fs (timeout 1.5s, bound %.1fs; %.1fs in all)",
	       who, timedout, ok, other, longest, bound, lbjob_now() - t0);
	/* The leader makes its node's segment: without it there is none
	 * to leave; with it, its local rank never mapping the segment keeps
	 * it in /dev/shm until the communicator is freed. */
	tap_ok(is_leader(node, victim) ?
	       seen_seg == 0 && left_seg == 0 : seen_seg > 0 && left_seg == 0,
	       "  ... its node's segment %s (%d), and nothing of the job is left in /dev/shm (%d)",
	       is_leader(node, victim) ?
	       "was never made" : "existed while the others waited",
	       (int)seen_seg, (int)left_seg);
}

/* --- a rank whose length differs --------------------------------------- */

static atomic_int mm_size, mm_ok, mm_other;

static int mismatch(ibmc_context_t *ctx, int rank, void *arg)
{
	unsigned char buf[64] = { 0 };
	ibmc_comm_t *c;
	int rc;

	(void)arg;
	if (ibmc_comm_create(ctx, NULL, 0, &c) ||
	    ibmc_comm_set_bcast_algo(c, "shm_mcast"))
		return 1;
	rc = ibmc_bcast(c, buf, rank == 3 ? 16 : 32, 0);
	if (rc == -EMSGSIZE)
		mm_size++;
	else if (!rc)
		mm_ok++;
	else
		mm_other++;
	lbjob_barrier();
	ibmc_comm_free(c);
	return 0;
}

int main(void)
{
	static const int one_per[] = { 0, 1, 2, 3 };
	static const int two[] = { 0, 0, 1, 1, 2, 2 };
	static const int three[] = { 0, 0, 0, 1, 1, 1, 2, 2, 2 };
	static const int four[] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	static const int eight[] = { 0, 0, 0, 0, 0, 0, 0, 0,
				     1, 1, 1, 1, 1, 1, 1, 1 };
	static const int uneven[] = { 0, 1, 0, 2, 0, 0, 2, 0, 0, 2, 0, 0 };
	static const int cyclic[] = { 0, 1, 2, 0, 1, 2, 0, 1 };
	static const int alone[] = { 0, 0, 0, 0, 0 };
	static const int mm[] = { 0, 0, 1, 1 };
	double t0;
	int nonlead = 1, fails;

	setenv("IBMCAST_BCAST_TIMEOUT_MS", "1500", 1);
	bcast_case("4 nodes, 1 per node (no segment)", one_per, 4, 0);
	bcast_case("3 nodes, 2 per node", two, 6, 0);
	bcast_case("3 nodes, 3 per node", three, 9, 0);
	bcast_case("2 nodes, 4 per node", four, 8, 0);
	bcast_case("2 nodes, 8 per node", eight, 16, 0);
	bcast_case("12 ranks, 8+1+3 interleaved", uneven, 12, 0);
	bcast_case("8 ranks cyclic on 3 nodes", cyclic, 8, 0);
	bcast_case("one node of 5 (no network)", alone, 5, 0);
	bcast_case("3 nodes, 2 per node", two, 6, 50000);
	bcast_case("12 ranks, 8+1+3 interleaved", uneven, 12, 50000);

	t0 = lbjob_now();
	lbjob_env(2, 2048);
	lbjob_nodes(cyclic, 8);
	fails = lbjob_run(8, inflight, &nonlead);
	tap_ok(!fails && !nb_bad && nb_ok == 8 * 2 * NB,
	       "8 ranks cyclic on 3 nodes: %d ibcasts in flight on 2 communicators (roots leaders and rank 3, a non-leader), waited for in reverse: %d/%d ok, %.2fs",
	       2 * NB, (int)nb_ok, 8 * 2 * NB, lbjob_now() - t0);

	absent_case(4, "a local rank (rank 4, node 1)");
	absent_case(2, "a node leader (rank 2, node 1)");

	lbjob_env(2, 2048);
	lbjob_nodes(mm, 4);
	lbjob_run(4, mismatch, NULL);
	tap_ok(mm_size >= 1 && !mm_other,
	       "rank 3 gives 16 bytes, its node 32: EMSGSIZE on rank 3 (%d EMSGSIZE, %d ok, %d other errors), nobody hangs",
	       (int)mm_size, (int)mm_ok, (int)mm_other);
	unsetenv("IBMCAST_LOOPBACK_NODES");
	tap_plan(tap__n);
	return tap_done();
}
