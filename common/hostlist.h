/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm hostlist expressions ("node[1-16,20],gpu[01-04]") expanded into
 * names and compressed back for display. */
#ifndef IBMCAST_COMMON_HOSTLIST_H
#define IBMCAST_COMMON_HOSTLIST_H

#include <stddef.h>

struct ibmc_hostlist {
	char **names;
	size_t count;
};

/* Expand expr into out->names in order, duplicates removed (first kept).
 * Zero padding of ranges is kept ("n[08-10]" -> n08 n09 n10).
 * Returns 0, -EINVAL on a syntax error (unbalanced brackets, empty name,
 * reversed or non-numeric range, name longer than 63 bytes), -E2BIG when
 * the expansion would exceed max_names, -ENOMEM. out is empty on error. */
int ibmc__hostlist_expand(const char *expr, size_t max_names,
			  struct ibmc_hostlist *out);
void ibmc__hostlist_free(struct ibmc_hostlist *hl);

/* Compress names into a hostlist expression ("node[1-4,7]"). Names
 * that share a prefix and end in digits are merged into ranges. Returns a
 * malloc'd string or NULL on allocation failure. */
char *ibmc__hostlist_compress(char *const *names, size_t count);

#endif
