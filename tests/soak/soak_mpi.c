/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak_mpi: a plain MPI program (nothing but MPI calls) that runs a seeded,
 * randomized sequence of MPI_Bcast, MPI_Barrier, MPI_Allgather and
 * MPI_Allreduce on MPI_COMM_WORLD and on communicators it creates and
 * frees as it goes (MPI_Comm_dup, MPI_Comm_split, MPI_Comm_create), with
 * random roots, sizes from 0 B to --max-bytes, several datatypes and
 * operations, MPI_IN_PLACE, and random skews between the ranks, and checks
 * every result exactly against values it computes itself. Every rank draws
 * the same sequence from --seed, so all call the same collectives in the
 * same order; skews come from a stream of each rank's own.
 *
 * Faults it makes itself: --late-rank R --late-s S --late-at K (rank R
 * spends S s outside MPI before operation K); --kill-rank R --kill-at K
 * (rank R kills itself with SIGKILL before operation K, or with
 * --kill-exit leaves with _exit(0), as a crash looks on the wire: MPICH
 * 4.0's mpiexec aborts the whole job on a rank killed by a signal, even
 * with -disable-auto-cleanup; the others run
 * with MPI_ERRORS_RETURN, stop at the first error and say how long it
 * took). The driver (tests/soak/soak.sh) adds loss, CPU hogs and SM
 * restarts from outside.
 *
 * SOAK_MPI_BREAK=N (a test of the check itself): rank 1 alters its N-th
 * non-empty broadcast result before checking it.
 *
 * Output: on error "soak: rank R: op K: COLL on COMM failed: class C after
 * T s"; at the end of every rank that finished "soak: rank R: N
 * collectives, W wrong, E errors, T s". Exit 0 when W = E = 0.
 */
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#define MAX_COMMS 6

struct comm {
	MPI_Comm comm;		/* MPI_COMM_NULL: not a member */
	int id;			/* creation number, the same everywhere */
	int size, me;
	int *world;		/* world rank of each member */
	const char *kind;
};

static struct comm comms[MAX_COMMS];
static int ncomms, next_id, wrank, wsize;
static long n_colls, n_wrong, n_errors;
static long max_bytes = 4 << 20;
/* SOAK_MPI_BREAK=N: rank 1 alters its N-th non-empty broadcast result
 * before checking it, so that a run shows the check catches it. */
static long break_at;
static double t_start;

/* ---- deterministic random numbers (splitmix64) ------------------------- */

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n)
{
	return n ? mix(s) % n : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Element i of world rank r's contribution to operation op: small
 * integers, so that sums of any type are exact. */
static long value(uint64_t op, int r, size_t i)
{
	uint64_t s = op * 1000003u + (uint64_t)r * 7919u + i * 31u;

	return (long)(mix(&s) % 1000) - 300;
}

/* A message size: mostly small, some large, at most max_bytes. */
static size_t draw_bytes(uint64_t *s)
{
	uint64_t k = below(s, 100), cap;

	cap = k < 60 ? 4096 : k < 92 ? 262144 : (uint64_t)max_bytes;
	if (cap > (uint64_t)max_bytes)
		cap = (uint64_t)max_bytes;
	if (below(s, 20) == 0)
		return 0;
	return (size_t)below(s, cap + 1);
}

/* ---- communicators ------------------------------------------------------ */

static void comm_fill(struct comm *c, MPI_Comm comm, const char *kind)
{
	MPI_Group wg, g;
	int *in, i;

	memset(c, 0, sizeof(*c));
	c->comm = comm;
	c->id = next_id++;
	c->kind = kind;
	if (comm == MPI_COMM_NULL)
		return;
	MPI_Comm_size(comm, &c->size);
	MPI_Comm_rank(comm, &c->me);
	c->world = malloc(sizeof(int) * (size_t)c->size);
	in = malloc(sizeof(int) * (size_t)c->size);
	if (!c->world || !in)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < c->size; i++)
		in[i] = i;
	MPI_Comm_group(comm, &g);
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Group_translate_ranks(g, c->size, in, wg, c->world);
	MPI_Group_free(&g);
	MPI_Group_free(&wg);
	free(in);
	if (c->comm != MPI_COMM_WORLD)
		MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
}

