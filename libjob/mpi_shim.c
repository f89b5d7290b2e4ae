/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libibmcast_mpi: a PMPI shim that gives unmodified MPI programs
 * libibmcast's multicast broadcast. MPI_Init bootstraps a context over
 * PMPI_Allgather; every intracommunicator made by MPI_Comm_dup/split/create
 * (and MPI_COMM_WORLD) gets an ibmc communicator at creation, cached as an
 * attribute; MPI_Bcast, MPI_Barrier, MPI_Allgather and MPI_Allreduce on
 * those go through ibmc_bcast, ibmc_barrier, ibmc_allgather and
 * ibmc_allreduce. Anything that fails at setup leaves the program on plain
 * MPI; see libibmcast_mpi(7).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ibmcast/ibmcast.h"
#include "libjob/mpi_map.h"
#include "libjob/mpi_shim_abi.h"

#define SHIM "ibmcast_mpi"

/* Collectives on different communicators may run in different threads
 * (MPI_THREAD_MULTIPLE): the counters they bump are shared. */
#define COUNT(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)

/* Why an MPI_Allgather or MPI_Allreduce went to MPI's own; one counter
 * each. Every reason is the same on every member of the communicator. */
enum pass {
	PASS_UNMAPPED,		/* communicator has no ibmc communicator */
	PASS_ARGS,		/* arguments MPI must reject */
	PASS_SIZE,		/* more than libibmcast takes */
	PASS_OP,		/* not a predefined operation */
	PASS_TYPE,		/* no ibmc_dtype_t for the datatype */
	PASS_OPTYPE,		/* MPI does not define op on the datatype */
	PASS_MAX
};

static const char *const pass_why[PASS_MAX] = {
	[PASS_UNMAPPED] = "communicator not mapped",
	[PASS_ARGS] = "invalid arguments",
	[PASS_SIZE] = "too large",
	[PASS_OP] = "user-defined op",
	[PASS_TYPE] = "datatype not mapped",
	[PASS_OPTYPE] = "op not defined on the datatype",
};

/* One collective's counters (MPI_Allgather, MPI_Allreduce). */
struct ctally {
	unsigned long mcast;		/* over multicast */
	unsigned long p2p;		/* libibmcast's point-to-point */
	unsigned long packed;		/* ... of a non-contiguous type */
	unsigned long pass[PASS_MAX];	/* handed to MPI, by reason */
};

/* Counters of one rank, printed by rank 0 at MPI_Finalize when verbose. */
struct tally {
	unsigned long shim;		/* broadcasts through ibmc_bcast */
	unsigned long mcast, binomial, postal, other;
	unsigned long packed;		/* ... of them a non-contiguous type */
	unsigned long passthrough;	/* handed to PMPI_Bcast */
	unsigned long bar_mcast;	/* barriers by multicast release */
	unsigned long bar_nway;		/* ... by point-to-point dissemination */
	unsigned long bar_other;	/* ... by an algorithm added later */
	unsigned long bar_passthrough;	/* handed to PMPI_Barrier */
	struct ctally ag, ar;		/* MPI_Allgather, MPI_Allreduce */
	unsigned long comms;		/* ibmc communicators made */
	unsigned long comms_p2p;	/* ... of them without multicast */
	ibmc_comm_stats_t freed;	/* stats of communicators already freed */
};

static struct {
	int on;			/* context up, communicators are mapped */
	int finalized;		/* after ibmc_finalize: attributes are stale */
	int verbose;		/* 1: summary at finalize, 2: every call */
	int threads;		/* MPI_THREAD_MULTIPLE */
	int rank;		/* in MPI_COMM_WORLD */
	int keyval;
	MPI_Comm boot;		/* private dup of MPI_COMM_WORLD */
	MPI_Group world;
	ibmc_context_t *ctx;
	ibmc_comm_t **live;	/* mapped communicators not yet freed */
	int nlive, maxlive;
	uint32_t drawn;		/* communicator ids drawn as their rank 0 */
	struct tally t;
} S = { .keyval = MPI_KEYVAL_INVALID, .boot = MPI_COMM_NULL,
	.world = MPI_GROUP_NULL };

/* rank 0 only: the shim's messages must not repeat once per rank */
static void say0(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say0(const char *fmt, ...)
{
	va_list ap;

	if (S.rank != 0)
		return;
	va_start(ap, fmt);
	fprintf(stderr, SHIM ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	char *end;
	long l;

	if (!v || !*v)
		return dflt;
	l = strtol(v, &end, 10);
	return *end ? dflt : (int)l;
}

/* Guards S.live and the freed communicators' counters: under
 * MPI_THREAD_MULTIPLE threads create and free communicators at once. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;

static int live_add(ibmc_comm_t *ic)
{
	ibmc_comm_t **grown;
	int ok = 1;

	pthread_mutex_lock(&live_lock);
	if (S.nlive == S.maxlive) {
		grown = realloc(S.live, sizeof(*S.live) *
				(size_t)(S.maxlive * 2 + 8));
		if (grown) {
			S.live = grown;
			S.maxlive = S.maxlive * 2 + 8;
		}
	}
	if (S.nlive < S.maxlive)
		S.live[S.nlive++] = ic;
	else
		ok = 0;
	pthread_mutex_unlock(&live_lock);
	return ok;
}

/* Frees an ibmc communicator, keeping its counters for the summary. */
static void comm_release(ibmc_comm_t *ic)
{
	ibmc_comm_stats_t st;
	int i;

	pthread_mutex_lock(&live_lock);
	for (i = 0; i < S.nlive; i++)
		if (S.live[i] == ic) {
			S.live[i] = S.live[--S.nlive];
			break;
		}
	if (!ibmc_comm_get_stats(ic, &st))
		ibmc__mpi_stats_add(&S.t.freed, &st);
	pthread_mutex_unlock(&live_lock);
	ibmc_comm_free(ic);
}

/* MPI calls this at MPI_Comm_free (and for leftovers at PMPI_Finalize,
 * when ibmc_finalize already freed every communicator). */
static int attr_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
	if (!S.finalized && val)
		comm_release(val);
	return MPI_SUCCESS;
}

static int boot_allgather(void *arg, const void *in, void *out, size_t len)
{
	if (len > INT32_MAX)
		return -EMSGSIZE;
	if (PMPI_Allgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE,
			   S.boot) != MPI_SUCCESS)
		return -EIO;
	return 0;
}

