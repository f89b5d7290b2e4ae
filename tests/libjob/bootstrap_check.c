/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_check - exercises ibmc_bootstrap_default() on its own: several
 * allgather rounds of different sizes (multi-chunk for PMI2), every block
 * verified, then one line "rank R of N node NODE rounds K ok" per rank.
 * Exit 0 when all rounds were right, 1 if a block was wrong, 2 when no
 * bootstrap could be made or a round failed.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibmcast/ibmcast.h"

static uint8_t byte_of(int rank, int round, size_t i)
{
	return (uint8_t)(rank * 37 + round * 11 + i * 7 + (i >> 8));
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1, 8, 511, 512, 4000, 100000 };
	int rounds = argc > 1 ? atoi(argv[1]) : 6, r, k, rc, bad = 0;
	const char *node = getenv("IBMCAST_NODE");
	ibmc_bootstrap_t bs;
	uint8_t *in, *out;
	size_t len, i;

	rc = ibmc_bootstrap_default(&bs);
	if (rc) {
		fprintf(stderr, "bootstrap_check: ibmc_bootstrap_default: %s\n",
			ibmc_strerror(rc));
		return 2;
	}
	for (k = 0; k < rounds; k++) {
		len = sizes[k % (int)(sizeof(sizes) / sizeof(sizes[0]))];
		in = malloc(len);
		out = malloc(len * (size_t)bs.size);
		if (!in || !out) {
			free(in);
			free(out);
			ibmc_bootstrap_fini(&bs);
			return 2;
		}
		for (i = 0; i < len; i++)
			in[i] = byte_of(bs.rank, k, i);
		rc = bs.allgather(bs.arg, in, out, len);
		if (rc) {
			fprintf(stderr, "bootstrap_check: rank %d: round %d "
				"(%zu bytes): %s\n", bs.rank, k, len,
				ibmc_strerror(rc));
			free(in);
			free(out);
			ibmc_bootstrap_fini(&bs);
			return 2;
		}
		for (r = 0; r < bs.size; r++)
			for (i = 0; i < len; i++)
				if (out[(size_t)r * len + i] != byte_of(r, k, i)) {
					if (!bad++)
						fprintf(stderr, "bootstrap_check: "
							"rank %d: round %d: "
							"byte %zu of rank %d "
							"wrong\n", bs.rank, k,
							i, r);
					break;
				}
		free(in);
		free(out);
	}
	printf("rank %d of %d node %s rounds %d %s\n", bs.rank, bs.size,
	       node ? node : "-", rounds, bad ? "BAD" : "ok");
	ibmc_bootstrap_fini(&bs);
	return bad ? 1 : 0;
}
