/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast broadcast: the root multicasts each fragment once to the
 * communicator's pool group, inside a window of IBMCAST_BCAST_WINDOW
 * fragments past what the whole tree acknowledged; the binomial tree of
 * bcast_op.c carries only acks, repairs and retransmissions. When most of
 * the root's children miss the same fragments the root multicasts them
 * again instead of unicasting each, unless the last re-multicast helped
 * nobody (multicast that delivers nothing: group not programmed yet).
 * Only children that acknowledged nothing yet, or were already probed once
 * in vain, are retransmitted to: the rest repair themselves by NACK.
 */
#include "config.h"

#include "libjob/bcast_op.h"

static int push(struct ibmc__op *op)
{
	uint32_t w = (uint32_t)op->comm->ctx->env.window, old = op->sent;

	while (op->sent < op->nfrags && op->sent < op->cum + w) {
		ibmc__op_mcast_frag(op, op->sent, 0);
		op->sent++;
	}
	return op->sent != old;
}

static int retransmit(struct ibmc__op *op, struct ibmc__child **due,
		      int ndue)
{
	uint32_t lo = op->sent, hi, f;
	int i, needy = 0;

	for (i = 0; i < ndue; i++)
		if (due[i]->have < op->sent) {
			needy++;
			if (due[i]->have < lo)
				lo = due[i]->have;
		}
	if (!op->remcast_ok || needy < 2 || 2 * needy < op->tree.nchildren)
		return 0;
	/* A few: acks are coalesced, what each holds beyond is not known,
	 * and their NACKs ask for the rest. */
	hi = lo + 4 < op->sent ? lo + 4 : op->sent;
	for (f = lo; f < hi; f++) {
		int want = 0;

		for (i = 0; i < ndue && !want; i++) {
			struct ibmc__child *c = due[i];

			want = c->have <= f &&
			       !(f > c->have && f - c->have - 1 < 64 &&
				 ((c->mask >> (f - c->have - 1)) & 1));
		}
		if (want)
			ibmc__op_mcast_frag(op, f, 1);
	}
	/* Those children got their retransmission; the rest are probed. */
	for (i = 0; i < ndue; i++)
		if (due[i]->have < op->sent)
			due[i] = NULL;
	op->remcast_ok = 0;
	return needy;
}

const struct ibmc__bcast_strategy ibmc__bcast_mcast = {
	.tree = IBMC__A_BINOMIAL,
	.uses_group = 1,
	.push = push,
	.retransmit = retransmit,
};
