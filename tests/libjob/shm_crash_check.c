/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_crash_check - node shared-memory allgathers (or, with "bcast",
 * node-leader broadcasts of BLOCKLEN bytes from every root in turn) until
 * one fails, for a test that kill -9s one rank in the middle
 * (libjob_shm_crash.sh). The
 * rank's work runs in a child process whose pid goes to DIR/RANK.pid, so
 * the test can kill the rank itself while its parent, the process
 * ibmcast-run started, exits 0 and ibmcast-run does not stop the others:
 * they must find out on their own, by their timeout. Every allgather's
 * blocks are verified byte for byte. Prints one line per rank:
 *   "rank R failed after N allgathers: MESSAGE" (or "broadcasts") or
 *   "rank R killed by signal S".
 *
 * Usage: shm_crash_check DIR BLOCKLEN [bcast]
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/libjob/check_util.h"

const char *prog = "shm_crash_check";
ibmc_bootstrap_t bs;

static unsigned char byte_of(int rank, size_t i, unsigned n)
{
	return (unsigned char)(rank * 29 + i * 13 + n * 7);
}

static void write_pid(const char *dir, int rank)
{
	char tmp[4096], path[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%d.pid.tmp", dir, rank);
	snprintf(path, sizeof(path), "%s/%d.pid", dir, rank);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) ||
	    rename(tmp, path))
		die("cannot write %s: %s", path, strerror(errno));
}

/* One node-leader broadcast from root calls % n, verified. */
static int bcast(ibmc_comm_t *c, unsigned char *buf, size_t bl,
		 unsigned calls)
{
	int n = ibmc_comm_size(c), root = (int)(calls % (unsigned)n), rc;
	size_t k;

	for (k = 0; k < bl; k++)
		buf[k] = ibmc_comm_rank(c) == root ? byte_of(root, k, calls) :
			 0;
	rc = ibmc_bcast(c, buf, bl, root);
	for (k = 0; !rc && k < bl; k++)
		if (buf[k] != byte_of(root, k, calls))
			return -EIO;
	return rc;
}

static int work(const char *dir, size_t bl, int bc)
{
	ibmc_context_t *ctx = check_init();
	ibmc_comm_t *c = bc ? check_world(ctx, "bcast", "shm_mcast") :
			 check_world(ctx, "allgather", "shm_leader");
	int rank = ibmc_comm_rank(c), n = ibmc_comm_size(c), r, rc = 0;
	unsigned char *mine = malloc(bl + 1), *all = malloc(bl * n + 1);
	unsigned calls;
	size_t k;

	if (!mine || !all)
		die("out of memory");
	write_pid(dir, rank);
	/* Until the test kills a rank; ibmcast-run's --timeout bounds it. */
	for (calls = 0; !rc; calls++) {
		if (bc) {
			rc = bcast(c, all, bl, calls);
			continue;
		}
		for (k = 0; k < bl; k++)
			mine[k] = byte_of(rank, k, calls);
		rc = ibmc_allgather(c, mine, all, bl);
		for (r = 0; !rc && r < n; r++)
			for (k = 0; k < bl; k++)
				if (all[(size_t)r * bl + k] !=
				    byte_of(r, k, calls)) {
					rc = -EIO;
					break;
				}
	}
	printf("rank %d failed after %u %s: %s\n", rank, calls - 1,
	       bc ? "broadcasts" : "allgathers", strerror(-rc));
	fflush(stdout);
	ibmc_comm_free(c);
	ibmc_finalize(ctx);
	ibmc_bootstrap_fini(&bs);
	free(mine);
	free(all);
	return rc == -ETIMEDOUT ? 0 : 1;
}

int main(int argc, char **argv)
{
	size_t bl;
	pid_t pid;
	int st;

	if (argc < 3 || argc > 4 || parse_size(argv[2], &bl) ||
	    (argc == 4 && strcmp(argv[3], "bcast"))) {
		fprintf(stderr, "usage: shm_crash_check DIR BLOCKLEN [bcast]\n");
		return 64;
	}
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0)
		return work(argv[1], bl, argc == 4);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(st)) {
		printf("rank %s killed by signal %d\n",
		       getenv("IBMCAST_RANK") ? getenv("IBMCAST_RANK") : "?",
		       WTERMSIG(st));
		return 0;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