/* Every rank says whether it is fine; all go on only if all are. */
static int all_agree(MPI_Comm comm, int mine)
{
	int all = 0;

	if (PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) !=
	    MPI_SUCCESS)
		return 0;
	return all;
}

/*
 * Pool groups this rank offered to a communicator being agreed on: under
 * MPI_THREAD_MULTIPLE another thread's communicator must not be offered
 * them meanwhile, or both could agree on one group and the second to
 * create it would find it taken on some members only.
 */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t held;

static void release_offered(uint64_t offered)
{
	pthread_mutex_lock(&held_lock);
	held &= ~offered;
	pthread_mutex_unlock(&held_lock);
}

/*
 * The members agree on the new communicator's id and pool group
 * (libjob/mpi_map.h) and on whether all can map it (mine); 0 when not.
 * *offered: the groups this rank held for it, released by the caller
 * once the communicator is created (or not). Under MPI_THREAD_MULTIPLE,
 * rounds again while threads' communicators contend for groups.
 */

static int agree(MPI_Comm comm, int mine, int sibling,
		 ibmc_comm_attr_t *attr, uint64_t *offered)
{
	uint64_t v[IBMC__AGREE_LEN], all[IBMC__AGREE_LEN];
	unsigned int seed;
	int me = 0, round, contended, ok;

	PMPI_Comm_rank(comm, &me);
	seed = (unsigned int)S.rank * 2654435761u ^ (unsigned int)me;
	for (round = 0;; round++) {
		/* (what is free, read under the lock: a group another
		 * thread held stays held until its communicator has
		 * taken it) */
		pthread_mutex_lock(&held_lock);
		contended = ibmc__mpi_agree_offer(S.ctx, mine, me, S.rank,
						  &S.drawn, all, round, &held,
						  v);
		*offered = v[1];
		pthread_mutex_unlock(&held_lock);
		if (PMPI_Allreduce(v, all, IBMC__AGREE_LEN, MPI_UINT64_T,
				   MPI_BAND, comm) != MPI_SUCCESS)
			return 0;
		ok = ibmc__mpi_agree_attr(all, 1, sibling, attr);
		/* (threads' communicators contending for groups: again,
		 * mpi_map.h) */
		if (!ibmc__mpi_agree_may_retry(ok, all, S.threads, round) ||
		    all_agree(comm, !contended))
			return ok;
		release_offered(*offered);
		*offered = 0;
		ibmc__mpi_back_off(&seed, round);
	}
}

/*
 * Gives an intracommunicator its ibmc communicator. Collective over comm
 * (every member calls it from the same MPI call): the members agree on its
 * id and pool group first, then an allreduce makes sure all members
 * succeeded before any uses it, otherwise none does. sibling: its place
 * among disjoint communicators made by the same call
 * (ibmc__mpi_agree_attr).
 */
static void map_comm_sibling(MPI_Comm comm, int sibling)
{
	ibmc_comm_t *ic = NULL;
	ibmc_comm_attr_t attr;
	MPI_Group g = MPI_GROUP_NULL;
	int inter = 0, n = 0, i, ok = 0, *mine = NULL, *world = NULL;
	uint64_t offered = 0;
	const char *why = NULL;

	if (!S.on || comm == MPI_COMM_NULL)
		return;
	/* (the same answer on every member: no agreement needed) */
	if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
		return;
	if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS)
		return;
	mine = malloc(sizeof(int) * (size_t)n);
	world = malloc(sizeof(int) * (size_t)n);
	if (mine && world && PMPI_Comm_group(comm, &g) == MPI_SUCCESS) {
		for (i = 0; i < n; i++)
			mine[i] = i;
		if (PMPI_Group_translate_ranks(g, n, mine, S.world, world) ==
		    MPI_SUCCESS) {
			for (i = 0; i < n; i++)
				if (world[i] == MPI_UNDEFINED)
					break;
			ok = i == n;
		}
	}
	if (g != MPI_GROUP_NULL)
		PMPI_Group_free(&g);
	free(mine);
	mine = NULL;
	ok = agree(comm, ok, sibling, &attr, &offered);
	if (ok) {
		ok = ibmc_comm_create_attr(S.ctx, world, n, &attr, &ic) == 0;
		if (ok && !live_add(ic)) {
			ibmc_comm_free(ic);
			ic = NULL;
			ok = 0;
		}
	}
	/* (the agreed group, if any, is the communicator's now) */
	release_offered(offered);
	free(world);
	if (!all_agree(comm, ok) ||
	    PMPI_Comm_set_attr(comm, S.keyval, ic) != MPI_SUCCESS) {
		/* (set_attr is local and does not fail on a valid keyval) */
		if (ic)
			comm_release(ic);
		say0("a communicator of %d ranks stays on MPI's collectives: creating its ibmcast communicator failed on some rank",
		     n);
		return;
	}
	COUNT(S.t.comms);
	if (ibmc_comm_mcast_state(ic, &why)) {
		COUNT(S.t.comms_p2p);
		if (S.verbose >= 2)
			say0("communicator of %d ranks without multicast: %s",
			     n, why ? why : "?");
	}
}

static void map_comm(MPI_Comm comm)
{
	map_comm_sibling(comm, 0);
}

/*
 * MPI_Comm_idup's communicator is not usable before its request completes,
 * in a call the shim does not see (MPI_Wait, MPI_Test and their kin): it
 * is mapped at its first mapped collective instead, which every member
 * reaches first, since MPI orders a communicator's collectives alike on
 * all members (Open MPI's component maps late the same way). Until then
 * its handle is listed here; MPI_Comm_free and MPI_Comm_disconnect take it
 * off, because MPI may hand the same handle to its next communicator.
 */
static pthread_mutex_t idup_lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm *idup_pending;
static int nidup, maxidup;

