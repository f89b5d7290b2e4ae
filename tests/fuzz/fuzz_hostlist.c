/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for hostlist expressions alone: the input, up to its
 * first NUL, is a "nodes" value as a reserve request would carry it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *expr = malloc(size + 1);

	FUZZ_CHECK(expr);
	memcpy(expr, data, size);
	expr[size] = '\0'; /* the decoder refuses "\u0000" in nodes */
	fuzz_check_hostlist(expr, FUZZ_MAX_NODES);
	free(expr);
	return 0;
}
