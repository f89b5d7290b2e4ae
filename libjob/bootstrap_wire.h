/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_wire.h - what ibmc_bootstrap_sock() (in each rank) and the
 * rendezvous server of ibmcast-run(1) say to each other.
 *
 * One SOCK_STREAM Unix socket per rank, at $IBMCAST_BOOTSTRAP ("unix:/path").
 * Integers are in host byte order: both ends run on this machine.
 *
 *   rank -> run: struct ibmc_bs_hello
 *   run -> rank: int32_t status (0, or -errno: wrong size, rank taken...)
 *   then any number of allgather rounds, all ranks in the same order:
 *   rank -> run: struct ibmc_bs_round + len bytes (this rank's block)
 *   run -> rank: struct ibmc_bs_result + size * len bytes (when status 0)
 *
 * The server answers a round only when every rank sent its block, so a
 * round is also a barrier. It answers -EINVAL when the ranks disagree on
 * len, and -EPIPE when a rank left (closed its socket) before the round
 * completed: a round can never complete then, and nobody should hang.
 */
#ifndef IBMCAST_LIBJOB_BOOTSTRAP_WIRE_H
#define IBMCAST_LIBJOB_BOOTSTRAP_WIRE_H

#include <stdint.h>

#define IBMC_BS_MAGIC 0x49424d42u	/* "IBMB" */
#define IBMC_BS_VERSION 1
/* Bounds the server enforces (and the client checks before sending). */
#define IBMC_BS_MAX_BLOCK (1u << 20)		/* one rank's block */
#define IBMC_BS_MAX_TOTAL (256u << 20)		/* size * block */
#define IBMC_BS_MAX_RANKS 65536

struct ibmc_bs_hello {
	uint32_t magic;		/* IBMC_BS_MAGIC */
	uint32_t version;	/* IBMC_BS_VERSION */
	int32_t rank;
	int32_t size;
};

struct ibmc_bs_round {
	uint32_t len;		/* bytes of this rank's block that follow */
};

struct ibmc_bs_result {
	int32_t status;		/* 0 or -errno */
	uint32_t len;		/* per-rank block length (size * len follow) */
};

#endif /* IBMCAST_LIBJOB_BOOTSTRAP_WIRE_H */
