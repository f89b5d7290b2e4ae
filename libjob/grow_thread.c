/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The grow request's thread (see grow_thread.h). The control protocol is
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
#include "libjob/grow_thread.h"

/* One exchange with the server, and one slice of the group's wait. */
#define CALL_MS 10000
#define SLICE_MS 250

struct ibmc__grow_req {
	pthread_t thread;
	int joined;
	pthread_mutex_t lock;
	int done, cancel;	/* under lock */
	int rc;
	struct ibmc_group_reply rep;
	char detail[160];
	const char *server, *munge;
	uint32_t job;
	int wait_ms;
	int64_t asked_us, granted_us, ready_us;
};

static int64_t now_us(void)
{
	return (int64_t)(ibmc__now_ns() / 1000);
}

static int cancelled(struct ibmc__grow_req *g)
{
	int v;

	pthread_mutex_lock(&g->lock);
	v = g->cancel;
	pthread_mutex_unlock(&g->lock);
	return v;
}

static void *grow_main(void *arg)
{
	struct ibmc__grow_req *g = arg;
	struct ibmc_group_reply w;
	int64_t end = ibmc__now_ms() + g->wait_ms;
	enum ibmc_err err;
	int rc;

	/* No idempotency handle: ranks 0 of several communicators grow at
	 * once without knowing each other's indices, and a lost reply only
	 * leaves this communicator point-to-point (the group goes with the
	 * job). */
	rc = ibmc__grow(g->server, g->munge, g->job, -1, CALL_MS, &g->rep,
			&err, g->detail, sizeof(g->detail));
	g->granted_us = now_us() - g->asked_us;
	while (!rc && !g->rep.ready && !cancelled(g) &&
	       ibmc__now_ms() < end) {
		rc = ibmc__group_wait(g->server, g->munge, g->job,
				      g->rep.index, SLICE_MS, CALL_MS, &w,
				      &err, g->detail, sizeof(g->detail));
		if (!rc)
			g->rep.ready = w.ready;
	}
	if (!rc && !g->rep.ready) {
		rc = cancelled(g) ? -ECANCELED : -ETIMEDOUT;
		snprintf(g->detail, sizeof(g->detail),
			 "the SM did not confirm grown group %u within %d ms",
			 g->rep.index, g->wait_ms);
	}
	g->ready_us = now_us() - g->asked_us;
	pthread_mutex_lock(&g->lock);
	g->rc = rc;
	g->done = 1;
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int ibmc__grow_req_start(const char *server, const char *munge_socket,
			 uint32_t job, int wait_ms,
			 struct ibmc__grow_req **out)
{
	struct ibmc__grow_req *g = calloc(1, sizeof(*g));
	int rc;

	*out = NULL;
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->lock, NULL);
	g->server = server;
	g->munge = munge_socket;
	g->job = job;
	g->wait_ms = wait_ms;
	g->asked_us = now_us();
	rc = pthread_create(&g->thread, NULL, grow_main, g);
	if (rc) {
		pthread_mutex_destroy(&g->lock);
		free(g);
		return -rc;
	}
	*out = g;
	return 0;
}

static void join(struct ibmc__grow_req *g)
{
	if (!g->joined) {
		pthread_join(g->thread, NULL);
		g->joined = 1;
	}
}

int ibmc__grow_req_poll(struct ibmc__grow_req *g,
			struct ibmc__grow_result *res)
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
	res->granted_us = g->granted_us;
	res->ready_us = g->ready_us;
	res->detail = g->detail;
	return g->rc;
}

void ibmc__grow_req_free(struct ibmc__grow_req *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	g->cancel = 1;
	pthread_mutex_unlock(&g->lock);
	join(g);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
