/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion of non-blocking collectives: ibmc_test(), ibmc_wait(). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "libjob/comm.h"
#include "libjob/dispatch.h"
#include "libjob/task.h"

static int finish(ibmc_request_t **reqp)
{
	struct ibmc_request *req = *reqp;
	int rc = req->rc;

	if (req->heap)
		free(req);
	*reqp = NULL;
	return rc;
}

int ibmc_test(ibmc_request_t **reqp, int *done)
{
	struct ibmc_request *req;
	struct ibmc_context *ctx;
	int rc;

	if (!reqp || !*reqp || !done)
		return -EINVAL;
	req = *reqp;
	ctx = req->comm->ctx;
	*done = 0;
	pthread_mutex_lock(&ctx->lock);
	if (!req->done) {
		rc = ibmc__pump(ctx, 0);
		if (rc)
			ibmc__request_fail(req, rc);
		ibmc__progress_all(ctx, ibmc__task_now());
	}
	*done = req->done;
	pthread_mutex_unlock(&ctx->lock);
	return *done ? finish(reqp) : 0;
}

int ibmc_wait(ibmc_request_t **reqp)
{
	struct ibmc_context *ctx;

	if (!reqp || !*reqp)
		return -EINVAL;
	ctx = (*reqp)->comm->ctx;
	pthread_mutex_lock(&ctx->lock);
	ibmc__wait(*reqp);
	pthread_mutex_unlock(&ctx->lock);
	return finish(reqp);
}
