/* SPDX-License-Identifier: BSD-3-Clause */
/* Lookup in the collectives' algorithm tables (see coll.h), and the
 * public selection calls. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "libjob/coll/coll.h"
#include "libjob/comm.h"
#include "libjob/env.h"

static const struct ibmc__coll_desc *const colls[IBMC__C_COUNT] = {
	[IBMC__C_BCAST] = &ibmc__bcast_desc,
	[IBMC__C_BARRIER] = &ibmc__barrier_desc,
	[IBMC__C_ALLGATHER] = &ibmc__allgather_desc,
	[IBMC__C_ALLREDUCE] = &ibmc__allreduce_desc,
};

const struct ibmc__coll_desc *ibmc__coll_get(int coll)
{
	if (coll < 0 || coll >= IBMC__C_COUNT)
		return NULL;
	return colls[coll];
}

const struct ibmc__coll_desc *ibmc__coll_find(const char *name)
{
	int i;

	for (i = 0; name && i < IBMC__C_COUNT; i++)
		if (!strcmp(colls[i]->name, name))
			return colls[i];
	return NULL;
}

const char *ibmc__coll_name(int coll)
{
	const struct ibmc__coll_desc *d = ibmc__coll_get(coll);

	if (coll == IBMC__C_MTEST)
		return "multicast testing";
	return d ? d->name : "unknown";
}

int ibmc__algo_lookup(int coll, const char *name, int *param)
{
	const struct ibmc__coll_desc *d = ibmc__coll_get(coll);
	const char *colon;
	size_t n;
	int i;

	if (param)
		*param = 0;
	if (!d || !name)
		return -EINVAL;
	if (!strcmp(name, "auto"))
		return 0;
	colon = strchr(name, ':');
	n = colon ? (size_t)(colon - name) : strlen(name);
	for (i = 0; i < d->nalgos; i++) {
		const struct ibmc__algo_desc *a = &d->algos[i];
		long v;

		if (strlen(a->name) != n || strncmp(a->name, name, n))
			continue;
		if (!colon)
			return a->id;
		if (!a->takes_param || !colon[1])
			return -EINVAL;
		if (ibmc__parse_long(colon + 1, 10, 1, a->param_max, &v))
			return -EINVAL;
		if (param)
			*param = (int)v;
		return a->id;
	}
	return -EINVAL;
}

const char *ibmc__algo_name_of(int coll, int id)
{
	const struct ibmc__coll_desc *d = ibmc__coll_get(coll);
	int i;

	if (!id)
		return "auto";
	for (i = 0; d && i < d->nalgos; i++)
		if (d->algos[i].id == id)
			return d->algos[i].name;
	return "unknown";
}

/* The broadcast's names, kept for ibmc__env_read's callers. */
int ibmc__algo_parse(const char *name)
{
	return ibmc__algo_lookup(IBMC__C_BCAST, name, NULL);
}

const char *ibmc__algo_name(int algo)
{
	return ibmc__algo_name_of(IBMC__C_BCAST, algo);
}

int ibmc_comm_set_algo(ibmc_comm_t *c, const char *coll, const char *name)
{
	const struct ibmc__coll_desc *d = ibmc__coll_find(coll);
	int a, param;

	if (!c || !d)
		return -EINVAL;
	a = ibmc__algo_lookup(d->coll, name, &param);
	if (a < 0)
		return a;
	pthread_mutex_lock(&c->ctx->lock);
	c->algo[d->coll] = a;
	c->algo_param[d->coll] = param;
	pthread_mutex_unlock(&c->ctx->lock);
	return 0;
}

const char *ibmc_comm_last_algo(const ibmc_comm_t *c, const char *coll)
{
	const struct ibmc__coll_desc *d = ibmc__coll_find(coll);

	struct ibmc_comm *m = (struct ibmc_comm *)c;	/* its name buffer */
	const char *name;

	if (!c || !d || c->last_algo[d->coll] < 0)
		return "none";
	name = ibmc__algo_name_of(d->coll, c->last_algo[d->coll]);
	if (!c->last_param[d->coll])
		return name;
	snprintf(m->last_name, sizeof(m->last_name), "%s:%d", name,
		 c->last_param[d->coll]);
	return m->last_name;
}

int ibmc_comm_set_bcast_algo(ibmc_comm_t *c, const char *name)
{
	return ibmc_comm_set_algo(c, "bcast", name);
}

const char *ibmc_comm_last_bcast_algo(const ibmc_comm_t *c)
{
	return ibmc_comm_last_algo(c, "bcast");
}

void ibmc__inner_begin(const struct ibmc_comm *c, struct ibmc__inner_mark *m)
{
	m->st = c->st;
	memcpy(m->last_algo, c->last_algo, sizeof(m->last_algo));
	memcpy(m->last_param, c->last_param, sizeof(m->last_param));
}

void ibmc__inner_end(struct ibmc_comm *c, const struct ibmc__inner_mark *m)
{
	c->st = m->st;
	memcpy(c->last_algo, m->last_algo, sizeof(c->last_algo));
	memcpy(c->last_param, m->last_param, sizeof(c->last_param));
}
