/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The progress thread of a context: while no caller is inside the
 * library, it receives and moves every collective on, so that a member
 * that returned early still acknowledges, repairs and forwards what it
 * owes, and answers late packets, without waiting for its next call (seed
 * 001, section 6: a late or busy rank must not hold up the others). It
 * sleeps in the transport's wait (no lock held) until a datagram may be
 * ready or the next timer is due, and steps aside while a caller is in
 * the library, which then progresses everything itself.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/comm.h"
#include "libjob/dispatch.h"
#include "libjob/task.h"

#define IDLE_MS 10		/* longest sleep */
#define ARENA_WARM (64 * 1024)	/* what a few early packets need */

static void nap_ms(int ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };

	if (ms <= 0)
		ts.tv_nsec = 100000;
	nanosleep(&ts, NULL);
}

/*
 * A thread's first allocation makes glibc create the thread's arena (a
 * 64 MiB mapping, then page faults as it is used). This thread allocates
 * first when it keeps a packet that came before its collective, which
 * happens in a job's first collective on a new communicator: make that
 * cost here, at ibmc_init, rather than inside the collective (seen as
 * 32 ranks' first broadcast taking about twice the steady state's time on
 * a shared host). Freed memory stays in the arena for the next packets.
 */
static void warm_arena(void)
{
	void *p = malloc(ARENA_WARM);

	if (p) {
		memset(p, 0, ARENA_WARM);
		free(p);
	}
}

static void *progress_main(void *arg)
{
	struct ibmc_context *ctx = arg;
	int64_t now, d;
	int timeout;

	warm_arena();
	pthread_mutex_lock(&ctx->lock);
	while (!ctx->progress_stop) {
		if (ctx->in_call) {
			/* The caller pumps; wake when it leaves. */
			struct timespec ts = ibmc__deadline_ts(CLOCK_REALTIME,
							       IDLE_MS);

			pthread_cond_timedwait(&ctx->call_done, &ctx->lock,
					       &ts);
			continue;
		}
		ibmc__pump(ctx, 0);
		now = ibmc__task_now();
		d = ibmc__progress_all(ctx, now);
		timeout = IDLE_MS;
		if (d != INT64_MAX && (d - now + 999) / 1000 < timeout)
			timeout = (int)((d - now + 999) / 1000);
		if (timeout < 0)
			timeout = 0;
		pthread_mutex_unlock(&ctx->lock);
		if (!ctx->ops->wait || !timeout)
			nap_ms(timeout < 1 ? timeout : 1);
		else
			ctx->ops->wait(ctx->tr, timeout);
		pthread_mutex_lock(&ctx->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

int ibmc__progress_start(struct ibmc_context *ctx)
{
	int rc;

	pthread_cond_init(&ctx->call_done, NULL);
	if (!ctx->env.progress_thread)
		return 0;
	rc = pthread_create(&ctx->progress, NULL, progress_main, ctx);
	if (rc) {
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: rank %d: no progress thread (%s): collectives move on only inside library calls",
			 ctx->rank, strerror(rc));
		return 0;
	}
	ctx->progress_on = 1;
	return 0;
}

void ibmc__progress_stop(struct ibmc_context *ctx)
{
	if (ctx->progress_on) {
		pthread_mutex_lock(&ctx->lock);
		ctx->progress_stop = 1;
		pthread_mutex_unlock(&ctx->lock);
		pthread_join(ctx->progress, NULL);
		ctx->progress_on = 0;
	}
	pthread_cond_destroy(&ctx->call_done);
}
