/* SPDX-License-Identifier: BSD-3-Clause */
/* The data plane's modeled queues: first in, first out in stamp order;
 * handled out of stamp order, a packet stamped earlier still takes the
 * idle time before one stamped later (dataplane_timeline.h). */
#include "config.h"

#include <string.h>

#include "sim-fabric/dataplane_timeline.h"
#include "tests/tap.h"

int main(void)
{
	struct dp_timeline tl;
	uint64_t a, b, c;
	int i;

	tap_plan(8);

	memset(&tl, 0, sizeof(tl));
	a = dp_timeline_reserve(&tl, 100, 10);
	b = dp_timeline_reserve(&tl, 105, 10);
	c = dp_timeline_reserve(&tl, 200, 10);
	tap_is_int((long long)a, 100, "stamp order: the first starts when ready");
	tap_is_int((long long)b, 110, "stamp order: the second queues behind it");
	tap_is_int((long long)c, 200, "stamp order: an idle queue serves at once");

	/* Handled later first: the earlier one fits in the idle time. */
	memset(&tl, 0, sizeof(tl));
	b = dp_timeline_reserve(&tl, 1000, 10);
	a = dp_timeline_reserve(&tl, 500, 10);
	tap_is_int((long long)a, 500, "out of order: the earlier one is not held back");
	tap_is_int((long long)b, 1000, "out of order: the later one unmoved");

	/* Too little room before the later one: it goes after it. */
	c = dp_timeline_reserve(&tl, 995, 10);
	tap_is_int((long long)c, 1010, "no room in the gap: after the busy time");

	/* Forgotten intervals count as busy up to their end. */
	memset(&tl, 0, sizeof(tl));
	for (i = 0; i <= DP_TIMELINE_SLOTS; i++)
		dp_timeline_reserve(&tl, 1000 + 100 * (uint64_t)i, 10);
	tap_is_int(tl.n, DP_TIMELINE_SLOTS, "remembers at most its slots");
	tap_is_int((long long)dp_timeline_reserve(&tl, 0, 10), 1010,
		   "nothing fits before a forgotten interval's end");
	return tap_done();
}
