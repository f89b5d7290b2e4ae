/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_timeline.c - earliest-fit reservations on one modeled queue
 * (dataplane_timeline.h). */
#include "config.h"

#include <string.h>

#include "sim-fabric/dataplane_timeline.h"

uint64_t dp_timeline_reserve(struct dp_timeline *tl, uint64_t ready,
			     uint64_t occ)
{
	uint64_t t = ready > tl->floor ? ready : tl->floor;
	int i, at;

	for (i = 0; i < tl->n; i++) {
		if (t + occ <= tl->start[i])
			break;		/* fits in the idle time before it */
		if (tl->end[i] > t)
			t = tl->end[i];
	}
	at = i;
	memmove(&tl->start[at + 1], &tl->start[at],
		sizeof(tl->start[0]) * (size_t)(tl->n - at));
	memmove(&tl->end[at + 1], &tl->end[at],
		sizeof(tl->end[0]) * (size_t)(tl->n - at));
	tl->start[at] = t;
	tl->end[at] = t + occ;
	if (++tl->n > DP_TIMELINE_SLOTS) {
		/* Forget the oldest: nothing fits before its end any more. */
		if (tl->end[0] > tl->floor)
			tl->floor = tl->end[0];
		tl->n--;
		memmove(&tl->start[0], &tl->start[1],
			sizeof(tl->start[0]) * (size_t)tl->n);
		memmove(&tl->end[0], &tl->end[1],
			sizeof(tl->end[0]) * (size_t)tl->n);
	}
	return t;
}
