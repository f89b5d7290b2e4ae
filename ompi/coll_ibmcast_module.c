/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/ibmcast's module per intracommunicator: at MPI_COMM_WORLD it starts
 * the job's libibmcast context (bootstrapped over the allgather of the
 * module selected before it), and on every communicator it creates the
 * ibmc communicator over the members' MPI_COMM_WORLD ranks, keeping the
 * previous module's functions for fallback as coll/hcoll does.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libjob/mpi_map.h"
#include "ompi/coll_ibmcast.h"
#include "ompi/constants.h"
#include "ompi/group/group.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/runtime/opal_progress.h"

/* While a collective of ours waits for other ranks, Open MPI's progress
 * engine keeps moving what the program left pending (an MPI_Isend the
 * rank we wait for is blocked receiving), as MPI's progress rule asks.
 * (Its idle sched_yield under --oversubscribe stays: without it, a
 * randomized mix under 10% loss and two CPU hogs left the simulated
 * fabric's data plane without CPU for tens of seconds, 7 runs of 7.) */
static void ompi_progress(void *arg)
{
	(void)arg;
	opal_progress();
}

static void module_construct(ibmcast_module_t *m)
{
	m->comm = NULL;
	m->ic = NULL;
	m->map_pending = false;
	m->next = m->prev = NULL;
	m->prev_bcast = NULL;
	m->prev_bcast_module = NULL;
	m->prev_barrier = NULL;
	m->prev_barrier_module = NULL;
	m->prev_ibcast = NULL;
	m->prev_ibcast_module = NULL;
	m->prev_ibarrier = NULL;
	m->prev_ibarrier_module = NULL;
	m->prev_allgather = NULL;
	m->prev_allgather_module = NULL;
	m->prev_allreduce = NULL;
	m->prev_allreduce_module = NULL;
}

static void module_destruct(ibmcast_module_t *m)
{
	mca_coll_ibmcast_release(m);
	if (m->prev_bcast_module)
		OBJ_RELEASE(m->prev_bcast_module);
	if (m->prev_barrier_module)
		OBJ_RELEASE(m->prev_barrier_module);
	if (m->prev_ibcast_module)
		OBJ_RELEASE(m->prev_ibcast_module);
	if (m->prev_ibarrier_module)
		OBJ_RELEASE(m->prev_ibarrier_module);
	if (m->prev_allgather_module)
		OBJ_RELEASE(m->prev_allgather_module);
	if (m->prev_allreduce_module)
		OBJ_RELEASE(m->prev_allreduce_module);
}

OBJ_CLASS_INSTANCE(ibmcast_module_t, mca_coll_base_module_t,
		   module_construct, module_destruct);

/* The bootstrap of ibmc_init: the previous module's allgather over
 * MPI_COMM_WORLD (PMPI_Allgather is not callable inside MPI_Init). */
struct boot {
	struct ompi_communicator_t *comm;
	mca_coll_base_module_allgather_fn_t allgather;
	mca_coll_base_module_t *module;
};

static int boot_allgather(void *arg, const void *in, void *out, size_t len)
{
	struct boot *b = arg;

	if (len > INT32_MAX)
		return -EMSGSIZE;
	if (b->allgather(in, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE,
			 b->comm, b->module) != OMPI_SUCCESS)
		return -EIO;
	return 0;
}

/*
 * Every member says whether it is fine; all go on only if all are. Runs
 * the allreduce of the module installed before this one (saved by
 * save_previous: once this module is enabled, comm's own is this
 * module's).
 * A failing allreduce counts as "not fine" on this rank; its peers see the
 * same failure or the MPI error handler ends the job.
 */
static int all_agree(ibmcast_module_t *m, struct ompi_communicator_t *comm,
		     int mine)
{
	int all = 0;

	if (m->prev_allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm,
			      m->prev_allreduce_module) != OMPI_SUCCESS)
		return 0;
	return all;
}

