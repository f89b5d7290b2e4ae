/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prune_mpi: a plain MPI program whose MPI_COMM_WORLD is split into
 * communicators over parts of the job, each broadcasting and checking
 * every element, with pauses a test can look at the fabric in: after the
 * split (the sub-communicators live), and after they were freed.
 *
 * Usage: prune_mpi --colors C --dir DIR. World rank r takes color
 * r / (size / (2 C)) when that is below C, else MPI_UNDEFINED: the colors
 * cover the first half of the ranks, in blocks. World rank 0 creates
 * DIR/split and waits for DIR/go, then creates DIR/freed and waits for
 * DIR/end (each wait at most 300 s); every rank waits with it in
 * MPI_Barrier. Output: every rank prints "prune_mpi: rank R: color C,
 * B broadcasts verified, E errors". Exit 1 on errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#define LEN 256		/* ints: 1 KiB a broadcast */

static int wrank;
static long bcasts, errors;

static int val(long seq, int root, int i)
{
	return (int)(i * 40503 + root * 1000003 + seq * 7919);
}

/* n broadcasts of LEN ints on comm, roots in turn, every element checked. */
static void bcasts_check(MPI_Comm comm, long first, int n)
{
	int buf[LEN], me, size, i, k, root;

	MPI_Comm_rank(comm, &me);
	MPI_Comm_size(comm, &size);
	for (k = 0; k < n; k++) {
		root = k % size;
		for (i = 0; i < LEN; i++)
			buf[i] = me == root ? val(first + k, root, i) : -1;
		MPI_Bcast(buf, LEN, MPI_INT, root, comm);
		for (i = 0; i < LEN; i++)
			if (buf[i] != val(first + k, root, i)) {
				if (errors++ < 3)
					fprintf(stderr,
						"prune_mpi: rank %d: broadcast %ld from root %d: int %d is %d, not %d\n",
						wrank, first + k, root, i,
						buf[i], val(first + k, root, i));
				break;
			}
		bcasts++;
	}
}

/* World rank 0 makes dir/mark, then waits for dir/wait; all wait for it. */
static void pause_at(const char *dir, const char *mark, const char *wait)
{
	char path[4096];
	FILE *f;
	int i;

	if (wrank == 0) {
		snprintf(path, sizeof(path), "%s/%s", dir, mark);
		f = fopen(path, "w");
		if (!f) {
			perror(path);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		fclose(f);
		snprintf(path, sizeof(path), "%s/%s", dir, wait);
		for (i = 0; i < 30000 && access(path, F_OK); i++)
			nanosleep(&(struct timespec){ .tv_nsec = 10000000 },
				  NULL);
		if (access(path, F_OK)) {
			fprintf(stderr, "prune_mpi: no %s after 300 s\n",
				path);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int colors = 0, size, per, color, i;
	MPI_Comm sub;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (i = 1; i + 1 < argc; i += 2)
		if (!strcmp(argv[i], "--colors"))
			colors = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
	per = colors > 0 ? size / (2 * colors) : 0;
	if (!dir || per < 1) {
		if (wrank == 0)
			fprintf(stderr,
				"usage: prune_mpi --colors C --dir DIR (at least 2 C ranks)\n");
		MPI_Finalize();
		return 64;
	}
	color = wrank / per < colors ? wrank / per : MPI_UNDEFINED;
	MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &sub);
	if (sub != MPI_COMM_NULL)
		bcasts_check(sub, 0, 20);
	pause_at(dir, "split", "go");
	if (sub != MPI_COMM_NULL) {
		bcasts_check(sub, 20, 60);
		MPI_Comm_free(&sub);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	pause_at(dir, "freed", "end");
	bcasts_check(MPI_COMM_WORLD, 80, 4);
	printf("prune_mpi: rank %d: color %d, %ld broadcasts verified, %ld errors\n",
	       wrank, color == MPI_UNDEFINED ? -1 : color, bcasts, errors);
	MPI_Finalize();
	return errors ? 1 : 0;
}
