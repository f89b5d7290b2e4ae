/* SPDX-License-Identifier: BSD-3-Clause */
/* The job registry: a short list of reservations (a site runs hundreds of
 * jobs, not millions), their groups' states and the JSON views of them. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"
#include "common/mgid.h"
#include "registry.h"

const char *ibmc__state_name(enum ibmc_state s)
{
	switch (s) {
	case IBMC_STATE_BUILDING:
		return "building";
	case IBMC_STATE_READY:
		return "ready";
	case IBMC_STATE_FAILED:
		return "failed";
	case IBMC_STATE_RELEASED:
		return "released";
	}
	return "unknown";
}

int ibmc__registry_init(struct ibmc_registry *r)
{
	pthread_condattr_t ca;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = pthread_mutex_init(&r->lock, NULL);
	if (ret)
		return -ret;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&r->changed, &ca);
	pthread_condattr_destroy(&ca);
	if (ret) {
		pthread_mutex_destroy(&r->lock);
		return -ret;
	}
	return 0;
}

void ibmc__registry_destroy(struct ibmc_registry *r)
{
	struct ibmc_job *j, *next;

	for (j = r->jobs; j; j = next) {
		next = j->next;
		ibmc__job_free(j);
	}
	r->jobs = NULL;
	pthread_cond_destroy(&r->changed);
	pthread_mutex_destroy(&r->lock);
}

struct ibmc_job *ibmc__registry_find(struct ibmc_registry *r, uint32_t id)
{
	struct ibmc_job *j;

	for (j = r->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

void ibmc__registry_insert(struct ibmc_registry *r, struct ibmc_job *job)
{
	struct ibmc_job **pp = &r->jobs;

	/* Keep the list sorted by job id so status lists are stable. */
	while (*pp && (*pp)->id < job->id)
		pp = &(*pp)->next;
	job->next = *pp;
	*pp = job;
	r->njobs++;
}

struct ibmc_job *ibmc__registry_remove(struct ibmc_registry *r, uint32_t id)
{
	struct ibmc_job **pp, *j;

	for (pp = &r->jobs; (j = *pp); pp = &j->next) {
		if (j->id == id) {
			*pp = j->next;
			j->next = NULL;
			r->njobs--;
			return j;
		}
	}
	return NULL;
}

