/* SPDX-License-Identifier: BSD-3-Clause */
/* Modeled time on transports that keep a modeled clock (see model.h). */
#include "config.h"

#include <stdlib.h>

#include "libjob/model.h"

static int modeled(const struct ibmc_context *ctx)
{
	return ctx->ops && ctx->ops->model_take;
}

void ibmc__model_input(struct ibmc_context *ctx, uint64_t arrival_ns)
{
	ctx->pkt_model_ns = arrival_ns;
	ctx->pkt_taken = 0;
}

void ibmc__model_input_done(struct ibmc_context *ctx)
{
	ctx->pkt_taken = 1;
}

void ibmc__model_save(const struct ibmc_context *ctx,
		      struct ibmc__model_pkt *p)
{
	p->arrival_ns = ctx->pkt_model_ns;
	p->taken = ctx->pkt_taken;
}

void ibmc__model_restore(struct ibmc_context *ctx,
			 const struct ibmc__model_pkt *p)
{
	ctx->pkt_model_ns = p->arrival_ns;
	ctx->pkt_taken = p->taken;
}

void ibmc__model_take_at(struct ibmc_context *ctx, uint64_t arrival_ns)
{
	if (!modeled(ctx) || ctx->pkt_taken)
		return;
	ctx->pkt_taken = 1;
	ctx->model_pending = 1;
	ctx->ops->model_take(ctx->tr, arrival_ns);
}

void ibmc__model_take(struct ibmc_context *ctx)
{
	ibmc__model_take_at(ctx, ctx->pkt_model_ns);
}

uint64_t ibmc__model_defer(struct ibmc_context *ctx)
{
	if (!modeled(ctx) || ctx->pkt_taken)
		return 0;
	ctx->pkt_taken = 1;
	ctx->model_pending = 1;
	return ctx->pkt_model_ns;
}

static int by_arrival(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void ibmc__model_charge(struct ibmc_context *ctx, uint64_t *arrival_ns,
			size_t n)
{
	size_t i;

	if (!modeled(ctx) || !n)
		return;
	qsort(arrival_ns, n, sizeof(*arrival_ns), by_arrival);
	for (i = 0; i < n; i++)
		ctx->ops->model_take(ctx->tr, arrival_ns[i]);
}

uint64_t ibmc__model_arrival(const struct ibmc_context *ctx)
{
	return ctx->pkt_model_ns;
}

int ibmc__model_busy(const struct ibmc_context *ctx)
{
	return ctx->model_pending;
}

void ibmc__model_progressed(struct ibmc_context *ctx)
{
	ctx->model_pending = 0;
}

void ibmc__model_quiet_on(struct ibmc_context *ctx)
{
	ctx->model_quiet++;
}

void ibmc__model_quiet_off(struct ibmc_context *ctx)
{
	if (ctx->model_quiet > 0)
		ctx->model_quiet--;
}

int ibmc__model_send_begin(struct ibmc_context *ctx,
			   const struct ibmc__hdr *h)
{
	int quiet = ctx->model_quiet || (h->flags & IBMC__F_RETX) ||
		    h->kind == IBMC__K_REQ || h->kind == IBMC__K_PULL ||
		    h->kind == IBMC__K_PROBE || h->kind == IBMC__K_LIVE;

	if (!quiet || !ctx->ops->model_quiet)
		return 0;
	ctx->ops->model_quiet(ctx->tr, 1, ctx->model_quiet_at);
	return 1;
}

void ibmc__model_send_end(struct ibmc_context *ctx, int quiet)
{
	if (quiet)
		ctx->ops->model_quiet(ctx->tr, 0, 0);
}

void ibmc__model_resend_on(struct ibmc_context *ctx, uint64_t first_ns)
{
	ibmc__model_quiet_on(ctx);
	ctx->model_quiet_at = first_ns;
}

void ibmc__model_resend_off(struct ibmc_context *ctx)
{
	ctx->model_quiet_at = 0;
	ibmc__model_quiet_off(ctx);
}

uint64_t ibmc__model_clock(const struct ibmc_context *ctx)
{
	return modeled(ctx) && ctx->ops->model_clock ?
	       ctx->ops->model_clock(ctx->tr) : 0;
}

void ibmc__model_call_return(struct ibmc_context *ctx)
{
	if (modeled(ctx) && ctx->ops->model_clock)
		ctx->call_return_ns = ctx->ops->model_clock(ctx->tr);
}