static void idup_add(MPI_Comm comm)
{
	MPI_Comm *p;
	int listed = 0;

	pthread_mutex_lock(&idup_lock);
	if (nidup == maxidup) {
		p = realloc(idup_pending, sizeof(*p) * (size_t)(maxidup + 8));
		if (p) {
			idup_pending = p;
			maxidup += 8;
		}
	}
	if (nidup < maxidup) {
		idup_pending[nidup++] = comm;
		listed = 1;
	}
	pthread_mutex_unlock(&idup_lock);
	if (listed)
		return;
	/* A member that could not list it would run MPI's collective where
	 * the others start mapping it: a mismatch MPI cannot survive. */
	fprintf(stderr, SHIM ": rank %d: out of memory listing an MPI_Comm_idup communicator; aborting (IBMCAST_MPI=0 runs without the shim)\n",
		S.rank);
	PMPI_Abort(MPI_COMM_WORLD, 70);
}

/* 1 when comm was listed (it is not any more). */
static int idup_take(MPI_Comm comm)
{
	int i, found = 0;

	pthread_mutex_lock(&idup_lock);
	for (i = 0; i < nidup && !found; i++)
		if (idup_pending[i] == comm) {
			idup_pending[i] = idup_pending[--nidup];
			found = 1;
		}
	pthread_mutex_unlock(&idup_lock);
	return found;
}

static ibmc_comm_t *comm_of(MPI_Comm comm)
{
	void *val = NULL;
	int found = 0;

	if (!S.on || S.finalized || comm == MPI_COMM_NULL)
		return NULL;
	if (PMPI_Comm_get_attr(comm, S.keyval, &val, &found) != MPI_SUCCESS)
		return NULL;
	if (!found && idup_take(comm)) {
		map_comm(comm);
		if (PMPI_Comm_get_attr(comm, S.keyval, &val, &found) !=
		    MPI_SUCCESS)
			return NULL;
	}
	return found ? val : NULL;
}

/*
 * While a mapped collective waits for other ranks, MPI's own progress
 * engine must keep moving what the program left pending (an MPI_Isend the
 * rank it waits for is blocked receiving): a probe on the shim's own
 * communicator, which nobody sends on, moves it and matches nothing.
 */
static void mpi_progress(void *arg)
{
	int flag;

	(void)arg;
	PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, S.boot, &flag,
		    MPI_STATUS_IGNORE);
}

/* After PMPI_Init*: the context, or a plain MPI program with one line
 * saying why. */
static void shim_start(void)
{
	ibmc_bootstrap_t bs = { .allgather = boot_allgather };
	const char *state = getenv("IBMCAST_STATE");
	const char *reason = getenv("IBMCAST_REASON");
	int rc, ok;

	PMPI_Comm_rank(MPI_COMM_WORLD, &S.rank);
	if (env_int("IBMCAST_MPI", 1) == 0)
		return;		/* pure pass-through: not one extra call */
	S.verbose = env_int("IBMCAST_MPI_VERBOSE", 0);
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &S.boot) != MPI_SUCCESS) {
		say0("cannot duplicate MPI_COMM_WORLD; MPI's own collectives are used");
		S.boot = MPI_COMM_NULL;
		return;
	}
	PMPI_Comm_size(MPI_COMM_WORLD, &bs.size);
	bs.rank = S.rank;
	ok = PMPI_Comm_group(MPI_COMM_WORLD, &S.world) == MPI_SUCCESS &&
	     PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, attr_delete,
				     &S.keyval, NULL) == MPI_SUCCESS;
	/*
	 * Without a ready pool libibmcast could only do what MPI already
	 * does (point-to-point trees): stay out of the way. ibmc_init is
	 * collective, so all ranks decide together.
	 */
	if (!all_agree(S.boot, ok && state && !strcmp(state, "ready"))) {
		say0("IBMCAST_STATE is %s%s%s: MPI's own collectives are used",
		     state ? state : "not set (job without --ibmcast)",
		     reason ? ": " : "", reason ? reason : "");
		return;
	}
	rc = ibmc_init(&bs, &S.ctx);
	ok = rc == 0;
	if (!all_agree(S.boot, ok)) {
		if (S.ctx)
			ibmc_finalize(S.ctx);
		S.ctx = NULL;
		say0("libibmcast did not start (%s); MPI's own collectives are used",
		     ok ? "it failed on another rank" : ibmc_strerror(rc));
		return;
	}
	S.on = 1;
	ibmc_set_wait_hook(S.ctx, mpi_progress, NULL);
	map_comm(MPI_COMM_WORLD);
	if (S.verbose)
		say0("libibmcast %s up on %d ranks; MPI_Bcast, MPI_Barrier, MPI_Allgather and MPI_Allreduce go over ibmcast",
		     IBMC_VERSION_STRING, bs.size);
}

static int shim_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);

	if (rc == MPI_SUCCESS)
		shim_start();
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Init, shim_Init)

static int shim_Init_thread(int *argc, char ***argv, int required,
			    int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);

	S.threads = rc == MPI_SUCCESS && *provided == MPI_THREAD_MULTIPLE;

	/* (every thread level is mapped alike: the shim's shared state is
	 * locked or counted atomically, and libibmcast takes different
	 * communicators from different threads at once) */
	if (rc == MPI_SUCCESS)
		shim_start();
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Init_thread, shim_Init_thread)

static int shim_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_dup(comm, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Comm_dup, shim_Comm_dup)

static int shim_Comm_dup_with_info(MPI_Comm comm, MPI_Info info,
				   MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Comm_dup_with_info, shim_Comm_dup_with_info)

static int shim_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_split(comm, color, key, newcomm);

	/* (a rank given MPI_COMM_NULL, color MPI_UNDEFINED, maps nothing) */
	if (rc == MPI_SUCCESS)
		map_comm_sibling(*newcomm, color >= 0 ? color : 0);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Comm_split, shim_Comm_split)

static int shim_Comm_split_type(MPI_Comm comm, int type, int key,
				MPI_Info info, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_split_type(comm, type, key, info, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Comm_split_type, shim_Comm_split_type)

static int shim_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_create(comm, group, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Comm_create, shim_Comm_create)

static int shim_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
				  MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Comm_create_group, shim_Comm_create_group)

/*
 * Topologies and merged intercommunicators: each call is collective over
 * the old communicator and every member of the new one returns from it,
 * so the new one is mapped like a split's. (MPI_Comm_idup's communicator
 * is not usable before its request completes, in another call: it is
 * mapped at its first collective, comm_of().)
 */
static int shim_Cart_create(MPI_Comm comm, int ndims, const int dims[],
			    const int periods[], int reorder,
			    MPI_Comm *newcomm)
{
	int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder,
				  newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Cart_create, shim_Cart_create)

