/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Late members are waited for; dead ones are reported (live.h). Every rank
 * runs a barrier, a broadcast of LEN bytes from rank 0, an allgather of
 * LEN / size bytes per rank and an allreduce (sum) of LEN / 8 int64s,
 * and checks every byte against values computed here independently.
 *
 *   late:   VICTIM spends SECONDS outside the library (as a rank writing
 *           a checkpoint would) before each of the four collectives; the
 *           others must wait, however long, and all succeed. Each rank
 *           prints "rank R ok waited W s sent P packets probes Q (...)".
 *   vanish: VICTIM leaves with _exit(0) (a crash, on the wire) before
 *           the barrier; stop: it stops itself with SIGSTOP (its pid in
 *           $LIVE_CHECK_PIDFILE first, for the test to kill it later).
 *           Each survivor prints "rank R barrier ERR after T s" and then
 *           "rank R next ERR after T s" for the broadcast that follows.
 *
 * Usage: live_check late|vanish|stop VICTIM SECONDS [LEN]
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_util.h"
#include "ibmcast/ibmcast.h"

const char *prog = "live_check";
ibmc_bootstrap_t bs;

static unsigned char byte_at(size_t i, int salt)
{
	return (unsigned char)(i * 131 + (i >> 8) + 7 + (unsigned)salt * 17);
}

static const char *err_name(int rc)
{
	switch (rc) {
	case 0: return "ok";
	case -ESRCH: return "ESRCH";
	case -ETIMEDOUT: return "ETIMEDOUT";
	default: return strerror(-rc);
	}
}

/* Collective i of the four on c, its result checked; 0, -errno, or 1
 * for wrong data. */
static int run_one(ibmc_comm_t *c, int i, size_t len)
{
	int rank = ibmc_comm_rank(c), size = ibmc_comm_size(c), rc, r;
	size_t n, k, blk = len / (size_t)size ? len / (size_t)size : 1;
	unsigned char *b, *all;
	int64_t *v, *sum;

	switch (i) {
	case 0:
		return ibmc_barrier(c);
	case 1:
		b = malloc(len ? len : 1);
		if (!b)
			die("out of memory");
		for (k = 0; k < len; k++)
			b[k] = rank == 0 ? byte_at(k, 0) : 0;
		rc = ibmc_bcast(c, b, len, 0);
		for (k = 0; !rc && k < len; k++)
			if (b[k] != byte_at(k, 0))
				rc = 1;
		free(b);
		return rc;
	case 2:
		b = malloc(blk);
		all = malloc(blk * (size_t)size);
		if (!b || !all)
			die("out of memory");
		for (k = 0; k < blk; k++)
			b[k] = byte_at(k, rank + 1);
		rc = ibmc_allgather(c, b, all, blk);
		for (r = 0; !rc && r < size; r++)
			for (k = 0; k < blk; k++)
				if (all[(size_t)r * blk + k] != byte_at(k, r + 1))
					rc = 1;
		free(b);
		free(all);
		return rc;
	default:
		n = len / 8 ? len / 8 : 1;
		v = malloc(n * 8);
		sum = malloc(n * 8);
		if (!v || !sum)
			die("out of memory");
		for (k = 0; k < n; k++)
			v[k] = (int64_t)(k * 7 + 1) * (rank + 1);
		rc = ibmc_allreduce(c, v, sum, n, IBMC_INT64, IBMC_SUM);
		for (k = 0; !rc && k < n; k++)
			if (sum[k] != (int64_t)(k * 7 + 1) *
				      ((int64_t)size * (size + 1) / 2))
				rc = 1;
		free(v);
		free(sum);
		return rc;
	}
}

static const char *const names[] = {
	"barrier", "bcast", "allgather", "allreduce"
};

int main(int argc, char **argv)
{
	ibmc_context_t *ctx;
	ibmc_comm_t *c;
	ibmc_comm_stats_t st0, st1;
	const char *mode;
	size_t len = 4096;
	double t0, waited = 0, secs;
	int victim, rank, i, rc, bad = 0;

	if (argc < 4 || (strcmp(argv[1], "late") && strcmp(argv[1], "vanish") &&
			 strcmp(argv[1], "stop"))) {
		fprintf(stderr, "usage: live_check late|vanish|stop VICTIM SECONDS [LEN]\n");
		return 64;
	}
	mode = argv[1];
	ctx = check_init();
	victim = int_arg("VICTIM", argv[2], 0, bs.size - 1);
	secs = atof(argv[3]);
	if (argc > 4 && parse_size(argv[4], &len))
		die("LEN '%s' is not a size", argv[4]);
	c = check_world(ctx, NULL, NULL);
	rank = ibmc_comm_rank(c);
	/* Warm up (the data plane reads a new group's tables within its
	 * staleness bound) and fence through the bootstrap, so that what
	 * follows starts from a quiet communicator. */
	for (i = 0; i < 4; i++)
		if ((rc = run_one(c, i, 64)))
			die("warm-up %s: %s", names[i], err_name(rc));
	check_sync_all();
	ibmc_comm_get_stats(c, &st0);

	if (strcmp(mode, "late")) {
		if (rank == victim) {
			const char *pf = getenv("LIVE_CHECK_PIDFILE");
			FILE *f;

			printf("rank %d leaves by %s\n", rank, mode);
			fflush(stdout);
			if (!strcmp(mode, "vanish"))
				_exit(0);
			if (pf && (f = fopen(pf, "w"))) {
				fprintf(f, "%d\n", (int)getpid());
				fclose(f);
			}
			raise(SIGSTOP);
			_exit(0);	/* continued: still taken for dead */
		}
		t0 = now();
		rc = run_one(c, 0, len);
		printf("rank %d barrier %s after %.1f s\n", rank, err_name(rc),
		       now() - t0);
		t0 = now();
		rc = run_one(c, 1, len);
		printf("rank %d next %s after %.1f s\n", rank, err_name(rc),
		       now() - t0);
		fflush(stdout);
		/* The communicator holds a dead member: free it and leave
		 * without the drain's wait for it. */
		ibmc_comm_free(c);
		ibmc_finalize(ctx);
		return 0;
	}
	for (i = 0; i < 4; i++) {
		if (rank == victim)
			usleep((useconds_t)(secs * 1e6));
		t0 = now();
		rc = run_one(c, i, len);
		waited += now() - t0;
		if (rc) {
			printf("rank %d %s %s\n", rank, names[i],
			       rc == 1 ? "BAD data" : err_name(rc));
			bad = 1;
		}
	}
	ibmc_comm_get_stats(c, &st1);
	if (!bad)
		printf("rank %d ok waited %.1f s sent %llu packets probes %llu (pulls %llu, resent %llu, timeouts %llu)\n",
		       rank, waited,
		       (unsigned long long)(st1.packets_sent - st0.packets_sent),
		       (unsigned long long)(st1.probes_sent - st0.probes_sent),
		       (unsigned long long)(st1.pulls - st0.pulls),
		       (unsigned long long)(st1.retransmits - st0.retransmits),
		       (unsigned long long)(st1.timeouts - st0.timeouts));
	fflush(stdout);
	ibmc_comm_free(c);
	ibmc_finalize(ctx);
	return bad;
}