uint64_t ibmc__registry_next_generation(struct ibmc_registry *r)
{
	return ++r->generation;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *ibmc__nodes_canonical(char *const *names, size_t count)
{
	char **sorted = malloc((count ? count : 1) * sizeof(*sorted));
	size_t len = 1, off = 0;
	char *s = NULL;

	if (!sorted)
		return NULL;
	memcpy(sorted, names, count * sizeof(*sorted));
	qsort(sorted, count, sizeof(*sorted), cmp_str);
	for (size_t i = 0; i < count; i++)
		len += strlen(sorted[i]) + 1;
	s = malloc(len);
	if (s) {
		for (size_t i = 0; i < count; i++) {
			size_t l = strlen(sorted[i]);

			if (i)
				s[off++] = ',';
			memcpy(s + off, sorted[i], l);
			off += l;
		}
		s[off] = '\0';
	}
	free(sorted);
	return s;
}

void ibmc__group_clear_subset(struct ibmc_group *g)
{
	free(g->nodes);
	free(g->canon);
	g->nodes = NULL;
	g->canon = NULL;
}

int ibmc__group_set_subset(struct ibmc_group *g, char *const *names,
			   size_t count)
{
	char *nodes = ibmc__hostlist_compress(names, count);
	char *canon = ibmc__nodes_canonical(names, count);

	if (!nodes || !canon) {
		free(nodes);
		free(canon);
		return -ENOMEM;
	}
	ibmc__group_clear_subset(g);
	g->nodes = nodes;
	g->canon = canon;
	return 0;
}

void ibmc__job_free(struct ibmc_job *job)
{
	if (!job)
		return;
	free(job->nodes);
	free(job->canon);
	for (unsigned i = 0; job->groups && i < job->ngroups; i++)
		ibmc__group_clear_subset(&job->groups[i]);
	free(job->groups);
	free(job);
}

json_t *ibmc__group_to_json(const struct ibmc_job *job,
			    const struct ibmc_group *g)
{
	char mgid[IBMC_MGID_STRLEN], mlid[8];
	json_t *o;

	ibmc__mgid_format(g->mgid, mgid);
	snprintf(mlid, sizeof(mlid), "0x%04x", g->mlid);
	o = json_pack("{s:i, s:s, s:s, s:i, s:i, s:s, s:i, s:i}",
		      "index", (int)g->index, "mgid", mgid, "mlid", mlid,
		      "mtu", (int)g->mtu, "rate", (int)g->rate,
		      "state", ibmc__state_name(g->state),
		      "members", (int)g->members,
		      "switches", (int)g->switches);
	if (o && g->state == IBMC_STATE_BUILDING && g->pending[0])
		json_object_set_new(o, "pending", json_string(g->pending));
	/* Where a group differs from the pool's: grown, or pruned. */
	if (o && g->grown)
		json_object_set_new(o, "grown", json_true());
	if (o && g->nodes)
		json_object_set_new(o, "nodes", json_string(g->nodes));
	if (o && g->missing)
		json_object_set_new(o, "missing_ports",
				    json_integer((json_int_t)g->missing));
	if (o && g->ready_ns && g->ready_ns >= job->reserved_ns)
		json_object_set_new(o, "ready_us",
				    json_integer((json_int_t)(g->ready_ns -
						 job->reserved_ns) / 1000));
	return o;
}

json_t *ibmc__job_to_json(const struct ibmc_job *job, uint64_t now_ns)
{
	char qkey[12], pkey[8];
	json_t *o, *groups;
	uint64_t remain = 0;

	snprintf(qkey, sizeof(qkey), "0x%08x", job->qkey);
	snprintf(pkey, sizeof(pkey), "0x%04x", job->pkey);
	if (job->lease_end_ns > now_ns)
		remain = (job->lease_end_ns - now_ns) / 1000000000ULL;
	o = json_pack("{s:I, s:I, s:s, s:s, s:i, s:i, s:s, s:s, s:i, s:I, "
		      "s:I}",
		      "job", (json_int_t)job->id, "uid", (json_int_t)job->uid,
		      "state", ibmc__state_name(job->state),
		      "nodes", job->nodes ? job->nodes : "",
		      "node_count", (int)job->node_count,
		      "port_count", (int)job->port_count,
		      "qkey", qkey, "pkey", pkey,
		      "lease_s", (int)job->lease_s,
		      "lease_remaining_s", (json_int_t)remain,
		      "reserved_mono_ns", (json_int_t)job->reserved_ns);
	if (!o)
		return NULL;
	if (job->state == IBMC_STATE_FAILED)
		json_object_set_new(o, "reason", json_string(job->reason));
	if (job->needs_build)
		json_object_set_new(o, "restoring", json_true());
	json_object_set_new(o, "pool_groups",
			    json_integer((json_int_t)job->pool_groups));
	/* Where the time goes: creating groups under osm->lock, OpenSM's
	 * own multicast pass, then our confirmation. */
	if (job->built_ns)
		json_object_set_new(o, "build_us",
				    json_integer((json_int_t)(job->built_ns -
						 job->reserved_ns) / 1000));
	if (job->sm_done_ns)
		json_object_set_new(o, "sm_done_us",
				    json_integer((json_int_t)(job->sm_done_ns -
						 job->reserved_ns) / 1000));
	if (job->ready_ns) {
		json_object_set_new(o, "ready_mono_ns",
				    json_integer((json_int_t)job->ready_ns));
		json_object_set_new(o, "reserve_to_ready_us",
				    json_integer((json_int_t)(job->ready_ns -
						 job->reserved_ns) / 1000));
	}
	groups = json_array();
	if (!groups)
		goto nomem;
	for (unsigned i = 0; i < job->ngroups; i++) {
		json_t *g = ibmc__group_to_json(job, &job->groups[i]);

		if (!g || json_array_append_new(groups, g)) {
			json_decref(groups);
			goto nomem;
		}
	}
	if (json_object_set_new(o, "groups", groups))
		goto nomem;
	return o;
nomem:
	json_decref(o);
	return NULL;
}
