/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rabenseifner's allreduce, flat, the baseline for long vectors: a
 * reduce-scatter by recursive halving (in the round of distance d a rank
 * keeps half of its current piece, sends the other half to rank ^ d and
 * reduces what comes back into the half it kept), which leaves each of the
 * 2^m ranks owning one reduced segment, then an allgather of the segments
 * by recursive doubling; each rank moves about 2 (P - 1) / P vectors
 * instead of recursive doubling's log2 P. Every segment is reduced by one
 * rank only, always lower rank op higher, and then copied: the bits are
 * the same on every rank and never depend on timing.
 *
 * With P not a power of two the first 2 (P - 2^m) ranks pair up first:
 * the odd one sends its vector to the even one (which reduces even op odd
 * and takes part) and gets the result back at the end. With to_root the
 * allgather becomes a binomial gather to group member 0 (the leaders'
 * part of "shm_mcast", whose result is then multicast).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/coll/allreduce.h"
#include "libjob/comm.h"
#include "libjob/reduce.h"
#include "libjob/xfer.h"

/* Transfer slots: 0 fold, 1 unfold, then per halving round k 2 + 2k
 * receive and 3 + 2k send, then per gathering round j 2 + 2m + 2j
 * receive and 3 + 2m + 2j send. Tags: the slot's round, 0 .. 1 + 2m. */
struct rab {
	struct ibmc__xfers xs;		/* first: for the xfers helpers */
	struct ibmc__ar_args *a;
	int size, me;			/* among the group */
	int m, rem, newrank;		/* 2^m ranks take part */
	int out;			/* folded out (odd of a pair) */
	int taken;			/* this rank's vector taken */
	int folded;			/* the odd's vector is reduced in */
	int half;			/* next halving round to start */
	int gath;			/* next gathering round to start */
	size_t es;
	unsigned char *acc;		/* the vector being reduced */
	unsigned char *fold_in;
	unsigned char **in;		/* in[k]: received in halving k */
};

/* The communicator rank of the rank numbered newrank among the 2^m. */
static int real_rank(const struct rab *r, int newrank)
{
	return ibmc__ar_member(r->a, newrank < r->rem ? 2 * newrank :
			       newrank + r->rem);
}

/* Byte offset of segment i of 2^m (the first count % 2^m segments hold
 * one element more). */
static size_t seg_off(const struct rab *r, int i)
{
	size_t n = (size_t)1 << r->m, base = r->a->count / n,
	       extra = r->a->count % n;

	return ((size_t)i * base + ((size_t)i < extra ? (size_t)i : extra)) *
	       r->es;
}

static size_t span(const struct rab *r, int lo, int hi)
{
	return seg_off(r, hi) - seg_off(r, lo);
}

/* Halving round k: the distance, and the segments this rank keeps. */
static int halving(const struct rab *r, int k, int *lo, int *hi)
{
	int d = 1 << (r->m - 1 - k), base = r->newrank & ~(2 * d - 1);

	*lo = r->newrank & d ? base + d : base;
	*hi = *lo + d;
	return d;
}

/* Gathering round j: the distance, and the segments this rank holds
 * before it (those it sends). */
static int gathering(const struct rab *r, int j, int *lo, int *hi)
{
	int d = 1 << j;

	*lo = r->newrank & ~(d - 1);
	*hi = *lo + d;
	return d;
}

/* With to_root, this rank's last gathering round: it sends in the round
 * of its lowest set bit and stops (newrank 0 receives in every round). */
static int last_round(const struct rab *r)
{
	int j = 0;

	if (!r->a->to_root)
		return r->m;
	while (j < r->m && !(r->newrank & (1 << j)))
		j++;
	return j;
}

