/* SPDX-License-Identifier: BSD-3-Clause */
/* The lease renewer. slurmstepd forks the tasks while this thread runs;
 * the children only exec, never touch our lock, so that is safe. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "spank/log.h"
#include "spank/pool.h"
#include "spank/renew.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static pthread_t thread;
static bool running, stopping;
static const struct spank_conf *rconf;
static uint32_t rid;

static void *loop(void *arg)
{
	unsigned period = rconf->lease_s / 3;
	struct timespec at;
	char why[256];
	int rc;

	(void)arg;
	if (period < 10)
		period = 10;
	pthread_mutex_lock(&lock);
	while (!stopping) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += period;
		rc = 0;
		while (!stopping && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&cond, &lock, &at);
		if (stopping)
			break;
		pthread_mutex_unlock(&lock);
		if (spank_pool_renew(rconf, rid, why, sizeof(why)))
			spank_err("remote", "renewing the lease of "
				  "reservation %u: %s", rid, why);
		else
			spank_debug("remote", "renewed reservation %u for "
				    "%u s", rid, rconf->lease_s);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

int spank_renew_start(const struct spank_conf *conf, uint32_t id)
{
	pthread_condattr_t ca;
	int rc;

	if (running)
		return -EBUSY;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&cond, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return -rc;
	rconf = conf;
	rid = id;
	stopping = false;
	rc = pthread_create(&thread, NULL, loop, NULL);
	if (rc) {
		pthread_cond_destroy(&cond);
		return -rc;
	}
	running = true;
	return 0;
}

void spank_renew_stop(void)
{
	if (!running)
		return;
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	pthread_cond_destroy(&cond);
	running = false;
}
