/* SPDX-License-Identifier: BSD-3-Clause */
/* Binomial and postal trees: for every size up to 70, every root and
 * several lambdas, each rank is reached exactly once from the root, parents
 * list their children, heights are consistent, and a postal
 * tree worked out by hand matches. */
#include "config.h"

#include <stdlib.h>

#include "libjob/tree.h"
#include "libjob/wire.h"
#include "tests/tap.h"

static int check(int algo, int lambda, int n, int root)
{
	struct ibmc__tree *t = calloc((size_t)n, sizeof(*t));
	int me, i, bad = 0;

	for (me = 0; me < n; me++)
		if (ibmc__tree_build(&t[me], algo, lambda, n, root, me))
			bad++;
	for (me = 0; me < n && !bad; me++) {
		int hops = 0, r = me, h = 0;

		if ((me == root) != (t[me].parent < 0))
			bad++;
		while (r != root && hops <= n) {	/* reaches the root */
			r = t[r].parent;
			hops++;
		}
		if (r != root)
			bad++;
		if (t[me].parent >= 0) {
			int found = 0;

			for (i = 0; i < t[t[me].parent].nchildren; i++)
				found += t[t[me].parent].children[i] == me;
			bad += found != 1;
		}
		for (i = 0; i < t[me].nchildren; i++) {
			int c = t[me].children[i];

			bad += t[c].parent != me;
			if (t[c].height + 1 > h)
				h = t[c].height + 1;
		}
		bad += h != t[me].height;
	}
	for (me = 0; me < n; me++)
		ibmc__tree_free(&t[me]);
	free(t);
	return bad;
}

int main(void)
{
	int n, root, bad_b = 0, bad_p = 0, lambda;
	struct ibmc__tree t;

	for (n = 1; n <= 70; n++)
		for (root = 0; root < n; root++) {
			bad_b += check(IBMC__A_BINOMIAL, 1, n, root);
			for (lambda = 1; lambda <= 4; lambda++)
				bad_p += check(IBMC__A_POSTAL, lambda, n, root);
		}
	tap_is_int(bad_b, 0, "binomial trees span every rank once, 1..70 ranks, every root");
	tap_is_int(bad_p, 0, "postal trees (lambda 1..4) span every rank once");

	ibmc__tree_build(&t, IBMC__A_BINOMIAL, 1, 16, 0, 0);
	tap_is_int(t.nchildren, 4, "binomial root of 16 has 4 children");
	tap_is_int(t.children[0], 8, "  ... the farthest (largest subtree) first");
	tap_is_int(t.height, 4, "  ... height 4 (4 ack cycles)");
	ibmc__tree_free(&t);
	ibmc__tree_build(&t, IBMC__A_BINOMIAL, 1, 16, 5, 4);
	tap_is_int(t.parent, 3,
		   "binomial rooted at 5 of 16: rank 4 (relative 15) acks to rank 3 (relative 14)");
	ibmc__tree_free(&t);
	/* Postal, lambda 3, 10 ranks: N(t) = 1,1,1,2,3,4,6,9,13 so it
	 * finishes at t = 8; the root's sends at 0, 1, 2 hand off subtrees
	 * of N(5) = 4, N(4) = 3 and the remaining 2 ranks: 6..9, 3..5, 1..2. */
	ibmc__tree_build(&t, IBMC__A_POSTAL, 3, 10, 0, 0);
	tap_ok(t.nchildren == 3 && t.children[0] == 6 && t.children[1] == 3 &&
	       t.children[2] == 1,
	       "postal lambda 3 on 10 ranks: root serves 6, 3, 1 (got %d children, first %d)",
	       t.nchildren, t.nchildren ? t.children[0] : -1);
	ibmc__tree_free(&t);
	tap_plan(tap__n);
	return tap_done();
}
