/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane_timeline.h - the modeled busy times of one queue (an HCA's
 * injection, a link direction): a packet takes the earliest idle time at
 * or after it is ready that fits it, so that one stamped later but handled
 * first by this daemon (real time's order) does not hold back one stamped
 * earlier where the queue was idle in the model. Handled in stamp order,
 * packets are served first in, first out, as before.
 */
#ifndef IBMCAST_DATAPLANE_TIMELINE_H
#define IBMCAST_DATAPLANE_TIMELINE_H

#include <stdint.h>

/* Busy intervals remembered; older ones count as busy up to their end. */
#define DP_TIMELINE_SLOTS 16

struct dp_timeline {
	uint64_t floor;		/* busy before this (forgotten intervals) */
	int n;
	/* disjoint, by start; one spare for an insertion */
	uint64_t start[DP_TIMELINE_SLOTS + 1], end[DP_TIMELINE_SLOTS + 1];
};

/* Reserve occ ns at the earliest idle time at or after ready that fits
 * it; returns its start. */
uint64_t dp_timeline_reserve(struct dp_timeline *tl, uint64_t ready,
			     uint64_t occ);

#endif