static void release_offered(uint64_t offered)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;

	pthread_mutex_lock(&c->lock);
	c->held &= ~offered;
	pthread_mutex_unlock(&c->lock);
}

/*
 * The members agree on the new communicator's id and pool group
 * (libjob/mpi_map.h) and on whether all can map it (mine), over the
 * allreduce of the module before this one; 0 when not. *offered: the pool
 * groups this rank held for it (c->held), released by the caller once the
 * communicator is created or not. Under MPI_THREAD_MULTIPLE, rounds
 * again while threads' communicators contend for groups (mpi_map.h).
 */
static int agree(ibmcast_module_t *m, struct ompi_communicator_t *comm,
		 int mine, ibmc_comm_attr_t *attr, uint64_t *offered)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	uint64_t v[IBMC__AGREE_LEN], all[IBMC__AGREE_LEN];
	unsigned int seed = (unsigned int)c->world_rank * 2654435761u ^
			    (unsigned int)comm->c_contextid;
	int round, contended, ok;

	for (round = 0;; round++) {
		/* (what is free, read under the lock: a group another
		 * thread's communicator was offered stays held until that
		 * one has it) */
		pthread_mutex_lock(&c->lock);
		contended = ibmc__mpi_agree_offer(c->ctx, mine,
						  ompi_comm_rank(comm),
						  c->world_rank, &c->drawn,
						  all, round, &c->held, v);
		*offered = v[1];
		pthread_mutex_unlock(&c->lock);
		if (m->prev_allreduce(v, all, IBMC__AGREE_LEN, MPI_UINT64_T,
				      MPI_BAND, comm,
				      m->prev_allreduce_module) !=
		    OMPI_SUCCESS)
			return 0;
		ok = ibmc__mpi_agree_attr(all, 1, 0, attr);
		if (!ibmc__mpi_agree_may_retry(ok, all, c->threads, round) ||
		    all_agree(m, comm, !contended))
			return ok;
		release_offered(*offered);
		*offered = 0;
		ibmc__mpi_back_off(&seed, round);
	}
}

/*
 * Keeps the functions this module replaces, with a reference to their
 * modules, as coll/hcoll does; 0 when one is missing (a module of lower
 * priority must provide them all).
 */
static int save_previous(ibmcast_module_t *m,
			 struct ompi_communicator_t *comm)
{
	mca_coll_base_comm_coll_t *c = comm->c_coll;

	if (!c->coll_bcast || !c->coll_barrier || !c->coll_ibcast ||
	    !c->coll_ibarrier || !c->coll_allreduce || !c->coll_allgather)
		return 0;
	m->prev_bcast = c->coll_bcast;
	m->prev_bcast_module = c->coll_bcast_module;
	m->prev_barrier = c->coll_barrier;
	m->prev_barrier_module = c->coll_barrier_module;
	m->prev_ibcast = c->coll_ibcast;
	m->prev_ibcast_module = c->coll_ibcast_module;
	m->prev_ibarrier = c->coll_ibarrier;
	m->prev_ibarrier_module = c->coll_ibarrier_module;
	m->prev_allgather = c->coll_allgather;
	m->prev_allgather_module = c->coll_allgather_module;
	m->prev_allreduce = c->coll_allreduce;
	m->prev_allreduce_module = c->coll_allreduce_module;
	OBJ_RETAIN(m->prev_bcast_module);
	OBJ_RETAIN(m->prev_barrier_module);
	OBJ_RETAIN(m->prev_ibcast_module);
	OBJ_RETAIN(m->prev_ibarrier_module);
	OBJ_RETAIN(m->prev_allgather_module);
	OBJ_RETAIN(m->prev_allreduce_module);
	return 1;
}

/*
 * At MPI_COMM_WORLD: the context, or the component steps aside for the
 * whole job with one line saying why. All ranks decide together (ibmc_init
 * is collective), so every later communicator is treated alike everywhere.
 */
