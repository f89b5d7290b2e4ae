/* SPDX-License-Identifier: BSD-3-Clause */
/* A ready pool's groups in the IBMCAST_GROUPS form of docs/environment.md:
 * "MGID/MLID/QKEY/PKEY/MTU" per group, one space apart. */
#ifndef IBMCAST_SPANK_GROUPS_H
#define IBMCAST_SPANK_GROUPS_H

#include <stddef.h>
#include <jansson.h>

/* Build the text from a job object of a wait reply. 0, or -EINVAL (with
 * why naming the field the server got wrong) or -ENOMEM. */
int spank_groups_format(const json_t *job, char **out, unsigned *count,
			char *why, size_t why_len);

/* IBA MTU encoding (1..5) to bytes; 0 for anything else. */
unsigned spank_mtu_bytes(long long enc);

#endif
