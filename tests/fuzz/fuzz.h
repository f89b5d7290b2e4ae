/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by the fuzz targets: the invariant check that aborts (libFuzzer
 * and the corpus replay both report an abort with the input) and the
 * hostlist round-trip check used by the request and hostlist targets. */
#ifndef IBMCAST_TESTS_FUZZ_H
#define IBMCAST_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The server's own bound on a reservation (osm-plugin's max_nodes
 * default); the fuzz targets expand with it. */
#define FUZZ_MAX_NODES 65536

void fuzz_fail(const char *what, const char *file, int line)
	__attribute__((noreturn));

/* Not assert(): the checks must stay when NDEBUG is defined. */
#define FUZZ_CHECK(cond)                                                     \
	do {                                                                 \
		if (!(cond))                                                 \
			fuzz_fail(#cond, __FILE__, __LINE__);                \
	} while (0)

/* Expand expr with max_names, check the result, and when it succeeded
 * check that its compressed form expands to the same names and is a
 * fixed point of compress(expand(.)). Returns expand's result. */
int fuzz_check_hostlist(const char *expr, size_t max_names);

/* The libFuzzer entry point each target defines; replay.c calls it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