static void comm_drop(int i)
{
	struct comm *c = &comms[i];

	if (c->comm != MPI_COMM_NULL && c->comm != MPI_COMM_WORLD)
		MPI_Comm_free(&c->comm);
	free(c->world);
	comms[i] = comms[--ncomms];
}

/* Make or free a communicator (collective over MPI_COMM_WORLD: every rank
 * draws the same choice). */
static void reshape(uint64_t *s)
{
	MPI_Comm nc = MPI_COMM_NULL;
	MPI_Group wg, g;
	int k, lo, n, *ranks, i;

	if (ncomms > 1 && (ncomms == MAX_COMMS || below(s, 2))) {
		comm_drop(1 + (int)below(s, (uint64_t)ncomms - 1));
		return;
	}
	switch (below(s, 3)) {
	case 0:
		MPI_Comm_dup(MPI_COMM_WORLD, &nc);
		comm_fill(&comms[ncomms++], nc, "dup");
		break;
	case 1:
		k = 2 + (int)below(s, 2);
		MPI_Comm_split(MPI_COMM_WORLD, wrank % k,
			       (int)((uint64_t)wrank * 7 % (uint64_t)wsize), &nc);
		comm_fill(&comms[ncomms++], nc, "split");
		break;
	default:
		/* A contiguous run of at least 2 world ranks. */
		n = 2 + (int)below(s, (uint64_t)wsize - 1);
		lo = (int)below(s, (uint64_t)(wsize - n + 1));
		ranks = malloc(sizeof(int) * (size_t)n);
		if (!ranks)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (i = 0; i < n; i++)
			ranks[i] = lo + i;
		MPI_Comm_group(MPI_COMM_WORLD, &wg);
		MPI_Group_incl(wg, n, ranks, &g);
		MPI_Comm_create(MPI_COMM_WORLD, g, &nc);
		MPI_Group_free(&g);
		MPI_Group_free(&wg);
		free(ranks);
		comm_fill(&comms[ncomms++], nc, "create");
		break;
	}
}

/* ---- collectives -------------------------------------------------------- */

enum { C_BCAST, C_BARRIER, C_ALLGATHER, C_ALLREDUCE, C_N };
static const char *const coll_names[C_N] = {
	"MPI_Bcast", "MPI_Barrier", "MPI_Allgather", "MPI_Allreduce"
};

/* Datatypes whose elements hold value() exactly. */
enum { T_INT, T_LONG, T_DOUBLE, T_FLOAT, T_SHORT, T_N };

static MPI_Datatype mpi_type(int t)
{
	static MPI_Datatype types[T_N];

	types[T_INT] = MPI_INT;
	types[T_LONG] = MPI_LONG;
	types[T_DOUBLE] = MPI_DOUBLE;
	types[T_FLOAT] = MPI_FLOAT;
	types[T_SHORT] = MPI_SHORT;
	return types[t];
}

static size_t type_size(int t)
{
	static const size_t sz[T_N] = { sizeof(int), sizeof(long),
					sizeof(double), sizeof(float),
					sizeof(short) };

	return sz[t];
}

static void put(void *buf, int t, size_t i, long v)
{
	switch (t) {
	case T_INT: ((int *)buf)[i] = (int)v; break;
	case T_LONG: ((long *)buf)[i] = v; break;
	case T_DOUBLE: ((double *)buf)[i] = (double)v; break;
	case T_FLOAT: ((float *)buf)[i] = (float)v; break;
	default: ((short *)buf)[i] = (short)v; break;
	}
}

static long get(const void *buf, int t, size_t i)
{
	switch (t) {
	case T_INT: return ((const int *)buf)[i];
	case T_LONG: return ((const long *)buf)[i];
	case T_DOUBLE: return (long)((const double *)buf)[i];
	case T_FLOAT: return (long)((const float *)buf)[i];
	default: return ((const short *)buf)[i];
	}
}

enum { O_SUM, O_MAX, O_MIN, O_BOR, O_N };

