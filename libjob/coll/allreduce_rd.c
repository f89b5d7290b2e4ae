/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Recursive-doubling allreduce, flat, the baseline for small vectors: in
 * round k a rank and its partner (rank ^ 2^k among the 2^m ranks that
 * take part) swap their whole partial vectors and both compute lower op
 * higher, so both hold the same bits. With P not a power of two, the
 * first 2 (P - 2^m) ranks pair up first: the odd one sends its vector to
 * the even one (which reduces even op odd and takes part) and gets the
 * result back at the end, as in Rabenseifner's (allreduce_rab.c): members
 * that disagree on the count across auto's line between the two still
 * exchange a datagram in every pair, and see it. Every round's vector is
 * kept until its transfer is acknowledged (a resend must carry the same
 * bytes). It runs among a group of members when asked (the node leaders
 * of "shm_mcast").
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/coll/allreduce.h"
#include "libjob/comm.h"
#include "libjob/reduce.h"
#include "libjob/xfer.h"

/* Slots: 0 fold (odd sends / even receives), 1 unfold (even sends the
 * result / odd receives it), then per round k: 2 + 2k receive, 3 + 2k
 * send. */
struct rd {
	struct ibmc__xfers xs;
	struct ibmc__ar_args *a;
	int rounds, newrank, role;	/* role: 0 takes part, 1 folded out */
	int round;			/* next round to send */
	int taken;			/* this rank's vector taken from buf */
	int folded;			/* even rank: the odd's vector is in */
	unsigned char **vec;		/* vec[k]: the partial vector sent in
					 * round k; vec[rounds]: the result */
	unsigned char **in;		/* in[k]: received in round k */
	unsigned char *fold_in;
};

/* The communicator rank of the rank numbered newrank among the 2^m. */
static int real_rank(const struct ibmc__ar_args *a, int newrank, int rem)
{
	return ibmc__ar_member(a, newrank < rem ? 2 * newrank :
			       newrank + rem);
}

static int start(struct ibmc__task *t)
{
	struct ibmc__ar_args *a = t->priv;
	struct rd *d = calloc(1, sizeof(*d));
	int P, me, p2 = 1, rem, k, rc;
	size_t len = t->args.len;

	if (!d) {
		free(a);
		t->priv = NULL;
		return -ENOMEM;
	}
	d->a = a;
	a->tag_algo = IBMC__AR_RD;
	t->priv = d;
	ibmc__ar_place(a, t->comm, &P, &me);
	while (p2 * 2 <= P)
		p2 *= 2;
	rem = P - p2;
	while ((1 << d->rounds) < p2)
		d->rounds++;
	if (me < 2 * rem) {
		d->role = me % 2;
		d->newrank = me / 2;
	} else {
		d->newrank = me - rem;
	}
	d->vec = calloc((size_t)d->rounds + 1, sizeof(*d->vec));
	d->in = calloc((size_t)d->rounds + 1, sizeof(*d->in));
	if (!d->vec || !d->in)
		return -ENOMEM;
	rc = ibmc__xfers_init(&d->xs, t, 2 + 2 * d->rounds);
	if (rc)
		return rc;
	/* Auto takes another algorithm above IBMC__AR_SHORT_BYTES: members
	 * that disagree on the count may not even share the rounds. */
	ibmc__xfers_stop_all(&d->xs, a->group, P, ibmc__ar_tag(a, 0));
	if (d->role)		/* folded out: send (at the first progress),
				 * then wait for the end */
		return ibmc__xfer_post(&d->xs, 1, 0, ibmc__ar_member(a, me - 1),
				       ibmc__ar_tag(a, 1), a->buf, len);
	for (k = 0; k <= d->rounds; k++) {
		d->vec[k] = malloc(len ? len : 1);
		d->in[k] = malloc(len ? len : 1);
		if (!d->vec[k] || !d->in[k])
			return -ENOMEM;
	}
	if (me < 2 * rem) {
		d->fold_in = malloc(len ? len : 1);
		if (!d->fold_in)
			return -ENOMEM;
		rc = ibmc__xfer_post(&d->xs, 0, 0, ibmc__ar_member(a, me + 1),
				     ibmc__ar_tag(a, 0), d->fold_in, len);
	} else {
		d->folded = 1;
	}
	for (k = 0; !rc && k < d->rounds; k++)
		rc = ibmc__xfer_post(&d->xs, 2 + 2 * k, 0,
				     real_rank(a, d->newrank ^ (1 << k), rem),
				     ibmc__ar_tag(a, 2 + k), d->in[k], len);
	return rc;
}