static int shim_Cart_sub(MPI_Comm comm, const int remain_dims[],
			 MPI_Comm *newcomm)
{
	int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Cart_sub, shim_Cart_sub)

static int shim_Graph_create(MPI_Comm comm, int nnodes, const int indx[],
			     const int edges[], int reorder,
			     MPI_Comm *newcomm)
{
	int rc = PMPI_Graph_create(comm, nnodes, indx, edges, reorder,
				   newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Graph_create, shim_Graph_create)

static int shim_Dist_graph_create_adjacent(MPI_Comm comm, int indegree,
					   const int sources[],
					   const int sourceweights[],
					   int outdegree,
					   const int destinations[],
					   const int destweights[],
					   MPI_Info info, int reorder,
					   MPI_Comm *newcomm)
{
	int rc = PMPI_Dist_graph_create_adjacent(comm, indegree, sources,
						 sourceweights, outdegree,
						 destinations, destweights,
						 info, reorder, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Dist_graph_create_adjacent,
		shim_Dist_graph_create_adjacent)

static int shim_Dist_graph_create(MPI_Comm comm, int n,
				  const int sources[], const int degrees[],
				  const int destinations[],
				  const int weights[], MPI_Info info,
				  int reorder, MPI_Comm *newcomm)
{
	int rc = PMPI_Dist_graph_create(comm, n, sources, degrees,
					destinations, weights, info, reorder,
					newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Dist_graph_create, shim_Dist_graph_create)

static int shim_Intercomm_merge(MPI_Comm intercomm, int high,
				MPI_Comm *newcomm)
{
	int rc = PMPI_Intercomm_merge(intercomm, high, newcomm);

	if (rc == MPI_SUCCESS)
		map_comm(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Intercomm_merge, shim_Intercomm_merge)

/* The attribute's delete callback frees the ibmc communicator when MPI
 * frees the communicator; the wrappers only forget an idup'd one never
 * mapped. */
static int shim_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm,
			  MPI_Request *request)
{
	int rc = PMPI_Comm_idup(comm, newcomm, request);

	if (rc == MPI_SUCCESS && S.on && *newcomm != MPI_COMM_NULL)
		idup_add(*newcomm);
	return rc;
}
IBMC_SHIM_ENTRY(MPI_Comm_idup, shim_Comm_idup)

static int shim_Comm_free(MPI_Comm *comm)
{
	if (comm)
		idup_take(*comm);
	return PMPI_Comm_free(comm);
}
IBMC_SHIM_ENTRY(MPI_Comm_free, shim_Comm_free)

static int shim_Comm_disconnect(MPI_Comm *comm)
{
	if (comm)
		idup_take(*comm);
	return PMPI_Comm_disconnect(comm);
}
IBMC_SHIM_ENTRY(MPI_Comm_disconnect, shim_Comm_disconnect)

static void count_algo(const char *algo)
{
	COUNT(S.t.shim);
	if (ibmc__mpi_algo_mcast(algo))
		COUNT(S.t.mcast);
	else if (!strcmp(algo, "binomial"))
		COUNT(S.t.binomial);
	else if (!strcmp(algo, "postal"))
		COUNT(S.t.postal);
	else
		COUNT(S.t.other);
}

/* Derived types nest no deeper than this before in_order gives up (and
 * the data is packed, which is always right). */
#define ORDER_DEPTH 8

/*
 * Whether type's type map lists its bytes in memory order. Having no
 * holes is not enough: an indexed type with its blocks in reverse, or a
 * vector of negative stride, covers its bytes without a gap but in
 * another order, and MPI moves data in type-map order (the type
 * signature), which is what a rank with plain MPI_INT receives. Only
 * what is in order by construction counts: predefined types, and dups,
 * contiguous runs and resizings of types in order whose elements do not
 * step back; anything else is packed.
 */
static int in_order(MPI_Datatype type, int depth)
{
	int ni, na, nd, comb, ints[1], ok = 0;
	MPI_Aint aints[2], xlb, extent, tlb, textent;
	MPI_Datatype inner;

	if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &comb) !=
	    MPI_SUCCESS)
		return 0;
	if (comb == MPI_COMBINER_NAMED)
		return 1;
	if (depth >= ORDER_DEPTH || nd != 1 || ni > 1 || na > 2 ||
	    (comb != MPI_COMBINER_DUP && comb != MPI_COMBINER_CONTIGUOUS &&
	     comb != MPI_COMBINER_RESIZED) ||
	    PMPI_Type_get_contents(type, ni, na, nd, ints, aints, &inner) !=
		    MPI_SUCCESS)
		return 0;
	/* (a contiguous run steps forward by the inner type's extent: in
	 * order if that is at least the inner type's true extent) */
	ok = in_order(inner, depth + 1) &&
	     (comb != MPI_COMBINER_CONTIGUOUS || ints[0] <= 1 ||
	      (PMPI_Type_get_extent(inner, &xlb, &extent) == MPI_SUCCESS &&
	       PMPI_Type_get_true_extent(inner, &tlb, &textent) ==
		       MPI_SUCCESS &&
	       extent > 0 && extent >= textent));
	/* get_contents hands out a new handle for a derived inner type */
	if (PMPI_Type_get_envelope(inner, &ni, &na, &nd, &comb) ==
		    MPI_SUCCESS &&
	    comb != MPI_COMBINER_NAMED)
		PMPI_Type_free(&inner);
	return ok;
}

/*
 * The bytes of count elements of type are contiguous from buf + true_lb,
 * in type-map order, when the type has no holes, lists its bytes in
 * memory order, and its elements follow each other.
 */
static int contiguous(MPI_Datatype type, int count, MPI_Aint *lb)
{
	MPI_Aint tlb, textent, xlb, extent;
	int size;

	if (PMPI_Type_size(type, &size) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS ||
	    PMPI_Type_get_extent(type, &xlb, &extent) != MPI_SUCCESS)
		return 0;
	*lb = tlb;
	return (MPI_Aint)size == textent &&
	       (count <= 1 || extent == textent) && in_order(type, 0);
}

/*
 * Packs (dir 1) count elements of type at buf into the len bytes at tmp,
 * or unpacks (dir 0) them, by this rank's own type map; 0 or -EPROTO
 * (this MPI's pack has a header, or failed). MPICH's pack refuses a null
 * buffer, which MPI_BOTTOM is: data at absolute addresses is described
 * to it as one element of a struct type placed relative to tmp instead.
 */
static int convert(int dir, void *buf, int count, MPI_Datatype type,
		   void *tmp, size_t len, MPI_Comm comm)
{
	MPI_Datatype shifted = MPI_DATATYPE_NULL;
	MPI_Aint base;
	int pos = 0, rc;

	if (buf == MPI_BOTTOM && count > 0) {
		if (PMPI_Get_address(tmp, &base) != MPI_SUCCESS)
			return -EPROTO;
		base = -base;
		if (PMPI_Type_create_struct(1, &count, &base, &type,
					    &shifted) != MPI_SUCCESS ||
		    PMPI_Type_commit(&shifted) != MPI_SUCCESS) {
			if (shifted != MPI_DATATYPE_NULL)
				PMPI_Type_free(&shifted);
			return -EPROTO;
		}
		buf = tmp;
		count = 1;
		type = shifted;
	}
	if (dir)
		rc = PMPI_Pack(buf, count, type, tmp, (int)len, &pos, comm);
	else
		rc = PMPI_Unpack(tmp, (int)len, &pos, buf, count, type, comm);
	if (shifted != MPI_DATATYPE_NULL)
		PMPI_Type_free(&shifted);
	return rc == MPI_SUCCESS && (size_t)pos == len ? 0 : -EPROTO;
}

/*
 * Members passed lengths that disagree, which libibmcast saw (or this
 * rank's own send and receive sizes differ): an erroneous program, which
 * MPI reports as MPI_ERR_TRUNCATE through the communicator's error
 * handler, so a program with MPI_ERRORS_RETURN goes on as it would on
 * MPI's own collectives. Nothing is left for MPI's collective to redo:
 * every member called this one, and those that saw no error have all
 * their data.
 */
static int mismatch(MPI_Comm comm, const char *what)
{
	if (S.verbose >= 2)
		say0("%s: the members' lengths disagree: MPI_ERR_TRUNCATE",
		     what);
	PMPI_Comm_call_errhandler(comm, MPI_ERR_TRUNCATE);
	return MPI_ERR_TRUNCATE;
}

/*
 * A member of comm died (libibmcast found it answering no liveness probe
 * within IBMCAST_DEAD_MS and named it in its log, ibmcast(7)): nothing on
 * comm can complete any more, on any member, and every survivor gets this
 * same error, so it goes to the communicator's error handler as MPI's
 * process failure (ULFM's MPIX_ERR_PROC_FAILED where MPICH has it):
 * MPI_ERRORS_ARE_FATAL ends the job, and with MPI_ERRORS_RETURN the
 * program goes on, every later collective on comm failing the same way at
 * once. 0 for any other failure.
 */
static int proc_failed(MPI_Comm comm, const char *what, int rc)
{
	if (rc != -ESRCH)
		return 0;
	fprintf(stderr,
		SHIM ": rank %d: %s: %s; reported through the communicator's error handler\n",
		S.rank, what, ibmc_strerror(rc));
	PMPI_Comm_call_errhandler(comm, IBMC__MPI_ERR_PROC_FAILED);
	return IBMC__MPI_ERR_PROC_FAILED;
}

/*
 * An allreduce or allgather that failed because its members disagree
 * (lengths: -EMSGSIZE; operation or datatype: -EINVAL; the shim checked
 * this rank's own arguments before): every member fails alike
 * (ibmc_allreduce(3)), so the error goes to the error handler as MPI's
 * own collective would report an argument error, MPI_ERR_TRUNCATE or
 * MPI_ERR_ARG; as does a dead member (proc_failed). 0 for any other
 * failure.
 */
static int disagreement(MPI_Comm comm, const char *what, int rc)
{
	if (rc == -EMSGSIZE)
		return mismatch(comm, what);
	if (rc == -ESRCH)
		return proc_failed(comm, what, rc);
	if (rc != -EINVAL)
		return 0;
	if (S.verbose >= 2)
		say0("%s: the members' operations or datatypes disagree: MPI_ERR_ARG",
		     what);
	PMPI_Comm_call_errhandler(comm, MPI_ERR_ARG);
	return MPI_ERR_ARG;
}

static void bcast_failed(MPI_Comm comm, int rank, int root, size_t len,
			 int rc)
{
	fprintf(stderr,
		SHIM ": rank %d: MPI_Bcast of %zu bytes from root %d over ibmcast failed: %s. Other ranks may already have completed it, so it cannot be redone with MPI's broadcast; aborting (IBMCAST_MPI=0 runs without the shim)\n",
		S.rank, len, root, ibmc_strerror(rc));
	PMPI_Abort(comm, 70);
}

/*
 * Every member of a mapped communicator takes this path for every
 * broadcast, whatever datatype it passes (MPI lets ranks use different
 * datatypes with one type signature): contiguous data moves in place,
 * anything else is packed first. The byte count is the signature's size,
 * equal on all members, so they all decide alike. Bcasts past 2 GiB go to
 * PMPI_Bcast, again alike on all members.
 */
static int shim_Bcast(void *buf, int count, MPI_Datatype type, int root,
		      MPI_Comm comm)
{
	ibmc_comm_t *ic = comm_of(comm);
	MPI_Aint lb = 0;
	size_t len;
	void *tmp = NULL;
	int size, n, me, rc;

	if (!ic || count < 0 || PMPI_Type_size(type, &size) != MPI_SUCCESS ||
	    PMPI_Comm_size(comm, &n) != MPI_SUCCESS || root < 0 ||
	    root >= n || (uint64_t)count * (uint64_t)size > INT_MAX)
		goto pass;
	len = (size_t)count * (size_t)size;
	PMPI_Comm_rank(comm, &me);
	if (contiguous(type, count, &lb)) {
		rc = ibmc_bcast(ic, (char *)buf + lb, len, root);
	} else {
		tmp = malloc(len ? len : 1);
		if (!tmp) {
			rc = -ENOMEM;
			goto fail;
		}
		if (me == root &&
		    (rc = convert(1, buf, count, type, tmp, len, comm)))
			goto fail;
		rc = ibmc_bcast(ic, tmp, len, root);
		if (!rc && me != root)
			rc = convert(0, buf, count, type, tmp, len, comm);
		COUNT(S.t.packed);
	}
	if (rc)
		goto fail;
	free(tmp);
	count_algo(ibmc_comm_last_bcast_algo(ic));
	if (S.verbose >= 2)
		say0("MPI_Bcast %zu bytes root %d on %d ranks: %s", len, root,
		     n, ibmc_comm_last_bcast_algo(ic));
	return MPI_SUCCESS;
fail:
	free(tmp);
	if (rc == -EMSGSIZE)
		return mismatch(comm, "MPI_Bcast");
	if (rc == -ESRCH)
		return proc_failed(comm, "MPI_Bcast", rc);
	bcast_failed(comm, me, root, len, rc);
	return MPI_ERR_OTHER;
pass:
	if (S.on) {
		COUNT(S.t.passthrough);
		if (S.verbose >= 2)
			say0("MPI_Bcast root %d: MPI's own broadcast", root);
	}
	return PMPI_Bcast(buf, count, type, root, comm);
}
IBMC_SHIM_ENTRY(MPI_Bcast, shim_Bcast)

/*
 * A barrier that failed on this rank may have released the others, so
 * PMPI_Barrier cannot redo it (they would not call it again): as for a
 * broadcast, abort rather than return with the barrier not kept.
 */
static void barrier_failed(MPI_Comm comm, int n, int rc)
{
	fprintf(stderr,
		SHIM ": rank %d: MPI_Barrier on %d ranks over ibmcast failed: %s. Other ranks may already have left it, so it cannot be redone with MPI's barrier; aborting (IBMCAST_MPI=0 runs without the shim)\n",
		S.rank, n, ibmc_strerror(rc));
	PMPI_Abort(comm, 70);
}

/*
 * Every member of a mapped communicator takes this path for every barrier,
 * so all members run the same algorithm (ibmc_barrier requires it; "auto"
 * decides on rank 0's measurement, shared with the others).
 * Intercommunicators are never mapped and go to PMPI_Barrier, whose
 * two-group semantics ibmc_barrier does not have.
 */
static int shim_Barrier(MPI_Comm comm)
{
	ibmc_comm_t *ic = comm_of(comm);
	const char *algo;
	int n = 0, rc;

	if (!ic)
		goto pass;
	rc = ibmc_barrier(ic);
	if (rc == -ESRCH)
		return proc_failed(comm, "MPI_Barrier", rc);
	if (rc) {
		PMPI_Comm_size(comm, &n);
		barrier_failed(comm, n, rc);
		return MPI_ERR_OTHER;
	}
	/* (named with its n when it has one: "nway:3") */
	algo = ibmc_comm_last_algo(ic, "barrier");
	if (ibmc__mpi_algo_mcast(algo))
		COUNT(S.t.bar_mcast);
	else if (!strncmp(algo, "nway", 4) && (!algo[4] || algo[4] == ':'))
		COUNT(S.t.bar_nway);
	else
		COUNT(S.t.bar_other);
	if (S.verbose >= 2) {
		PMPI_Comm_size(comm, &n);
		say0("MPI_Barrier on %d ranks: %s", n, algo);
	}
	return MPI_SUCCESS;
pass:
	if (S.on) {
		COUNT(S.t.bar_passthrough);
		if (S.verbose >= 2)
			say0("MPI_Barrier: MPI's own barrier");
	}
	return PMPI_Barrier(comm);
}
IBMC_SHIM_ENTRY(MPI_Barrier, shim_Barrier)

/* A call of coll over libibmcast, by the algorithm it used. */
static void count_coll(struct ctally *t, ibmc_comm_t *ic, const char *coll,
		       int packed)
{
	if (ibmc__mpi_algo_mcast(ibmc_comm_last_algo(ic, coll)))
		COUNT(t->mcast);
	else
		COUNT(t->p2p);
	if (packed)
		COUNT(t->packed);
}

/* A call handed to MPI's own, and why (only while the shim is on). */
static void count_pass(struct ctally *t, const char *what, enum pass why)
{
	if (!S.on)
		return;
	COUNT(t->pass[why]);
	if (S.verbose >= 2)
		say0("%s: MPI's own (%s)", what, pass_why[why]);
}

/*
 * As for a broadcast: a collective that failed on this rank may have
 * completed on others, which would not call MPI's again.
 */
static void coll_failed(const char *what, MPI_Comm comm, size_t len, int rc)
{
	int n = 0;

	PMPI_Comm_size(comm, &n);
	fprintf(stderr,
		SHIM ": rank %d: %s of %zu bytes on %d ranks over ibmcast failed: %s. Other ranks may already have completed it, so it cannot be redone with MPI's; aborting (IBMCAST_MPI=0 runs without the shim)\n",
		S.rank, what, len, n, ibmc_strerror(rc));
	PMPI_Abort(comm, 70);
}

/*
 * The bytes count elements of type at buf may touch, [*lo, *hi), as
 * addresses; 0 when MPI cannot tell.
 */
static int span(const void *buf, int count, MPI_Datatype type,
		MPI_Aint *lo, MPI_Aint *hi)
{
	MPI_Aint base, tlb, textent, xlb, extent;

	if (PMPI_Get_address(buf, &base) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS ||
	    PMPI_Type_get_extent(type, &xlb, &extent) != MPI_SUCCESS)
		return 0;
	*lo = base + tlb + (extent < 0 ? (count - 1) * extent : 0);
	*hi = base + tlb + textent + (extent > 0 ? (count - 1) * extent : 0);
	return 1;
}

/*
 * A send buffer that overlaps the receive buffer (other than by
 * MPI_IN_PLACE) is an erroneous program that MPI itself reports
 * (MPI_ERR_BUFFER): such calls go to MPI's own collective.
 */
static int aliased(const void *sbuf, int scount, MPI_Datatype stype,
		   const void *rbuf, int rcount, MPI_Datatype rtype)
{
	MPI_Aint slo, shi, rlo, rhi;

	return sbuf != MPI_IN_PLACE && scount > 0 && rcount > 0 &&
	       span(sbuf, scount, stype, &slo, &shi) &&
	       span(rbuf, rcount, rtype, &rlo, &rhi) && slo < rhi &&
	       rlo < shi;
}

/*
 * Every member of a mapped communicator takes this path for every
 * allgather whose block (recvcount elements of recvtype) fits: MPI lets
 * members use different datatypes of one type signature, so only the
 * block's byte count, equal on all members, decides. Contiguous data moves
 * in place; a non-contiguous send type is packed into the rank's slot, a
 * non-contiguous receive type gathers into a packed buffer unpacked after.
 * A send size unlike the receive size is an erroneous program: MPI's own
 * allgather reports it.
 */
static int shim_Allgather(const void *sendbuf, int sendcount,
			  MPI_Datatype sendtype, void *recvbuf, int recvcount,
			  MPI_Datatype recvtype, MPI_Comm comm)
{
	ibmc_comm_t *ic = comm_of(comm);
	int inplace = sendbuf == MPI_IN_PLACE, n, me, ssize, rsize, rc, dis;
	int packed = 0;
	MPI_Aint lb, slb, xlb, extent;
	size_t blocklen = 0, total;
	char *dst, *tmp = NULL;
	const void *src;
	enum pass why;

	if (!ic) {
		why = PASS_UNMAPPED;
		goto pass;
	}
	if (recvcount < 0 || PMPI_Type_size(recvtype, &rsize) != MPI_SUCCESS ||
	    PMPI_Type_get_extent(recvtype, &xlb, &extent) != MPI_SUCCESS ||
	    PMPI_Comm_size(comm, &n) != MPI_SUCCESS) {
		why = PASS_ARGS;
		goto pass;
	}
	blocklen = (size_t)recvcount * (size_t)rsize;
	/* (PMPI_Pack counts in int) */
	if ((uint64_t)blocklen * (uint64_t)n > INT_MAX) {
		why = PASS_SIZE;
		goto pass;
	}
	total = blocklen * (size_t)n;
	if (!inplace && (sendcount < 0 ||
			 PMPI_Type_size(sendtype, &ssize) != MPI_SUCCESS)) {
		why = PASS_ARGS;
		goto pass;
	}
	/* (not passed through: the other members are in libibmcast's) */
	if (!inplace && (uint64_t)sendcount * (uint64_t)ssize != blocklen)
		return mismatch(comm, "MPI_Allgather");
	if (blocklen && aliased(sendbuf, sendcount, sendtype, recvbuf,
				recvcount * n, recvtype)) {
		why = PASS_ARGS;
		goto pass;
	}
	PMPI_Comm_rank(comm, &me);
	if (!blocklen) {
		rc = ibmc_allgather(ic, IBMC_IN_PLACE, recvbuf, 0);
	} else if (contiguous(recvtype, recvcount * n, &lb)) {
		dst = (char *)recvbuf + lb;
		src = IBMC_IN_PLACE;
		if (!inplace && contiguous(sendtype, sendcount, &slb)) {
			src = (const char *)sendbuf + slb;
		} else if (!inplace) {
			rc = convert(1, (void *)sendbuf, sendcount, sendtype,
				     dst + (size_t)me * blocklen, blocklen,
				     comm);
			if (rc)
				goto fail;
			packed = 1;
		}
		rc = ibmc_allgather(ic, src, dst, blocklen);
	} else {
		packed = 1;
		tmp = malloc(total);
		if (!tmp) {
			rc = -ENOMEM;
			goto fail;
		}
		rc = inplace ?
			convert(1, (char *)recvbuf + (MPI_Aint)me * recvcount *
					   extent,
				recvcount, recvtype,
				tmp + (size_t)me * blocklen, blocklen, comm) :
			convert(1, (void *)sendbuf, sendcount, sendtype,
				tmp + (size_t)me * blocklen, blocklen, comm);
		if (!rc)
			rc = ibmc_allgather(ic, IBMC_IN_PLACE, tmp, blocklen);
		if (!rc)
			rc = convert(0, recvbuf, recvcount * n, recvtype, tmp,
				     total, comm);
	}
	if (rc)
		goto fail;
	free(tmp);
	count_coll(&S.t.ag, ic, "allgather", packed);
	if (S.verbose >= 2)
		say0("MPI_Allgather %zu bytes a block on %d ranks: %s%s",
		     blocklen, n, ibmc_comm_last_algo(ic, "allgather"),
		     packed ? " (packed)" : "");
	return MPI_SUCCESS;
fail:
	free(tmp);
	if ((dis = disagreement(comm, "MPI_Allgather", rc)))
		return dis;
	coll_failed("MPI_Allgather", comm, blocklen, rc);
	return MPI_ERR_OTHER;
pass:
	count_pass(&S.t.ag, "MPI_Allgather", why);
	return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
			      recvtype, comm);
}
IBMC_SHIM_ENTRY(MPI_Allgather, shim_Allgather)