static int post_recvs(struct ibmc__task *t, struct rab *r)
{
	struct ibmc__ar_args *a = r->a;
	int k, j, lo, hi, d, last = last_round(r), rc = 0;

	for (k = 0; !rc && k < r->m; k++) {
		d = halving(r, k, &lo, &hi);
		r->in[k] = malloc(span(r, lo, hi) ? span(r, lo, hi) : 1);
		if (!r->in[k])
			return -ENOMEM;
		rc = ibmc__xfer_post(&r->xs, 2 + 2 * k, 0,
				     real_rank(r, r->newrank ^ d),
				     ibmc__ar_tag(a, 2 + k), r->in[k],
				     span(r, lo, hi));
	}
	/* The segments gathered land at their place in buf; nothing can
	 * arrive before this rank has sent (and so taken) its own vector. */
	for (j = 0; !rc && j < last; j++) {
		d = gathering(r, j, &lo, &hi);
		lo ^= d;
		rc = ibmc__xfer_post(&r->xs, 2 + 2 * r->m + 2 * j, 0,
				     real_rank(r, r->newrank ^ d),
				     ibmc__ar_tag(a, 2 + r->m + j),
				     (unsigned char *)a->buf + seg_off(r, lo),
				     span(r, lo, lo + d));
	}
	(void)t;
	return rc;
}

static int start(struct ibmc__task *t)
{
	struct ibmc__ar_args *a = t->priv;
	struct rab *r = calloc(1, sizeof(*r));
	size_t len = t->args.len;
	int p2 = 1, rc;

	if (!r) {
		free(a);
		t->priv = NULL;
		return -ENOMEM;
	}
	r->a = a;
	a->tag_algo = IBMC__AR_RABENSEIFNER;
	t->priv = r;
	r->es = a->count ? len / a->count : 1;
	ibmc__ar_place(a, t->comm, &r->size, &r->me);
	while (p2 * 2 <= r->size) {
		p2 *= 2;
		r->m++;
	}
	r->rem = r->size - p2;
	if (r->me < 2 * r->rem) {
		r->out = r->me % 2;
		r->newrank = r->me / 2;
	} else {
		r->newrank = r->me - r->rem;
		r->folded = 1;
	}
	rc = ibmc__xfers_init(&r->xs, t, 2 + 4 * r->m);
	if (rc)
		return rc;
	/* As recursive doubling's (auto's line by length). */
	ibmc__xfers_stop_all(&r->xs, a->group, r->size, ibmc__ar_tag(a, 0));
	if (r->out)
		return a->to_root ? 0 :
		       ibmc__xfer_post(&r->xs, 1, 0,
				       ibmc__ar_member(a, r->me - 1),
				       ibmc__ar_tag(a, 1), a->buf, len);
	r->acc = malloc(len ? len : 1);
	r->in = calloc((size_t)r->m + 1, sizeof(*r->in));
	if (!r->acc || !r->in)
		return -ENOMEM;
	if (!r->folded) {
		r->fold_in = malloc(len ? len : 1);
		if (!r->fold_in)
			return -ENOMEM;
		rc = ibmc__xfer_post(&r->xs, 0, 0,
				     ibmc__ar_member(a, r->me + 1),
				     ibmc__ar_tag(a, 0), r->fold_in, len);
	}
	return rc ? rc : post_recvs(t, r);
}

/* This rank's vector, from buf now: a folded-out rank sends it. */
static int take_own(struct ibmc__task *t, struct rab *r)
{
	struct ibmc__ar_args *a = r->a;

	r->taken = 1;
	if (r->out)
		return ibmc__xfer_post(&r->xs, 0, 1,
				       ibmc__ar_member(a, r->me - 1),
				       ibmc__ar_tag(a, 0), a->buf,
				       t->args.len);
	if (t->args.len)
		memcpy(r->acc, a->buf, t->args.len);
	return 0;
}

/* acc[lo, hi) = lower op higher, with what the partner sent in round k. */
static void reduce_half(struct rab *r, int k)
{
	struct ibmc__ar_args *a = r->a;
	int lo, hi, d = halving(r, k, &lo, &hi);
	size_t off = seg_off(r, lo), n = span(r, lo, hi);

	if (!n)
		return;
	if (r->newrank < (r->newrank ^ d)) {
		ibmc__reduce(a->op, a->dtype, r->acc + off, r->in[k],
			     n / r->es);
		memcpy(r->acc + off, r->in[k], n);
	} else {
		ibmc__reduce(a->op, a->dtype, r->in[k], r->acc + off,
			     n / r->es);
	}
}