/* This rank's vector, from buf now: a folded-out rank sends it. */
static int take_own(struct ibmc__task *t, struct rd *d, int me)
{
	struct ibmc__ar_args *a = d->a;

	d->taken = 1;
	if (d->role)
		return ibmc__xfer_post(&d->xs, 0, 1, ibmc__ar_member(a, me - 1),
				       ibmc__ar_tag(a, 0), a->buf,
				       t->args.len);
	if (t->args.len)
		memcpy(d->vec[0], a->buf, t->args.len);
	return 0;
}

static int progress(struct ibmc__task *t, int64_t now)
{
	struct rd *d = t->priv;
	struct ibmc__ar_args *a = d->a;
	size_t len = t->args.len;
	int P, me, p2 = 1 << d->rounds, rem, k, rc, partner;

	ibmc__ar_place(a, t->comm, &P, &me);
	rem = P - p2;
	if (P == 1)
		return 0;
	if (!d->taken) {
		rc = take_own(t, d, me);
		if (rc)
			return rc;
	}
	if (!d->role) {
		if (!d->folded && ibmc__xfer_done(&d->xs, 0)) {
			/* even op odd: the lower rank's vector on the left */
			ibmc__reduce(a->op, a->dtype, d->vec[0], d->fold_in,
				     a->count);
			if (len)
				memcpy(d->vec[0], d->fold_in, len);
			d->folded = 1;
		}
		while (d->folded && d->round <= d->rounds) {
			k = d->round;
			if (k > 0) {
				if (!ibmc__xfer_done(&d->xs, 2 + 2 * (k - 1)))
					break;
				partner = d->newrank ^ (1 << (k - 1));
				/* vec[k] = lower op higher, from vec[k-1] and
				 * what the partner sent */
				memcpy(d->vec[k], d->in[k - 1], len);
				if (d->newrank < partner) {
					ibmc__reduce(a->op, a->dtype,
						     d->vec[k - 1], d->vec[k],
						     a->count);
				} else {
					memcpy(d->vec[k], d->vec[k - 1], len);
					ibmc__reduce(a->op, a->dtype,
						     d->in[k - 1], d->vec[k],
						     a->count);
				}
			}
			if (k < d->rounds) {
				rc = ibmc__xfer_post(&d->xs, 3 + 2 * k, 1,
						     real_rank(a, d->newrank ^
							       (1 << k), rem),
						     ibmc__ar_tag(a, 2 + k),
						     d->vec[k], len);
				if (rc)
					return rc;
			} else {
				if (len)
					memcpy(a->buf, d->vec[k], len);
				if (me < 2 * rem) {
					rc = ibmc__xfer_post(&d->xs, 1, 1,
							     ibmc__ar_member(a,
								     me + 1),
							     ibmc__ar_tag(a, 1),
							     d->vec[k], len);
					if (rc)
						return rc;
				}
			}
			d->round++;
		}
	}
	ibmc__xfers_progress(&d->xs, now);
	return ibmc__xfers_result(&d->xs, d->role || d->round > d->rounds);
}

static void complete(struct ibmc__task *t, int rc)
{
	ibmc__ar_count(t->comm, rc, IBMC__AR_RD);
}

static void fini(struct ibmc__task *t)
{
	struct rd *d = t->priv;
	int k;

	if (!d)
		return;
	ibmc__xfers_fini(&d->xs);
	for (k = 0; d->vec && k <= d->rounds; k++) {
		free(d->vec[k]);
		free(d->in[k]);
	}
	free(d->vec);
	free(d->in);
	free(d->fold_in);
	free(d->a);
	free(d);
}

const struct ibmc__task_ops ibmc__allreduce_rd_ops = {
	.start = start,
	.input = ibmc__xfers_task_input,
	.progress = progress,
	.deadline = ibmc__xfers_task_deadline,
	.complete = complete,
	.late = ibmc__xfers_task_input,
	.fini = fini,
	.waits_for = ibmc__xfers_task_waits_for,
};
