/* SPDX-License-Identifier: BSD-3-Clause */
/* Deterministic multicast GIDs and Q_Keys: a group's MGID is a pure function
 * of (job, index, P_Key), so a restarted SM rebuilds the same groups. */
#ifndef IBMCAST_COMMON_MGID_H
#define IBMCAST_COMMON_MGID_H

#include <stddef.h>
#include <stdint.h>

/* MGID layout (network byte order), 128 bits:
 *   ff 12 | 1b ca | pkey(16) | 00 00 | job(32) | 00 00 | index(16)
 * ff: multicast; 1: transient flag; 2: link-local scope; 0x1bca: the
 * ibmcast signature (not IPoIB's 0x401b/0x601b nor SA's 0xa01b). */
#define IBMC_MGID_SIGNATURE 0x1bcaU
#define IBMC_MGID_STRLEN 40 /* "ffff:...:ffff" + NUL */

void ibmc__mgid_derive(uint32_t job, uint16_t index, uint16_t pkey,
		       uint8_t mgid[16]);

/*
 * MGIDs of groups a job creates itself through the SA (libjob's basic,
 * lazy and pool modes, ibmcast(7)):
 *   ff 12 | 1b cb | pkey(16) | job(32) | nonce(16) | serial(32)
 * Another signature (0x1bcb), so they never equal the plugin's groups; the
 * job and a nonce drawn by the job's rank 0 at ibmc_init keep two jobs (and
 * two runs of one job id) apart; serial names the group within the run
 * (libjob: the communicator's id).
 */
#define IBMC_MGID_OWN_SIGNATURE 0x1bcbU
void ibmc__mgid_derive_own(uint32_t job, uint16_t nonce, uint32_t serial,
			   uint16_t pkey, uint8_t mgid[16]);

/* Recover job and index from one of our MGIDs; -EINVAL if not ours. */
int ibmc__mgid_decode(const uint8_t mgid[16], uint32_t *job,
		      uint16_t *index);

/* IPv6-style text, full form with 8 groups of 4 hex digits. */
void ibmc__mgid_format(const uint8_t mgid[16], char buf[IBMC_MGID_STRLEN]);
/* Accepts any inet_pton(AF_INET6) form; -EINVAL otherwise. */
int ibmc__mgid_parse(const char *s, uint8_t mgid[16]);

/* Per-job Q_Key: 0x1bca0000 | low 16 bits of job, never with the
 * controlled-Q_Key bit (bit 31) set. */
uint32_t ibmc__qkey_for_job(uint32_t job);

#endif