static long combine(int o, long a, long b)
{
	switch (o) {
	case O_SUM: return a + b;
	case O_MAX: return a > b ? a : b;
	case O_MIN: return a < b ? a : b;
	default: return a | b;
	}
}

static MPI_Op mpi_op(int o)
{
	return o == O_SUM ? MPI_SUM : o == O_MAX ? MPI_MAX :
	       o == O_MIN ? MPI_MIN : MPI_BOR;
}

/* One collective, its arguments drawn from s (the same on every rank);
 * returns MPI's error code. Wrong data is counted in n_wrong. */
static int run_coll(uint64_t op, uint64_t *s, struct comm *c, int coll)
{
	int t = (int)below(s, T_N), o = (int)below(s, O_N), root, rc, r;
	int in_place = below(s, 4) == 0;
	size_t esz = type_size(t), bytes = draw_bytes(s), n, i, wrong = 0;
	unsigned char *buf = NULL, *all = NULL;
	long want;

	if (o == O_BOR && (t == T_DOUBLE || t == T_FLOAT))
		o = O_SUM;	/* bitwise operations are for integers */
	root = (int)below(s, (uint64_t)c->size);
	switch (coll) {
	case C_BARRIER:
		return MPI_Barrier(c->comm);
	case C_BCAST:
		n = bytes / esz;
		buf = malloc(n * esz + 1);
		if (!buf)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (i = 0; i < n; i++)
			put(buf, t, i, c->me == root ? value(op, c->world[root], i) : 0);
		rc = MPI_Bcast(buf, (int)n, mpi_type(t), root, c->comm);
		if (break_at && wrank == 1 && n && !--break_at)
			put(buf, t, n - 1, get(buf, t, n - 1) + 1);
		for (i = 0; rc == MPI_SUCCESS && i < n; i++)
			wrong += get(buf, t, i) != value(op, c->world[root], i);
		break;
	case C_ALLGATHER:
		n = bytes / esz / (size_t)c->size;
		buf = malloc(n * esz + 1);
		all = malloc(n * esz * (size_t)c->size + 1);
		if (!buf || !all)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (i = 0; i < n; i++) {
			put(buf, t, i, value(op, wrank, i));
			put(all, t, (size_t)c->me * n + i, value(op, wrank, i));
		}
		rc = in_place ?
		     MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all,
				   (int)n, mpi_type(t), c->comm) :
		     MPI_Allgather(buf, (int)n, mpi_type(t), all, (int)n,
				   mpi_type(t), c->comm);
		for (r = 0; rc == MPI_SUCCESS && r < c->size; r++)
			for (i = 0; i < n; i++)
				wrong += get(all, t, (size_t)r * n + i) !=
					 value(op, c->world[r], i);
		break;
	default:
		n = bytes / esz;
		buf = malloc(n * esz + 1);
		all = malloc(n * esz + 1);
		if (!buf || !all)
			MPI_Abort(MPI_COMM_WORLD, 2);
		for (i = 0; i < n; i++) {
			put(buf, t, i, value(op, wrank, i));
			put(all, t, i, value(op, wrank, i));
		}
		rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : buf, all, (int)n,
				   mpi_type(t), mpi_op(o), c->comm);
		for (i = 0; rc == MPI_SUCCESS && i < n; i++) {
			want = value(op, c->world[0], i);
			for (r = 1; r < c->size; r++)
				want = combine(o, want,
					       value(op, c->world[r], i));
			if (t == T_SHORT)
				want = (short)want;
			wrong += get(all, t, i) != want;
		}
		break;
	}
	if (wrong) {
		printf("soak: rank %d: op %llu: %s on %s #%d (%zu bytes): %zu elements wrong\n",
		       wrank, (unsigned long long)op, coll_names[coll],
		       c->kind, c->id, bytes, wrong);
		n_wrong++;
	}
	free(buf);
	free(all);
	return rc;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: soak_mpi [--seed S] [--ops N] [--max-bytes B] [--skew-us U]\n"
		"                [--late-rank R --late-s S --late-at K]\n"
		"                [--kill-rank R --kill-at K [--kill-exit]]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'n' },
		{ "max-bytes", required_argument, NULL, 'b' },
		{ "skew-us", required_argument, NULL, 'k' },
		{ "late-rank", required_argument, NULL, 'L' },
		{ "late-s", required_argument, NULL, 'S' },
		{ "late-at", required_argument, NULL, 'A' },
		{ "kill-rank", required_argument, NULL, 'K' },
		{ "kill-at", required_argument, NULL, 'T' },
		{ "kill-exit", no_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t seed = 1, shared, own, op, args;
	long ops = 1000, skew_us = 1000, late_rank = -1, late_at = -1,
	     kill_rank = -1, kill_at = -1;
	double late_s = 0, t0;
	int kill_exit = 0;
	int ch, coll, rc, cls;
	struct comm *c;

	MPI_Init(&argc, &argv);
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'n': ops = atol(optarg); break;
		case 'b': max_bytes = atol(optarg); break;
		case 'k': skew_us = atol(optarg); break;
		case 'L': late_rank = atol(optarg); break;
		case 'S': late_s = atof(optarg); break;
		case 'A': late_at = atol(optarg); break;
		case 'K': kill_rank = atol(optarg); break;
		case 'T': kill_at = atol(optarg); break;
		case 'X': kill_exit = 1; break;
		default: usage();
		}
	}
	if (ops < 1 || max_bytes < 0 || skew_us < 0)
		usage();
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	if (getenv("SOAK_MPI_BREAK"))
		break_at = atol(getenv("SOAK_MPI_BREAK"));
	if (kill_rank >= 0)
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	comm_fill(&comms[ncomms++], MPI_COMM_WORLD, "world");
	shared = seed;
	own = seed * 0x100000001b3ull + (uint64_t)wrank + 1;
	t_start = now_s();
	for (op = 0; op < (uint64_t)ops; op++) {
		/* Every tenth step on average reshapes the communicators
		 * (collective over world, so never while a rank is dead). */
		if (below(&shared, 10) == 0 && kill_rank < 0)
			reshape(&shared);
		c = &comms[below(&shared, (uint64_t)ncomms)];
		coll = (int)below(&shared, C_N);
		if ((long)op == kill_at && wrank == kill_rank) {
			printf("soak: rank %d: killing itself before op %llu\n",
			       wrank, (unsigned long long)op);
			fflush(stdout);
			if (kill_exit)
				_exit(0);
			raise(SIGKILL);
		}
		if ((long)op == late_at && wrank == late_rank) {
			/* soak.sh measures the others' packets while they
			 * wait from this line on. */
			printf("soak: rank %d: late by %g s before op %llu\n",
			       wrank, late_s, (unsigned long long)op);
			fflush(stdout);
			usleep((useconds_t)(late_s * 1e6));
		}
		if (skew_us && below(&own, 4) == 0)
			usleep((useconds_t)below(&own, (uint64_t)skew_us + 1));
		if (c->comm == MPI_COMM_NULL)
			continue;	/* not a member of that one */
		t0 = now_s();
		/* The call's arguments from a stream of the operation's own:
		 * the same on every member, whatever the others drew. */
		args = seed * 0x9e3779b97f4a7c15ull ^ (op + 1) * 0xd6e8feb86659fd93ull;
		rc = run_coll(op, &args, c, coll);
		n_colls++;
		if (rc != MPI_SUCCESS) {
			MPI_Error_class(rc, &cls);
			printf("soak: rank %d: op %llu: %s on %s #%d failed: class %d after %.1f s\n",
			       wrank, (unsigned long long)op, coll_names[coll],
			       c->kind, c->id, cls, now_s() - t0);
			fflush(stdout);
			n_errors++;
			break;
		}
	}
	printf("soak: rank %d: %ld collectives, %ld wrong, %ld errors, %.1f s\n",
	       wrank, n_colls, n_wrong, n_errors, now_s() - t_start);
	fflush(stdout);
	if (n_errors) {
		/* A dead rank: MPI_Finalize would wait for it. */
		_exit(0);
	}
	while (ncomms > 1)
		comm_drop(1);
	free(comms[0].world);
	MPI_Finalize();
	return n_wrong || n_errors;
}
