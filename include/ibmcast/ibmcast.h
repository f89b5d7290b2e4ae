/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibmcast.h - the job library's public API (libibmcast).
 *
 * A process of a job creates one context from the IBMCAST_* variables the
 * Slurm plugin exported (or the simulated fabric's env file) and a bootstrap
 * exchange it provides; communicators then take a multicast group from the
 * job's SM-prepared pool at once: no SA join, no multicast testing, no
 * waiting. Collectives fall back to point-to-point whenever multicast is not
 * usable, so no call fails because of the fabric's multicast state.
 *
 * Conventions: opaque handles, ibmc_ prefix, functions return 0 or -errno.
 * Calls on one communicator are not thread safe (like MPI_THREAD_SERIALIZED);
 * different contexts may be used from different threads. As in MPI, every
 * member calls the collectives of a communicator in the same order,
 * blocking and non-blocking alike.
 *
 * See ibmcast(7), ibmc_init(3), ibmc_comm_create(3), ibmc_bcast(3),
 * ibmc_barrier(3), ibmc_test(3), ibmc_comm_set_algo(3).
 */
#ifndef IBMCAST_IBMCAST_H
#define IBMCAST_IBMCAST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IBMC_VERSION_STRING "0.1.0"

typedef struct ibmc_context ibmc_context_t;
typedef struct ibmc_comm ibmc_comm_t;
typedef struct ibmc_request ibmc_request_t;

/* A progress step that has not finished yet (never returned by the
 * blocking calls). */
#define IBMC_INPROGRESS 1

/*
 * The bootstrap exchange: a collective the caller already has (MPI:
 * PMPI_Allgather over MPI_COMM_WORLD; a plain program under srun:
 * ibmc_bootstrap_pmi2()). allgather() gathers len bytes from every rank into
 * out (size * len bytes, in rank order) and returns 0 or -errno. It is called
 * collectively, only from ibmc_init() and ibmc_comm_create().
 */
typedef struct ibmc_bootstrap {
	int rank;	/* this process, 0 .. size-1 */
	int size;	/* processes in the job */
	int (*allgather)(void *arg, const void *in, void *out, size_t len);
	void *arg;
} ibmc_bootstrap_t;

/*
 * Fills *bs from Slurm's PMI2 (PMI2_Init, KVS put/fence/get). For programs
 * started by srun --mpi=pmi2 without MPI. -ENOSYS when libibmcast was built
 * without libpmi2, -EIO when PMI2 is not reachable. Undo with
 * ibmc_bootstrap_pmi2_fini() after ibmc_finalize().
 */
int ibmc_bootstrap_pmi2(ibmc_bootstrap_t *bs);
void ibmc_bootstrap_pmi2_fini(ibmc_bootstrap_t *bs);

/*
 * Fills *bs from ibmcast-run(1), the launcher for programs on the simulated
 * fabric without Slurm: IBMCAST_BOOTSTRAP (unix:/path of its rendezvous
 * socket), IBMCAST_RANK, IBMCAST_SIZE. -ENOENT when they are not set.
 */
int ibmc_bootstrap_sock(ibmc_bootstrap_t *bs);
void ibmc_bootstrap_sock_fini(ibmc_bootstrap_t *bs);

/* The first of sock (IBMCAST_BOOTSTRAP set) and pmi2 (under srun) that
 * applies; -ENOENT when neither does. Undo with ibmc_bootstrap_fini(). */
int ibmc_bootstrap_default(ibmc_bootstrap_t *bs);
void ibmc_bootstrap_fini(ibmc_bootstrap_t *bs);

/*
 * Creates the job's context: reads IBMCAST_* (see ibmcast(7)), opens the
 * transport (IBMCAST_TRANSPORT: sim, verbs, or loopback; default: sim when
 * IBMCAST_SIM_DATAPLANE is set, else verbs) and exchanges endpoint addresses
 * through bs. Collective over the bootstrap's ranks. A job without usable
 * multicast (state not "ready", no groups) still gets a context; its
 * communicators use point-to-point (see ibmc_comm_mcast_state()).
 */
int ibmc_init(const ibmc_bootstrap_t *bs, ibmc_context_t **ctx);
int ibmc_finalize(ibmc_context_t *ctx);

/* This process's rank and the job size, as the bootstrap gave them. */
int ibmc_context_rank(const ibmc_context_t *ctx);
int ibmc_context_size(const ibmc_context_t *ctx);

/*
 * hook(arg) is called, in the waiting thread and outside libibmcast's
 * lock, about every millisecond while a blocking call of ctx waits for
 * other ranks (NULL: none). An MPI library gives it its progress engine:
 * an operation it left pending (an MPI_Isend another rank must receive
 * before it can enter the collective) must keep moving meanwhile, as
 * MPI's progress rule requires. 0 or -EINVAL. See ibmc_set_wait_hook(3).
 */
typedef void (*ibmc_wait_hook_t)(void *arg);
int ibmc_set_wait_hook(ibmc_context_t *ctx, ibmc_wait_hook_t hook,
		       void *arg);

/*
 * Creates a communicator over the context's ranks listed in ranks[0..n-1]
 * (all ranks, in order, when ranks is NULL). Collective over those ranks
 * (the others do not call it). In mode sm (IBMCAST_COMM_MODE, the default)
 * it takes the next free group of the job's pool, the same one on every
 * member since all create communicators in the same order, and never joins,
 * tests or waits for the fabric; the comparison modes basic, lazy and pool
 * make groups of their own (see ibmc_comm_create(3)).
 */
int ibmc_comm_create(ibmc_context_t *ctx, const int *ranks, int n,
		     ibmc_comm_t **comm);

/*
 * As ibmc_comm_create(), with options: attr->mode (NULL: the context's
 * IBMCAST_COMM_MODE) names how the communicator gets its multicast group:
 * "sm", "pool", "lazy", "basic" or "p2p" (see ibmc_comm_create(3) and
 * ibmcast(7)). Every member must pass the same mode. -EINVAL for an
 * unknown mode.
 * attr->id (0: derived from the members and the creation order) is the
 * communicator's id, which a caller that can talk to the members (an MPI
 * library) agrees on among them, so that creation order no longer
 * matters. attr->group (mode sm): IBMC_GROUP_NEXT takes this rank's next
 * free pool group, k > 0 pool group k - 1 (one the members agreed is free
 * on all of them, see ibmc_pool_free()), IBMC_GROUP_NONE none. Every
 * member must pass the same values. All fields 0: as ibmc_comm_create().
 */
typedef struct ibmc_comm_attr {
	const char *mode;
	uint32_t id;
	int group;
} ibmc_comm_attr_t;
#define IBMC_GROUP_NEXT 0
#define IBMC_GROUP_NONE (-1)

/*
 * The pool groups free on this rank, as a bit mask (bit g: group g of
 * IBMCAST_GROUPS, the first 64); 0 when the context has no multicast.
 * 0 or -EINVAL.
 */
int ibmc_pool_free(ibmc_context_t *ctx, uint64_t *mask);
int ibmc_comm_create_attr(ibmc_context_t *ctx, const int *ranks, int n,
			  const ibmc_comm_attr_t *attr, ibmc_comm_t **comm);
int ibmc_comm_free(ibmc_comm_t *comm);
int ibmc_comm_rank(const ibmc_comm_t *comm);
int ibmc_comm_size(const ibmc_comm_t *comm);

/*
 * Whether the communicator may multicast: 0 when it holds a ready group,
 * else -errno with *why (may be NULL) set to an explanation (valid until
 * the communicator is freed)
 * ("job state is unavailable: ...", "pool exhausted", "transport has no
 * multicast", ...).
 */
int ibmc_comm_mcast_state(const ibmc_comm_t *comm, const char **why);

/*
 * Broadcast len bytes (0 .. 2^32-1) from root's buf to every member's buf.
 * Blocking. Algorithm: IBMCAST_BCAST_ALGO or ibmc_comm_set_bcast_algo();
 * "auto" picks multicast when the communicator may multicast and the size is
 * worth it, else a point-to-point tree. See ibmc_bcast(3) for when the root's
 * call returns and what that guarantees.
 */
int ibmc_bcast(ibmc_comm_t *comm, void *buf, size_t len, int root);

/* Non-blocking broadcast: starts it and returns a request to complete
 * with ibmc_test() or ibmc_wait(); buf must stay untouched until then. */
int ibmc_ibcast(ibmc_comm_t *comm, void *buf, size_t len, int root,
		ibmc_request_t **req);

/*
 * Barrier: returns only once every member of comm has entered it.
 * Algorithm: IBMCAST_BARRIER_ALGO or ibmc_comm_set_algo(): "nway" (n-way
 * dissemination, n measured at communicator creation, or "nway:N" for a
 * fixed n in 1..8), "mcast" (fan-in up a tree, release by one multicast),
 * "auto". See ibmc_barrier(3).
 */
int ibmc_barrier(ibmc_comm_t *comm);
int ibmc_ibarrier(ibmc_comm_t *comm, ibmc_request_t **req);

/*
 * Completing a non-blocking collective. ibmc_test() moves every collective
 * of the context on without blocking and sets *done; when *done is 1 the
 * request is freed, *req set to NULL and the collective's result returned
 * (0 or -errno). ibmc_wait() blocks until then. Collectives complete
 * whatever order they are tested or waited for in.
 */
int ibmc_test(ibmc_request_t **req, int *done);
int ibmc_wait(ibmc_request_t **req);

/*
 * Algorithm selection per collective ("bcast", "barrier") by name, as in
 * IBMCAST_<COLL>_ALGO (see ibmcast(7)): "auto" or an algorithm of that
 * collective, some with a parameter ("nway:4"). -EINVAL for an unknown
 * collective or name. Every member must select the same algorithm for
 * collectives whose members do not learn it from the root (barrier).
 */
int ibmc_comm_set_algo(ibmc_comm_t *comm, const char *coll,
		       const char *name);
/* The algorithm the last call of coll on comm used ("mcast", "nway", ...),
 * or "none". */
const char *ibmc_comm_last_algo(const ibmc_comm_t *comm, const char *coll);

/* Datatypes and operations of ibmc_allreduce() (MPI's predefined ones on
 * the C basic types; the *_INT pairs are MPI's MINLOC/MAXLOC types, laid
 * out as the C structs { T value; int index; }). */
typedef enum ibmc_dtype {
	IBMC_INT8, IBMC_UINT8, IBMC_INT16, IBMC_UINT16,
	IBMC_INT32, IBMC_UINT32, IBMC_INT64, IBMC_UINT64,
	IBMC_FLOAT, IBMC_DOUBLE, IBMC_LONG_DOUBLE,
	IBMC_FLOAT_INT, IBMC_DOUBLE_INT, IBMC_LONG_INT, IBMC_2INT,
	IBMC_SHORT_INT, IBMC_LONG_DOUBLE_INT,
} ibmc_dtype_t;

typedef enum ibmc_op {
	IBMC_SUM, IBMC_PROD, IBMC_MIN, IBMC_MAX,
	IBMC_LAND, IBMC_LOR, IBMC_LXOR, IBMC_BAND, IBMC_BOR, IBMC_BXOR,
	IBMC_MINLOC, IBMC_MAXLOC,
} ibmc_op_t;

/* As sendbuf: the data is already in place in recvbuf. */
#define IBMC_IN_PLACE ((const void *)1)

/*
 * Allgather: every member's blocklen bytes from sendbuf (or, with
 * IBMC_IN_PLACE, from its own slot of recvbuf) to every member's recvbuf,
 * in communicator rank order (size * blocklen bytes). Algorithm:
 * IBMCAST_ALLGATHER_ALGO or ibmc_comm_set_algo(comm, "allgather", ...):
 * "ring", "recursive_doubling", "mcast", "auto". See ibmc_allgather(3).
 */
int ibmc_allgather(ibmc_comm_t *comm, const void *sendbuf, void *recvbuf,
		   size_t blocklen);
int ibmc_iallgather(ibmc_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t blocklen, ibmc_request_t **req);

/*
 * Allreduce: recvbuf = the reduction with op of every member's count
 * elements of dtype (sendbuf, or recvbuf with IBMC_IN_PLACE), the same
 * bits on every member. Algorithm: IBMCAST_ALLREDUCE_ALGO or
 * ibmc_comm_set_algo(comm, "allreduce", ...): "recursive_doubling",
 * "mcast" (reduce up a tree, result by multicast), "auto". See
 * ibmc_allreduce(3).
 */
int ibmc_allreduce(ibmc_comm_t *comm, const void *sendbuf, void *recvbuf,
		   size_t count, ibmc_dtype_t dtype, ibmc_op_t op);
int ibmc_iallreduce(ibmc_comm_t *comm, const void *sendbuf, void *recvbuf,
		    size_t count, ibmc_dtype_t dtype, ibmc_op_t op,
		    ibmc_request_t **req);

/* 0 when op applies to dtype, -EINVAL else, by MPI's rules: logical and
 * bitwise operations on integers only, MINLOC/MAXLOC on the pair types
 * only, the others on every type but the pairs. ibmc_allreduce() refuses
 * what this refuses; an MPI integration asks first to pass the call on. */
int ibmc_op_valid(ibmc_op_t op, ibmc_dtype_t dtype);

/* Broadcast shorthands: ibmc_comm_set_algo(comm, "bcast", name) with
 * "auto", "mcast", "binomial", "postal", "shm_mcast"; the last broadcast's
 * algorithm. */
int ibmc_comm_set_bcast_algo(ibmc_comm_t *comm, const char *name);
const char *ibmc_comm_last_bcast_algo(const ibmc_comm_t *comm);

/* Counters of one communicator (monotonic since creation). */
typedef struct ibmc_comm_stats {
	uint64_t bcasts;		/* completed broadcasts */
	uint64_t mcast_bcasts;		/* ... of which over multicast */
	uint64_t barriers;		/* completed barriers */
	uint64_t allgathers;		/* completed allgathers */
	uint64_t allreduces;		/* completed allreduces */
	uint64_t packets_sent;		/* data + control, all kinds */
	uint64_t bytes_sent;		/* payload bytes this rank sent */
	uint64_t retransmits;		/* data fragments sent again */
	uint64_t repairs;		/* fragments an inner node re-sent */
	uint64_t timeouts;		/* ack timers that expired */
	uint64_t duplicates;		/* data fragments received twice */
	uint64_t stale_dropped;		/* packets of another membership
					 * version or a past collective */
	uint64_t pulls;			/* round messages asked for again */
	/* Multicast testing (modes basic, lazy, pool; ibmcast(7)): test
	 * messages the root multicast, or this member acknowledged; and the
	 * microseconds from creation until testing succeeded here (0: it
	 * did not, or there was none). */
	uint64_t mtest_tries;
	uint64_t mtest_us;
	/* ... and, at the root, from creation until every member had
	 * joined the group through the SA and attached (the rest of
	 * mtest_us is the SM's pass and the test messages). */
	uint64_t mtest_join_us;
	/* A communicator that started point-to-point and switched to
	 * multicast later (a group grown for it by the subnet manager, or
	 * lazy testing): microseconds from its creation to the call from
	 * which it multicasts, on this member (0: it did not switch). */
	uint64_t switch_us;
	/* Messages of broadcasts, allgathers and allreduces this member
	 * sent to members on other nodes, whatever their size (seed 002's
	 * count, "a single message per pair of nodes"): a point-to-point
	 * transfer counts once, a multicast once; fragments, acks and
	 * repeats are not messages. */
	uint64_t messages_sent;
	/* Liveness probes this member sent to members it waited for that
	 * had fallen silent (ibmcast(7), IBMCAST_DEAD_MS). */
	uint64_t probes_sent;
} ibmc_comm_stats_t;
int ibmc_comm_get_stats(const ibmc_comm_t *comm, ibmc_comm_stats_t *st);

/* Human text for an ibmc_* return value (static string). */
const char *ibmc_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* IBMCAST_IBMCAST_H */