/* The reduce-scatter, as far as the transfers allow. */
static int run_halving(struct ibmc__task *t, struct rab *r)
{
	struct ibmc__ar_args *a = r->a;
	int k, lo, hi, d, rc;

	while (r->half <= r->m) {
		k = r->half;
		if (k > 0) {
			if (!ibmc__xfer_done(&r->xs, 2 + 2 * (k - 1)))
				return 0;
			reduce_half(r, k - 1);
		}
		if (k < r->m) {
			/* Send the half this rank gives away. */
			d = halving(r, k, &lo, &hi);
			lo ^= d;
			rc = ibmc__xfer_post(&r->xs, 3 + 2 * k, 1,
					     real_rank(r, r->newrank ^ d),
					     ibmc__ar_tag(a, 2 + k),
					     r->acc + seg_off(r, lo),
					     span(r, lo, lo + d));
			if (rc)
				return rc;
		} else if (span(r, r->newrank, r->newrank + 1)) {
			memcpy((unsigned char *)a->buf +
			       seg_off(r, r->newrank),
			       r->acc + seg_off(r, r->newrank),
			       span(r, r->newrank, r->newrank + 1));
		}
		r->half++;
	}
	(void)t;
	return 0;
}

/* The allgather (or the gather to member 0), as far as the transfers
 * allow; the result back to the folded-out partner at the end. In the
 * allgather a rank sends and receives in every round; in the gather it
 * receives until its last round, sends all it holds then and stops. */
static int run_gathering(struct ibmc__task *t, struct rab *r)
{
	struct ibmc__ar_args *a = r->a;
	int j, lo, hi, d, last = last_round(r), rc = 0;

	while (!rc && r->gath <= last) {
		j = r->gath;
		if (j > 0 && !ibmc__xfer_done(&r->xs, 2 + 2 * r->m +
					      2 * (j - 1)))
			return 0;
		if (j < r->m && (!a->to_root || j == last)) {
			d = gathering(r, j, &lo, &hi);
			rc = ibmc__xfer_post(&r->xs, 3 + 2 * r->m + 2 * j, 1,
					     real_rank(r, r->newrank ^ d),
					     ibmc__ar_tag(a, 2 + r->m + j),
					     (unsigned char *)a->buf +
					     seg_off(r, lo), span(r, lo, hi));
		} else if (j == r->m && !a->to_root && r->me < 2 * r->rem) {
			rc = ibmc__xfer_post(&r->xs, 1, 1,
					     ibmc__ar_member(a, r->me + 1),
					     ibmc__ar_tag(a, 1), a->buf,
					     t->args.len);
		}
		r->gath++;
	}
	return rc;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct rab *r = t->priv;
	struct ibmc__ar_args *a = r->a;
	int rc;

	if (r->size == 1)
		return 0;
	if (!r->taken) {
		rc = take_own(t, r);
		if (rc)
			return rc;
	}
	if (!r->out) {
		if (!r->folded && ibmc__xfer_done(&r->xs, 0)) {
			/* even op odd: the lower rank's vector on the left */
			ibmc__reduce(a->op, a->dtype, r->acc, r->fold_in,
				     a->count);
			memcpy(r->acc, r->fold_in, t->args.len);
			r->folded = 1;
		}
		rc = r->folded ? run_halving(t, r) : 0;
		if (!rc && r->half > r->m)
			rc = run_gathering(t, r);
		if (rc)
			return rc;
	}
	ibmc__xfers_progress(&r->xs, now);
	return ibmc__xfers_result(&r->xs, r->out || r->gath > last_round(r));
}

static void complete(struct ibmc__task *t, int rc)
{
	ibmc__ar_count(t->comm, rc, IBMC__AR_RABENSEIFNER);
}

static void fini(struct ibmc__task *t)
{
	struct rab *r = t->priv;
	int k;

	if (!r)
		return;
	ibmc__xfers_fini(&r->xs);
	for (k = 0; r->in && k < r->m; k++)
		free(r->in[k]);
	free(r->in);
	free(r->acc);
	free(r->fold_in);
	free(r->a);
	free(r);
}

const struct ibmc__task_ops ibmc__allreduce_rab_ops = {
	.start = start,
	.input = ibmc__xfers_task_input,
	.progress = progress,
	.deadline = ibmc__xfers_task_deadline,
	.complete = complete,
	.late = ibmc__xfers_task_input,
	.fini = fini,
	.waits_for = ibmc__xfers_task_waits_for,
};