/* MPI's predefined operations and libibmcast's; -1: user-defined. */
static int map_op(MPI_Op op)
{
#define X(mpi, ibmc) if (op == mpi) return (int)ibmc;
	IBMC__MPI_OPS(X)
#undef X
	return -1;
}

/*
 * The ibmc_dtype_t of a predefined datatype (libjob/mpi_map.h) whose
 * elements follow each other without holes, and its element size; -1 for
 * anything else (derived types, MPI_C_BOOL, complex, Fortran and C++
 * types). *bitwise_only: MPI_BYTE, which MPI reduces with MPI_BAND,
 * MPI_BOR and MPI_BXOR only.
 */
static int map_dtype(MPI_Datatype type, size_t *esize, int *bitwise_only)
{
	static const struct {
		MPI_Datatype mpi;
		int kind, ibmc;
		size_t esize;
	} types[] = {
#define X(mpi, kind, ibmc, esize) { mpi, kind, ibmc, esize },
		IBMC__MPI_DTYPES(X)
#undef X
	};
	MPI_Aint lb, extent, tlb, textent;
	size_t i;
	int size;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].mpi == type)
			break;
	if (i == sizeof(types) / sizeof(types[0]) ||
	    PMPI_Type_size(type, &size) != MPI_SUCCESS ||
	    PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
	    PMPI_Type_get_true_extent(type, &tlb, &textent) != MPI_SUCCESS ||
	    lb != 0 || tlb != 0 || extent <= 0 || size < 0)
		return -1;
	*esize = (size_t)extent;
	*bitwise_only = types[i].kind == IBMC__MK_BYTE;
	return ibmc__mpi_dtype(types[i].kind, types[i].ibmc, types[i].esize,
			       (size_t)size, (size_t)extent);
}

