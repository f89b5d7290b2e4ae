/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ud_peers.h - the peer table of a UD transport (sim, verbs): one entry per
 * distinct (LID, QPN), so that ranks sharing an endpoint share an index
 * and, for verbs, one address handle.
 */
#ifndef IBMCAST_LIBJOB_UD_PEERS_H
#define IBMCAST_LIBJOB_UD_PEERS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct ibmc_ud_peer {
	uint16_t lid;
	uint32_t qpn;
	void *ah;		/* the transport's own, e.g. a struct ibv_ah */
};

struct ibmc_ud_peers {
	struct ibmc_ud_peer *v;
	int n, cap;
};

/* The index of (lid, qpn), or -ENOENT. */
static inline int ibmc__ud_peers_find(const struct ibmc_ud_peers *t,
				      uint16_t lid, uint32_t qpn)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->v[i].lid == lid && t->v[i].qpn == qpn)
			return i;
	return -ENOENT;
}

/* Appends a peer the caller found missing: its index, or -ENOMEM. */
static inline int ibmc__ud_peers_add(struct ibmc_ud_peers *t, uint16_t lid,
				     uint32_t qpn, void *ah)
{
	if (t->n == t->cap) {
		int cap = t->cap * 2 + 16;
		struct ibmc_ud_peer *v;

		v = realloc(t->v, sizeof(*v) * (size_t)cap);

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n].lid = lid;
	t->v[t->n].qpn = qpn;
	t->v[t->n].ah = ah;
	return t->n++;
}

/* Peer i, or NULL for an index the table never handed out. */
static inline const struct ibmc_ud_peer *
ibmc__ud_peers_get(const struct ibmc_ud_peers *t, int i)
{
	return i >= 0 && i < t->n ? &t->v[i] : NULL;
}

/* Frees the table itself; the caller releases each ah first. */
static inline void ibmc__ud_peers_free(struct ibmc_ud_peers *t)
{
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
}

#endif /* IBMCAST_LIBJOB_UD_PEERS_H */
