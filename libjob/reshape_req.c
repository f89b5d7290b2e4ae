/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A reshape request's thread (see reshape_req.h). The control protocol is
 * blocking (one request, one reply over a socket), so it runs in a thread
 * that shares only this struct, under its own mutex, with the library:
 * the context's lock is never held across a network exchange. The group's
 * wait is asked in short slices so that freeing the communicator stops
 * the thread promptly.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/reshape.h"
#include "libjob/reshape_req.h"

/* One exchange with the server, and one slice of the group's wait. */
#define CALL_MS 10000
#define SLICE_MS 250

struct ibmc__reshape_req {
	pthread_t thread;
	int joined;
	pthread_mutex_t lock;
	int done, cancel;	/* under lock */
	int rc;
	struct ibmc__reshape_ask ask;	/* strings point below */
	char *server, *munge, *nodes;
	struct ibmc_group_reply rep;
	char detail[160];
	int64_t asked_us, granted_us, ready_us;
};

static int64_t now_us(void)
{
	return (int64_t)(ibmc__now_ns() / 1000);
}

static int cancelled(struct ibmc__reshape_req *g)
{
	int v;

	pthread_mutex_lock(&g->lock);
	v = g->cancel;
	pthread_mutex_unlock(&g->lock);
	return v;
}

static void *req_main(void *arg)
{
	struct ibmc__reshape_req *g = arg;
	const struct ibmc__reshape_ask *a = &g->ask;
	struct ibmc_group_reply w;
	int64_t end = ibmc__now_ms() + a->wait_ms;
	enum ibmc_err err;
	int rc;

	/* A grow without idempotency handle: ranks 0 of several
	 * communicators grow at once without knowing each other's indices,
	 * and a lost reply only leaves this communicator point-to-point
	 * (the group goes with the job). */
	if (a->grow)
		rc = ibmc__grow(a->server, a->munge_socket, a->job, -1,
				CALL_MS, &g->rep, &err, g->detail,
				sizeof(g->detail));
	else
		rc = ibmc__prune(a->server, a->munge_socket, a->job, a->group,
				 a->nodes, CALL_MS, &g->rep, &err, g->detail,
				 sizeof(g->detail));
	g->granted_us = now_us() - g->asked_us;
	while (!rc && a->wait_ms && !g->rep.ready && !cancelled(g) &&
	       ibmc__now_ms() < end) {
		rc = ibmc__group_wait(a->server, a->munge_socket, a->job,
				      g->rep.index, SLICE_MS, CALL_MS, &w,
				      &err, g->detail, sizeof(g->detail));
		if (!rc)
			g->rep.ready = w.ready;
	}
	if (!rc && a->wait_ms && !g->rep.ready) {
		rc = cancelled(g) ? -ECANCELED : -ETIMEDOUT;
		snprintf(g->detail, sizeof(g->detail),
			 "the SM did not confirm group %u within %d ms",
			 g->rep.index, a->wait_ms);
	}
	g->ready_us = now_us() - g->asked_us;
	pthread_mutex_lock(&g->lock);
	g->rc = rc;
	g->done = 1;
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

static char *dup_or_null(const char *s, int *fail)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*fail = 1;
	return d;
}

static void req_release(struct ibmc__reshape_req *g)
{
	free(g->server);
	free(g->munge);
	free(g->nodes);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

int ibmc__reshape_req_start(const struct ibmc__reshape_ask *ask,
			    struct ibmc__reshape_req **out)
{
	struct ibmc__reshape_req *g = calloc(1, sizeof(*g));
	int rc, fail = 0;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	g->ask = *ask;
	g->server = dup_or_null(ask->server, &fail);
	g->munge = dup_or_null(ask->munge_socket, &fail);
	g->nodes = dup_or_null(ask->nodes, &fail);
	if (fail) {
		req_release(g);
		return -ENOMEM;
	}
	g->ask.server = g->server;
	g->ask.munge_socket = g->munge;
	g->ask.nodes = g->nodes;
	g->asked_us = now_us();
	rc = pthread_create(&g->thread, NULL, req_main, g);
	if (rc) {
		req_release(g);
		return -rc;
	}
	*out = g;
	return 0;
}

static void join(struct ibmc__reshape_req *g)
{
	if (!g->joined) {
		pthread_join(g->thread, NULL);
		g->joined = 1;
	}
}

int ibmc__reshape_req_poll(struct ibmc__reshape_req *g,
			   struct ibmc__reshape_result *res)
{
	int done;

	pthread_mutex_lock(&g->lock);
	done = g->done;
	pthread_mutex_unlock(&g->lock);
	if (!done)
		return 1;
	join(g);
	memset(res, 0, sizeof(*res));
	res->group = g->rep.group;
	res->index = g->rep.index;
	res->changed = g->rep.changed;
	res->members = g->rep.members;
	res->granted_us = g->granted_us;
	res->ready_us = g->ready_us;
	res->detail = g->detail;
	return g->rc;
}

void ibmc__reshape_req_wait(struct ibmc__reshape_req *g)
{
	join(g);
}

void ibmc__reshape_req_cancel(struct ibmc__reshape_req *g)
{
	pthread_mutex_lock(&g->lock);
	g->cancel = 1;
	pthread_mutex_unlock(&g->lock);
}

void ibmc__reshape_req_free(struct ibmc__reshape_req *g)
{
	if (!g)
		return;
	ibmc__reshape_req_cancel(g);
	join(g);
	req_release(g);
}
