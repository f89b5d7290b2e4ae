/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll/ibmcast's component: its MCA parameters, and the end of the job's
 * libibmcast context, released here at the component's close so that
 * teardown never waits on attribute callbacks Open MPI may run too late or
 * not at all. The context itself starts at MPI_COMM_WORLD's module.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/coll_ibmcast.h"
#include "libjob/mpi_map.h"
#include "ompi/constants.h"
#include "opal/mca/base/mca_base_var.h"

static int ibmcast_register(void);
static int ibmcast_close(void);
static int ibmcast_init_query(bool progress_threads, bool mpi_threads);

struct ibmcast_component mca_coll_ibmcast_component = {
	.super = {
		.collm_version = {
			MCA_COLL_BASE_VERSION_2_0_0,
			.mca_component_name = "ibmcast",
			MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION,
					      OMPI_MINOR_VERSION,
					      OMPI_RELEASE_VERSION),
			.mca_close_component = ibmcast_close,
			.mca_register_component_params = ibmcast_register,
		},
		.collm_data = { MCA_BASE_METADATA_PARAM_CHECKPOINT },
		.collm_init_query = ibmcast_init_query,
		.collm_comm_query = mca_coll_ibmcast_comm_query,
	},
	.priority = 90,
	.enable = true,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* One write per line, so that lines of different ranks do not mix. */
static void vsay(const char *fmt, va_list ap)
{
	char line[1024];
	int n;

	n = snprintf(line, sizeof(line), IBMCAST_COLL ": rank %d: ",
		     mca_coll_ibmcast_component.world_rank);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	strcat(line, "\n");
	fputs(line, stderr);
	fflush(stderr);
}

void mca_coll_ibmcast_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

void mca_coll_ibmcast_say0(const char *fmt, ...)
{
	va_list ap;

	if (mca_coll_ibmcast_component.world_rank != 0)
		return;
	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

static int ibmcast_register(void)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	const mca_base_component_t *v = &c->super.collm_version;
	const char *env = getenv("IBMCAST_MPI_VERBOSE");

	/* Above tuned (30), han and sm: MPI_Bcast, MPI_Barrier,
	 * MPI_Allgather and MPI_Allreduce are ours wherever the pool is
	 * usable; the rest is never set, so it stays with whichever module
	 * had it. */
	c->priority = 90;
	(void)mca_base_component_var_register(v, "priority",
		"Priority of coll/ibmcast for MPI_Bcast, MPI_Barrier, MPI_Allgather and MPI_Allreduce on intracommunicators (it provides no other collective)",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_1,
		MCA_BASE_VAR_SCOPE_READONLY, &c->priority);
	c->enable = true;
	(void)mca_base_component_var_register(v, "enable",
		"Use InfiniBand multicast through libibmcast when the job's pool is ready (IBMCAST_STATE=ready); 0: never, Open MPI's own collectives run unchanged",
		MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_1,
		MCA_BASE_VAR_SCOPE_READONLY, &c->enable);
	c->verbose = env && *env ? atoi(env) : 0;
	(void)mca_base_component_var_register(v, "verbose",
		"1: a summary at MPI_Finalize on rank 0 (per collective: over multicast, point-to-point, passed to the previous module and why) and why multicast is off; 2: also one line per communicator (default: IBMCAST_MPI_VERBOSE or 0)",
		MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_1,
		MCA_BASE_VAR_SCOPE_READONLY, &c->verbose);
	return OMPI_SUCCESS;
}

/*
 * Every thread level is taken. Under MPI_THREAD_MULTIPLE, libibmcast
 * takes calls on different communicators of one context from different
 * threads at once (MPI itself forbids concurrent calls on one
 * communicator); what the component shares between communicators is
 * guarded by its lock or counted atomically, and communicators are
 * mapped at their first collective (see module_enable).
 */
static int ibmcast_init_query(bool progress_threads, bool mpi_threads)
{
	(void)progress_threads;
	mca_coll_ibmcast_component.threads = mpi_threads;
	return OMPI_SUCCESS;
}

void mca_coll_ibmcast_release(struct ibmcast_module *m)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	ibmc_comm_stats_t st;

	ibmc_comm_t *ic;

	if (!m || !m->ic)
		return;
	pthread_mutex_lock(&c->lock);
	ic = m->ic;
	m->ic = NULL;
	if (!ibmc_comm_get_stats(ic, &st))
		ibmc__mpi_stats_add(&c->freed, &st);
	if (m->prev)
		m->prev->next = m->next;
	else
		c->live = m->next;
	if (m->next)
		m->next->prev = m->prev;
	m->next = m->prev = NULL;
	pthread_mutex_unlock(&c->lock);
	ibmc_comm_free(ic);
}

/* "COLL: N over multicast, M point-to-point by libibmcast (K packed), X
 * passed to the previous module (A communicator not mapped, ...)" with
 * the reasons that apply to COLL. */