/*
 * MPI requires the same count, datatype and operation on every member, and
 * MPI_IN_PLACE on all or none: every reason to pass through below is the
 * same on every member, so all take libibmcast's path or all MPI's.
 */
static int shim_Allreduce(const void *sendbuf, void *recvbuf, int count,
			  MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
	ibmc_comm_t *ic = comm_of(comm);
	int iop, dt, bitwise_only = 0, rc, n, dis;
	size_t esize = 0;
	enum pass why;

	if (!ic) {
		why = PASS_UNMAPPED;
		goto pass;
	}
	if ((iop = map_op(op)) < 0) {
		why = PASS_OP;
		goto pass;
	}
	if ((dt = map_dtype(type, &esize, &bitwise_only)) < 0) {
		why = PASS_TYPE;
		goto pass;
	}
	if (!ibmc__mpi_op_fits(iop, dt, bitwise_only)) {
		why = PASS_OPTYPE;
		goto pass;
	}
	if (count < 0 ||
	    aliased(sendbuf, count, type, recvbuf, count, type)) {
		why = PASS_ARGS;
		goto pass;
	}
	if ((uint64_t)count * esize > UINT32_MAX) {
		why = PASS_SIZE;
		goto pass;
	}
	rc = ibmc_allreduce(ic, sendbuf == MPI_IN_PLACE ? IBMC_IN_PLACE :
							  sendbuf,
			    recvbuf, (size_t)count, dt, iop);
	if ((dis = disagreement(comm, "MPI_Allreduce", rc)))
		return dis;
	if (rc) {
		coll_failed("MPI_Allreduce", comm, (size_t)count * esize, rc);
		return MPI_ERR_OTHER;
	}
	count_coll(&S.t.ar, ic, "allreduce", 0);
	if (S.verbose >= 2) {
		PMPI_Comm_size(comm, &n);
		say0("MPI_Allreduce %d elements on %d ranks: %s", count, n,
		     ibmc_comm_last_algo(ic, "allreduce"));
	}
	return MPI_SUCCESS;
pass:
	count_pass(&S.t.ar, "MPI_Allreduce", why);
	return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}
