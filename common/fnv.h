/* SPDX-License-Identifier: BSD-3-Clause */
/* FNV-1a, the one non-cryptographic hash of the tree: identities that every
 * rank computes alike, fingerprints and hash-table slots. */
#ifndef IBMCAST_COMMON_FNV_H
#define IBMCAST_COMMON_FNV_H

#include <stddef.h>
#include <stdint.h>

#define IBMC__FNV32_INIT 2166136261u
#define IBMC__FNV64_INIT 0xcbf29ce484222325ULL

/* Both continue from h, so a hash can be fed in pieces: start from the
 * INIT value and pass each result on to the next call. */
static inline uint32_t ibmc__fnv1a32(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--) {
		h ^= *b++;
		h *= 16777619u;
	}
	return h;
}

static inline uint64_t ibmc__fnv1a64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

#endif