static void world_start(ibmcast_module_t *m, struct ompi_communicator_t *comm)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	const char *state = getenv("IBMCAST_STATE");
	const char *reason = getenv("IBMCAST_REASON");
	struct boot b = {
		.comm = comm,
		.allgather = comm->c_coll->coll_allgather,
		.module = comm->c_coll->coll_allgather_module,
	};
	ibmc_bootstrap_t bs = { .allgather = boot_allgather, .arg = &b };
	int rc, ok;

	c->state = -1;
	ok = state && !strcmp(state, "ready");
	if (!all_agree(m, comm, ok)) {
		/* A job that never asked for ibmcast (no IBMCAST_STATE)
		 * hears about it only when it asks to. */
		if (state || c->verbose)
			mca_coll_ibmcast_say0("IBMCAST_STATE is %s%s%s: Open MPI's own collectives are used",
				state ? state : "not set (job without --ibmcast)",
				reason ? ": " : "", reason ? reason : "");
		return;
	}
	bs.rank = ompi_comm_rank(comm);
	bs.size = ompi_comm_size(comm);
	rc = ibmc_init(&bs, &c->ctx);
	ok = rc == 0;
	if (!all_agree(m, comm, ok)) {
		if (c->ctx)
			ibmc_finalize(c->ctx);
		c->ctx = NULL;
		mca_coll_ibmcast_say0("libibmcast did not start (%s): Open MPI's own collectives are used",
			ok ? "it failed on another rank" : ibmc_strerror(rc));
		return;
	}
	c->state = 1;
	ibmc_set_wait_hook(c->ctx, ompi_progress, NULL);
	if (c->verbose)
		mca_coll_ibmcast_say0("libibmcast %s up on %d ranks: MPI_Bcast, MPI_Barrier, MPI_Allgather and MPI_Allreduce go over ibmcast",
			IBMC_VERSION_STRING, bs.size);
}

/* comm's members as MPI_COMM_WORLD ranks in *world (malloc'd); 0 when one
 * is not in MPI_COMM_WORLD (a spawned or connected process). */
static int world_ranks(struct ompi_communicator_t *comm, int **world)
{
	int n = ompi_comm_size(comm), i, ok = 0, *mine;

	mine = calloc((size_t)n, sizeof(int));
	*world = malloc(sizeof(int) * (size_t)n);
	if (mine && *world) {
		for (i = 0; i < n; i++)
			mine[i] = i;
		if (ompi_group_translate_ranks(comm->c_local_group, n, mine,
					       ompi_mpi_comm_world.comm.c_local_group,
					       *world) == OMPI_SUCCESS) {
			for (i = 0; i < n && (*world)[i] != MPI_UNDEFINED; i++)
				;
			ok = i == n;
		}
	}
	free(mine);
	return ok;
}

/*
 * Gives comm its ibmc communicator, or none on every member. Collective
 * over comm: the members agree on its id and pool group first, then an
 * allreduce makes sure all succeeded before any uses it.
 */
static void map_comm(ibmcast_module_t *m, struct ompi_communicator_t *comm)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	ibmc_comm_t *ic = NULL;
	ibmc_comm_attr_t attr;
	const char *why = NULL;
	int *world = NULL, n = ompi_comm_size(comm), ok;
	uint64_t offered = 0;

	ok = agree(m, comm, world_ranks(comm, &world), &attr, &offered) &&
	     ibmc_comm_create_attr(c->ctx, world, n, &attr, &ic) == 0;
	free(world);
	/* (the agreed group, if any, is the communicator's now) */
	release_offered(offered);
	if (!all_agree(m, comm, ok)) {
		if (ic)
			ibmc_comm_free(ic);
		IBMCAST_COUNT(c->comms_failed);
		mca_coll_ibmcast_say0("a communicator of %d ranks stays on the previous module's collectives: creating its ibmcast communicator failed on some rank",
			n);
		return;
	}
	pthread_mutex_lock(&c->lock);
	m->ic = ic;
	m->next = c->live;
	if (c->live)
		c->live->prev = m;
	c->live = m;
	pthread_mutex_unlock(&c->lock);
	IBMCAST_COUNT(c->comms);
	if (ibmc_comm_mcast_state(ic, &why)) {
		IBMCAST_COUNT(c->comms_p2p);
		if (c->verbose >= 2)
			mca_coll_ibmcast_say0("communicator %s (cid %d) of %d ranks without multicast: %s",
				comm->c_name, (int)comm->c_contextid, n,
				why ? why : "?");
	} else if (c->verbose >= 2) {
		mca_coll_ibmcast_say0("communicator %s (cid %d) of %d ranks over multicast",
			comm->c_name, (int)comm->c_contextid, n);
	}
}

