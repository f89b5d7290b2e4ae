/* SPDX-License-Identifier: BSD-3-Clause */
/* The IBMCAST_GROUPS text of docs/environment.md, which the SPANK plugin
 * writes and libjob reads: one codec, so the two cannot drift apart.
 * "MGID/MLID/QKEY/PKEY/MTU" per group, groups one space apart. */
#ifndef IBMCAST_COMMON_GROUPS_H
#define IBMCAST_COMMON_GROUPS_H

#include <stddef.h>
#include <stdint.h>

/* One multicast group of a job's pool (named for libjob's transports,
 * which attach to it). */
struct ibmc_tr_group {
	uint8_t mgid[16];
	uint16_t mlid;
	uint16_t pkey;
	uint32_t qkey;
	uint32_t mtu;		/* bytes */
};

/* The longest entry: MGID 39, four '/', 0x + 4, 0x + 8, 0x + 4, MTU 4
 * digits, NUL. */
#define IBMC_GROUP_STRLEN 70

/* 0 if IBMCAST_GROUPS can carry g: a multicast MGID (ff...), an MLID in
 * 0xc000..0xfffe and an IB MTU (256, 512, 1024, 2048 or 4096 bytes);
 * -EINVAL otherwise. */
int ibmc__group_check(const struct ibmc_tr_group *g);

/* One entry: the MGID in full 8-group form, MLID, Q_Key and P_Key in hex
 * with 0x and zero-padded to their width, the MTU in decimal bytes.
 * 0, or -EINVAL if ibmc__group_check() refuses g. */
int ibmc__group_format(const struct ibmc_tr_group *g,
		       char buf[IBMC_GROUP_STRLEN]);

/* One entry, exactly five non-empty fields; any MGID text form is taken,
 * the hex fields need their 0x. 0, or -EINVAL for a malformed entry or
 * one ibmc__group_check() refuses. */
int ibmc__group_parse(const char *s, struct ibmc_tr_group *g);

/* The list of n (>= 1) groups into a malloc'ed string: 0, -EINVAL (a
 * group ibmc__group_check() refuses) or -ENOMEM. */
int ibmc__groups_format(const struct ibmc_tr_group *g, size_t n,
			char **out);

/*
 * The list into g[0..max), its length in *n. Returns 0, or -E2BIG (more
 * than max groups) or -EINVAL (an empty s, an empty entry from a stray
 * space, or a malformed entry); then *n is the index of the entry at
 * fault and *at where it starts in s (at a space or the terminating NUL
 * for an empty entry).
 */
int ibmc__groups_parse(const char *s, struct ibmc_tr_group *g, int max,
		       int *n, const char **at);

#endif