IBMC_SHIM_ENTRY(MPI_Allreduce, shim_Allreduce)

/*
 * MPI_Ibcast and MPI_Ibarrier are not wrapped. Their MPI_Request would have
 * to stand for an ibmc request, which moves only inside libibmcast's calls:
 * even MPICH's MPIX_Grequest_start, whose poll function MPI_Test and
 * MPI_Wait call, leaves it still while the rank blocks in any other MPI
 * call, and a correct program (MPI_Ibarrier, then a blocking receive the
 * others send only after their MPI_Wait) would hang. They stay MPI's own,
 * on MPI's channel, which orders them apart from the ibmcast collectives
 * of the same communicator; see libibmcast_mpi(7).
 */

/* "rank 0: N MPI_Allreduce over ibmcast (mcast M, p2p P; K packed), X
 * passed to MPI (A communicator not mapped, ...); allreduces=L" */
static void csummary(const char *what, const struct ctally *t,
		     const char *stat, uint64_t n)
{
	char why[512];
	unsigned long passed = 0;
	int i, len = 0;

	why[0] = 0;
	for (i = 0; i < PASS_MAX; i++) {
		passed += t->pass[i];
		len += snprintf(why + len, sizeof(why) - (size_t)len,
				"%s%lu %s", i ? ", " : "", t->pass[i],
				pass_why[i]);
	}
	say0("rank 0: %lu %s over ibmcast (mcast %lu, p2p %lu; %lu packed), %lu passed to MPI (%s); %s=%llu",
	     t->mcast + t->p2p, what, t->mcast, t->p2p, t->packed, passed,
	     why, stat, (unsigned long long)n);
}

