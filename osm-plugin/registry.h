/* SPDX-License-Identifier: BSD-3-Clause */
/* The job registry: every accepted reservation, its groups and their
 * readiness. Shared by the server thread and the confirmer thread under
 * one mutex; never locked while taking osm->lock (lock order: osm->lock
 * first, then the registry). */
#ifndef IBMCAST_OSM_REGISTRY_H
#define IBMCAST_OSM_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/clock.h"

enum ibmc_state {
	IBMC_STATE_BUILDING,
	IBMC_STATE_READY,
	IBMC_STATE_FAILED,
	IBMC_STATE_RELEASED,
};

const char *ibmc__state_name(enum ibmc_state s);

struct ibmc_group {
	uint16_t index;
	uint8_t mgid[16];
	uint16_t mlid;       /* host order, 0xC000.. */
	uint8_t mtu;         /* IBA encoding */
	uint8_t rate;        /* IBA encoding */
	unsigned members;    /* HCA ports in the group */
	unsigned switches;   /* switches on the spanning tree, once known */
	unsigned missing;    /* member ports that have left the fabric */
	uint64_t tree_fp;    /* the confirmed tree (switches and ports) */
	char pending[96];    /* while building: what it is waiting for */
	enum ibmc_state state;
	uint64_t sm_done_ns; /* first seen programmed by OpenSM (1-3) */
	uint64_t ready_ns;   /* CLOCK_MONOTONIC when confirmed */
	bool grown;          /* added by grow, beyond the reserved pool */
	/* Pruned to a subset of the job's nodes (prune): the subset as a
	 * compressed hostlist and in canonical form; both NULL while the
	 * group spans every node of the job. Owned by the group. */
	char *nodes;
	char *canon;
};

struct ibmc_job {
	struct ibmc_job *next;
	uint32_t id;
	uint32_t uid;
	char *nodes;         /* compressed hostlist, for display */
	char *canon;         /* sorted names joined by ',' (idempotency) */
	unsigned node_count;
	unsigned port_count;
	uint32_t qkey;
	uint16_t pkey;
	unsigned ngroups;    /* the pool and the grown groups after it */
	unsigned pool_groups; /* groups reserved; the rest were grown */
	struct ibmc_group *groups;
	enum ibmc_state state;
	char reason[160];    /* why failed */
	unsigned lease_s;
	uint64_t reserved_ns;
	uint64_t building_since_ns; /* reserve, or a fabric change */
	uint64_t built_ns;   /* groups created inside OpenSM */
	uint64_t sm_done_ns; /* OpenSM finished programming every group */
	uint64_t ready_ns;
	uint64_t lease_end_ns;
	uint64_t generation; /* bumped when groups are (re)built */
	bool needs_build;    /* restored or mirrored: no groups in OpenSM yet */
};

struct ibmc_counters {
	uint64_t requests, errors, reserves, releases, ready, failed;
	uint64_t smp_reads, readback_mismatches;
	uint64_t verifications, rebuilds; /* re-checks of ready groups */
	uint64_t prunes, grows; /* accepted changes, not repeats */
	uint64_t rejoins; /* member ports re-added to a group on return */
};

struct ibmc_registry {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* signalled on new work for the confirmer */
	struct ibmc_job *jobs;
	unsigned njobs;
	struct ibmc_counters counters;
	uint64_t generation;    /* last one handed out */
};


int ibmc__registry_init(struct ibmc_registry *r);
void ibmc__registry_destroy(struct ibmc_registry *r);

/* All under r->lock, held by the caller. */
struct ibmc_job *ibmc__registry_find(struct ibmc_registry *r, uint32_t id);
void ibmc__registry_insert(struct ibmc_registry *r, struct ibmc_job *job);
/* Unlinks and returns the job (caller frees), or NULL. */
struct ibmc_job *ibmc__registry_remove(struct ibmc_registry *r, uint32_t id);
/* A fresh generation for a job whose groups were (re)built. */
uint64_t ibmc__registry_next_generation(struct ibmc_registry *r);

void ibmc__job_free(struct ibmc_job *job);
/* Forget a group's subset: it spans the whole job again. */
void ibmc__group_clear_subset(struct ibmc_group *g);
/* Set a group's subset (names as given; canonical form and compressed
 * hostlist are made here), replacing any old one. 0 or -ENOMEM (the old
 * subset kept). */
int ibmc__group_set_subset(struct ibmc_group *g, char *const *names,
			   size_t count);
/* The node set in one comparable form: names sorted and joined by ','
 * (names itself is left as it is). malloc'd; NULL on ENOMEM. */
char *ibmc__nodes_canonical(char *const *names, size_t count);
/* One group of the job object; NULL on ENOMEM. */
json_t *ibmc__group_to_json(const struct ibmc_job *job,
			    const struct ibmc_group *g);
/* The job object of docs/protocol.md; NULL on ENOMEM. */
json_t *ibmc__job_to_json(const struct ibmc_job *job, uint64_t now_ns);

#endif