/*
 * Runs after every module of lower priority is installed on comm, so
 * comm->c_coll holds what this module falls back to. Never fails once
 * the previous functions are saved: a communicator without an ibmc
 * communicator passes every call through.
 */
static int module_enable(mca_coll_base_module_t *module,
			 struct ompi_communicator_t *comm)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	ibmcast_module_t *m = (ibmcast_module_t *)module;

	if (!save_previous(m, comm)) {
		if (comm == &ompi_mpi_comm_world.comm)
			c->state = -1;
		mca_coll_ibmcast_say0("no module below coll/ibmcast provides bcast, barrier, allreduce and allgather; it steps aside");
		return OMPI_ERROR;
	}
	m->comm = comm;
	if (comm == &ompi_mpi_comm_world.comm && c->state == 0)
		world_start(m, comm);
	/* Under MPI_THREAD_MULTIPLE Open MPI 4.1 enables a new
	 * communicator's modules from a callback inside opal_progress, and
	 * there a blocking wait of its own (the members' agreement) never
	 * completes: the waiting thread that drives progress is the one
	 * inside the callback. The mapping waits for the communicator's
	 * first blocking collective of the four instead, which every
	 * member calls in the same order. MPI_COMM_WORLD's enable runs in
	 * MPI_Init, outside any callback. */
	if (c->state == 1 && c->threads && comm != &ompi_mpi_comm_world.comm)
		m->map_pending = true;
	else if (c->state == 1)
		map_comm(m, comm);
	return OMPI_SUCCESS;
}

void mca_coll_ibmcast_map_pending(ibmcast_module_t *m)
{
	m->map_pending = false;
	if (mca_coll_ibmcast_component.state == 1)
		map_comm(m, m->comm);
}

/*
 * Every answer here is the same on every member of comm (MCA parameters,
 * the component's state agreed at MPI_COMM_WORLD, the communicator's
 * kind and size), so a communicator has this module on all members or on
 * none.
 */
mca_coll_base_module_t *
mca_coll_ibmcast_comm_query(struct ompi_communicator_t *comm, int *priority)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	ibmcast_module_t *m;

	*priority = c->priority;
	if (comm == &ompi_mpi_comm_world.comm)
		c->world_rank = ompi_comm_rank(comm);
	if (!c->enable || c->priority < 0 || c->state < 0 ||
	    OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2)
		return NULL;
	/* Only MPI_COMM_WORLD starts the context; a communicator queried
	 * before it (none in Open MPI 4.1) gets nothing. */
	if (c->state == 0 && comm != &ompi_mpi_comm_world.comm)
		return NULL;
	m = OBJ_NEW(ibmcast_module_t);
	if (!m)
		return NULL;
	m->super.coll_module_enable = module_enable;
	m->super.coll_bcast = mca_coll_ibmcast_bcast;
	m->super.coll_barrier = mca_coll_ibmcast_barrier;
	m->super.coll_ibcast = mca_coll_ibmcast_ibcast;
	m->super.coll_ibarrier = mca_coll_ibmcast_ibarrier;
	m->super.coll_allgather = mca_coll_ibmcast_allgather;
	m->super.coll_allreduce = mca_coll_ibmcast_allreduce;
	return &m->super;
}