static void summary(void)
{
	ibmc_comm_stats_t *s = &S.t.freed;

	say0("rank 0: %lu MPI_Bcast over ibmcast (mcast %lu, binomial %lu, postal %lu, other %lu; %lu packed), %lu passed to MPI; %lu communicators (%lu without multicast); mcast_bcasts=%llu bcasts=%llu packets_sent=%llu bytes_sent=%llu retransmits=%llu repairs=%llu timeouts=%llu",
	     S.t.shim, S.t.mcast, S.t.binomial, S.t.postal, S.t.other,
	     S.t.packed, S.t.passthrough, S.t.comms, S.t.comms_p2p,
	     (unsigned long long)s->mcast_bcasts,
	     (unsigned long long)s->bcasts,
	     (unsigned long long)s->packets_sent,
	     (unsigned long long)s->bytes_sent,
	     (unsigned long long)s->retransmits,
	     (unsigned long long)s->repairs,
	     (unsigned long long)s->timeouts);
	say0("rank 0: %lu MPI_Barrier over ibmcast (mcast %lu, nway %lu, other %lu), %lu passed to MPI; barriers=%llu pulls=%llu",
	     S.t.bar_mcast + S.t.bar_nway + S.t.bar_other, S.t.bar_mcast,
	     S.t.bar_nway, S.t.bar_other, S.t.bar_passthrough,
	     (unsigned long long)s->barriers, (unsigned long long)s->pulls);
	csummary("MPI_Allgather", &S.t.ag, "allgathers", s->allgathers);
	csummary("MPI_Allreduce", &S.t.ar, "allreduces", s->allreduces);
}

static int shim_Finalize(void)
{
	if (S.on) {
		/* Communicators the program did not free (world's at
		 * least): MPI may never delete their attributes, and their
		 * counters belong in the summary. */
		while (S.nlive)
			comm_release(S.live[S.nlive - 1]);
		free(S.live);
		S.live = NULL;
		ibmc_finalize(S.ctx);
		S.ctx = NULL;
		S.finalized = 1;
		if (S.verbose)
			summary();
	}
	if (S.boot != MPI_COMM_NULL)
		PMPI_Comm_free(&S.boot);
	if (S.world != MPI_GROUP_NULL)
		PMPI_Group_free(&S.world);
	return PMPI_Finalize();
}
IBMC_SHIM_ENTRY(MPI_Finalize, shim_Finalize)