static void csummary(const char *what, const struct ibmcast_tally *t,
		     const int *reasons, int nreasons)
{
	static const char *const why[IBMCAST_PASS_MAX] = {
		[IBMCAST_PASS_UNMAPPED] = "communicator not mapped",
		[IBMCAST_PASS_SIZE] = "too large",
		[IBMCAST_PASS_NONBLOCKING] = "non-blocking",
		[IBMCAST_PASS_OP] = "user-defined op",
		[IBMCAST_PASS_TYPE] = "datatype not mapped",
		[IBMCAST_PASS_OPTYPE] = "op not defined on the datatype",
	};
	unsigned long passed = 0;
	char list[512];
	int i, len = 0;

	list[0] = 0;
	for (i = 0; i < nreasons; i++) {
		passed += t->pass[reasons[i]];
		len += snprintf(list + len, sizeof(list) - (size_t)len,
				"%s%lu %s", i ? ", " : "",
				t->pass[reasons[i]], why[reasons[i]]);
	}
	mca_coll_ibmcast_say0("%s: %lu over multicast, %lu point-to-point by libibmcast (%lu packed), %lu passed to the previous module (%s)",
		what, t->mcast, t->p2p, t->packed, passed, list);
}

static void summary(void)
{
	static const int ag_why[] = { IBMCAST_PASS_UNMAPPED,
				      IBMCAST_PASS_SIZE };
	static const int ar_why[] = { IBMCAST_PASS_UNMAPPED, IBMCAST_PASS_SIZE,
				      IBMCAST_PASS_OP, IBMCAST_PASS_TYPE,
				      IBMCAST_PASS_OPTYPE };
	struct ibmcast_component *c = &mca_coll_ibmcast_component;
	const struct ibmcast_tally *b = &c->bcast, *r = &c->barrier;

	mca_coll_ibmcast_say0("MPI_Bcast: %lu over multicast, %lu point-to-point by libibmcast (%lu packed), %lu passed to the previous module (%lu communicator not mapped, %lu over 4 GiB, %lu non-blocking)",
		b->mcast, b->p2p, b->packed,
		b->pass[IBMCAST_PASS_UNMAPPED] + b->pass[IBMCAST_PASS_SIZE] +
			b->pass[IBMCAST_PASS_NONBLOCKING],
		b->pass[IBMCAST_PASS_UNMAPPED], b->pass[IBMCAST_PASS_SIZE],
		b->pass[IBMCAST_PASS_NONBLOCKING]);
	mca_coll_ibmcast_say0("MPI_Barrier: %lu over multicast, %lu point-to-point by libibmcast, %lu passed to the previous module (%lu communicator not mapped, %lu non-blocking)",
		r->mcast, r->p2p,
		r->pass[IBMCAST_PASS_UNMAPPED] + r->pass[IBMCAST_PASS_NONBLOCKING],
		r->pass[IBMCAST_PASS_UNMAPPED],
		r->pass[IBMCAST_PASS_NONBLOCKING]);
	csummary("MPI_Allgather", &c->allgather, ag_why,
		 (int)(sizeof(ag_why) / sizeof(ag_why[0])));
	csummary("MPI_Allreduce", &c->allreduce, ar_why,
		 (int)(sizeof(ar_why) / sizeof(ar_why[0])));
	mca_coll_ibmcast_say0("communicators: %lu mapped (%lu without multicast), %lu left to the previous module because mapping failed on some rank; libibmcast: bcasts=%llu mcast_bcasts=%llu barriers=%llu allgathers=%llu allreduces=%llu packets_sent=%llu bytes_sent=%llu retransmits=%llu timeouts=%llu",
		c->comms, c->comms_p2p, c->comms_failed,
		(unsigned long long)c->freed.bcasts,
		(unsigned long long)c->freed.mcast_bcasts,
		(unsigned long long)c->freed.barriers,
		(unsigned long long)c->freed.allgathers,
		(unsigned long long)c->freed.allreduces,
		(unsigned long long)c->freed.packets_sent,
		(unsigned long long)c->freed.bytes_sent,
		(unsigned long long)c->freed.retransmits,
		(unsigned long long)c->freed.timeouts);
}

/*
 * The component's close runs once per process at MPI_Finalize (after the
 * communicators are gone, normally) or when Open MPI drops the component:
 * release whatever ibmc communicators remain, then the context. Safe to
 * run twice and with nothing to release.
 */
static int ibmcast_close(void)
{
	struct ibmcast_component *c = &mca_coll_ibmcast_component;

	while (c->live)
		mca_coll_ibmcast_release(c->live);
	if (c->ctx) {
		ibmc_finalize(c->ctx);
		c->ctx = NULL;
		if (c->verbose)
			summary();
	}
	if (c->state == 1)
		c->state = -1;
	return OMPI_SUCCESS;
}
