/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_ibmcast.h - the Open MPI 4.1 collective component over libibmcast:
 * the component (parameters, the job's one context, the summary) and the
 * per-communicator module (MPI_Bcast, MPI_Barrier, MPI_Allgather,
 * MPI_Allreduce; the rest stays with the modules selected before it). See mca_coll_ibmcast(7).
 */
#ifndef IBMCAST_OMPI_COLL_IBMCAST_H
#define IBMCAST_OMPI_COLL_IBMCAST_H

#include "ompi_config.h"

#include <pthread.h>

#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "ibmcast/ibmcast.h"

#if OMPI_MAJOR_VERSION != 4 || OMPI_MINOR_VERSION != 1
#error "coll/ibmcast is written against Open MPI 4.1's coll framework"
#endif

BEGIN_C_DECLS

#define IBMCAST_COLL "coll_ibmcast"

/* Why a call went to the previous module; one counter each. */
enum ibmcast_pass {
	IBMCAST_PASS_UNMAPPED,	/* communicator has no ibmc communicator */
	IBMCAST_PASS_SIZE,	/* message larger than libibmcast takes */
	IBMCAST_PASS_NONBLOCKING, /* MPI_Ibcast / MPI_Ibarrier */
	IBMCAST_PASS_OP,	/* allreduce: a user-defined operation */
	IBMCAST_PASS_TYPE,	/* allreduce: no ibmc_dtype_t for the type */
	IBMCAST_PASS_OPTYPE,	/* allreduce: op not defined on the type */
	IBMCAST_PASS_MAX
};

/* One collective's counters on this rank. */
struct ibmcast_tally {
	unsigned long mcast;		/* over multicast */
	unsigned long p2p;		/* libibmcast's point-to-point */
	unsigned long packed;		/* ... of a non-contiguous type */
	unsigned long pass[IBMCAST_PASS_MAX];
};

struct ibmcast_module;

/* The component: MCA parameters and the process-wide state. */
struct ibmcast_component {
	mca_coll_base_component_2_0_0_t super;

	int priority;		/* coll_ibmcast_priority */
	bool enable;		/* coll_ibmcast_enable */
	int verbose;		/* coll_ibmcast_verbose, or IBMCAST_MPI_VERBOSE */
	bool threads;		/* MPI_THREAD_MULTIPLE */

	int world_rank;
	/* 0: MPI_COMM_WORLD not seen yet; 1: context up; -1: steps aside
	 * (decided by all ranks together at MPI_COMM_WORLD) */
	int state;
	ibmc_context_t *ctx;
	uint32_t drawn;		/* communicator ids drawn as their rank 0 */

	/* Under MPI_THREAD_MULTIPLE threads create, use and free
	 * communicators at once: lock guards live, freed and held (the
	 * counters are bumped atomically, IBMCAST_COUNT). */
	pthread_mutex_t lock;
	struct ibmcast_module *live;	/* modules holding an ibmc comm */
	ibmc_comm_stats_t freed;	/* stats of released ibmc comms */
	/* Pool groups this rank offered to a communicator still being
	 * agreed on: never offered to another thread's meanwhile, or both
	 * could agree on one group and the second to create it would find
	 * it taken on some members only. */
	uint64_t held;

	struct ibmcast_tally bcast, barrier, allgather, allreduce;
	unsigned long comms, comms_p2p, comms_failed;
};

OMPI_MODULE_DECLSPEC extern struct ibmcast_component
	mca_coll_ibmcast_component;

/* The module of one intracommunicator. */
struct ibmcast_module {
	mca_coll_base_module_t super;

	struct ompi_communicator_t *comm;
	ibmc_comm_t *ic;	/* NULL: every call goes to the previous */
	/* Under MPI_THREAD_MULTIPLE the ibmc communicator is made at the
	 * first blocking collective of the four, not at enable (see
	 * module_enable); until then this is set. */
	bool map_pending;
	struct ibmcast_module *next, *prev;	/* component's live list */

	mca_coll_base_module_bcast_fn_t prev_bcast;
	mca_coll_base_module_t *prev_bcast_module;
	mca_coll_base_module_barrier_fn_t prev_barrier;
	mca_coll_base_module_t *prev_barrier_module;
	mca_coll_base_module_ibcast_fn_t prev_ibcast;
	mca_coll_base_module_t *prev_ibcast_module;
	mca_coll_base_module_ibarrier_fn_t prev_ibarrier;
	mca_coll_base_module_t *prev_ibarrier_module;
	mca_coll_base_module_allgather_fn_t prev_allgather;
	mca_coll_base_module_t *prev_allgather_module;
	mca_coll_base_module_allreduce_fn_t prev_allreduce;
	mca_coll_base_module_t *prev_allreduce_module;
};
OBJ_CLASS_DECLARATION(ibmcast_module_t);
typedef struct ibmcast_module ibmcast_module_t;

/* coll_ibmcast_module.c */
mca_coll_base_module_t *mca_coll_ibmcast_comm_query(
	struct ompi_communicator_t *comm, int *priority);
/* Maps m's communicator now (m->map_pending): collective over it, called
 * by every member from the same blocking collective. */
void mca_coll_ibmcast_map_pending(struct ibmcast_module *m);
/* Frees m's ibmc communicator (keeping its counters); idempotent. */
void mca_coll_ibmcast_release(struct ibmcast_module *m);

/* coll_ibmcast_ops.c: the collectives a module takes */
int mca_coll_ibmcast_bcast(void *buf, int count,
			   struct ompi_datatype_t *dtype, int root,
			   struct ompi_communicator_t *comm,
			   mca_coll_base_module_t *module);
int mca_coll_ibmcast_barrier(struct ompi_communicator_t *comm,
			     mca_coll_base_module_t *module);
int mca_coll_ibmcast_allgather(const void *sbuf, int scount,
			       struct ompi_datatype_t *sdtype, void *rbuf,
			       int rcount, struct ompi_datatype_t *rdtype,
			       struct ompi_communicator_t *comm,
			       mca_coll_base_module_t *module);
int mca_coll_ibmcast_allreduce(const void *sbuf, void *rbuf, int count,
			       struct ompi_datatype_t *dtype,
			       struct ompi_op_t *op,
			       struct ompi_communicator_t *comm,
			       mca_coll_base_module_t *module);
int mca_coll_ibmcast_ibcast(void *buf, int count,
			    struct ompi_datatype_t *dtype, int root,
			    struct ompi_communicator_t *comm,
			    ompi_request_t **req,
			    mca_coll_base_module_t *module);
int mca_coll_ibmcast_ibarrier(struct ompi_communicator_t *comm,
			      ompi_request_t **req,
			      mca_coll_base_module_t *module);

/* coll_ibmcast_component.c: messages. say0: world rank 0 only. */
void mca_coll_ibmcast_say0(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
void mca_coll_ibmcast_say(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#define IBMCAST_COUNT(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)

END_C_DECLS
#endif /* IBMCAST_OMPI_COLL_IBMCAST_H */
