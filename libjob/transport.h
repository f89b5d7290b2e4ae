/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.h - how libjob's protocols reach the fabric.
 *
 * Reliability never depends on the transport: the collectives (bcast.c,
 * p2p.c) speak only through this ops table, which offers exactly what a UD
 * queue pair offers: unreliable datagrams up to mtu bytes to a peer or to an
 * attached multicast group, and a receive queue. Implementations:
 *   sim      - the simulated fabric's data plane daemon (tr_sim.c)
 *   verbs    - real hardware: UD QP, ibv_attach_mcast, AHs (tr_verbs.c)
 *   loopback - in-process, for deterministic protocol tests with injected
 *              loss, duplication and reordering (tr_loopback.c)
 *
 * One transport instance per context (one QP per process); every
 * communicator of the context shares it, and the protocol header carries the
 * communicator and sender so that receivers demultiplex.
 */
#ifndef IBMCAST_LIBJOB_TRANSPORT_H
#define IBMCAST_LIBJOB_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/groups.h"

/* An endpoint address as exchanged through the bootstrap: opaque to all but
 * its transport (sim/verbs: LID, QPN, GID; loopback: hub slot). */
#define IBMC_TR_ADDR_LEN 32
struct ibmc_tr_addr {
	uint8_t bytes[IBMC_TR_ADDR_LEN];
};

/* One multicast group of the job's pool, struct ibmc_tr_group, is defined
 * with the IBMCAST_GROUPS codec that fills it. */

/* An SA join (MCMemberRecord Set, full member) of the transport's port:
 * with create, the components that create the group when it does not
 * exist yet (seed 000's "create"); without, a plain join. */
struct ibmc_tr_join {
	uint8_t mgid[16];
	int create;
	uint32_t qkey;		/* create: the group's Q_Key */
	uint16_t pkey;		/* create: 0 means 0xffff */
	uint32_t mtu;		/* create: bytes, 0 leaves it to the SA */
};

/* What a transport is opened with (from the environment, see context.c). */
struct ibmc_tr_config {
	const char *node;	/* this node's name (IBMCAST_NODE) */
	uint32_t qkey;		/* the job's Q_Key (0: transport default) */
	const char *sim_socket;	/* sim: $IBMCAST_SIM_DATAPLANE */
	const char *device;	/* verbs: HCA name or NULL for the first */
	int port;		/* verbs: port number, 0 = 1 */
	const char *hub;	/* loopback: hub name shared by the ranks */
	int rank, size;		/* loopback: slot in the hub */
};

/* A received datagram. data stays valid until the next recv on the same
 * transport. */
struct ibmc_tr_pkt {
	const void *data;
	size_t len;
	int is_mcast;
	uint64_t model_ns;	/* modeled arrival (model_take), 0: none */
};

struct ibmc_tr;	/* a transport instance; each implementation defines it */

struct ibmc_tr_ops {
	const char *name;
	int (*open)(const struct ibmc_tr_config *cfg, struct ibmc_tr **tr);
	void (*close)(struct ibmc_tr *tr);
	int (*local_addr)(struct ibmc_tr *tr, struct ibmc_tr_addr *addr);
	/* Largest datagram (header included) to a peer / to a group. */
	size_t (*mtu)(struct ibmc_tr *tr);
	/* Resolve a peer's address once (an AH on verbs): >= 0 handle or -errno. */
	int (*peer_add)(struct ibmc_tr *tr, const struct ibmc_tr_addr *addr);
	int (*send)(struct ibmc_tr *tr, int peer, const struct iovec *iov,
		    int iovcnt);
	/* 0 when the transport can multicast at all, -ENOTSUP if not. */
	int (*mcast_supported)(struct ibmc_tr *tr);
	/* Attach the QP to a group: >= 0 group handle or -errno. Local only;
	 * never an SA join. */
	int (*mcast_attach)(struct ibmc_tr *tr, const struct ibmc_tr_group *g);
	int (*mcast_detach)(struct ibmc_tr *tr, int group);
	/* Optional (NULL: -ENOTSUP): join this port to a group through the
	 * real SA, blocking and bounded: 0 and *g filled from the SA's
	 * answer (MLID, Q_Key, P_Key, MTU), or -errno. Leave: the
	 * MCMemberRecord Delete of that join. Attaching stays separate. */
	int (*mcast_join)(struct ibmc_tr *tr, const struct ibmc_tr_join *j,
			  struct ibmc_tr_group *g);
	int (*mcast_leave)(struct ibmc_tr *tr, const uint8_t mgid[16]);
	int (*mcast_send)(struct ibmc_tr *tr, int group,
			  const struct iovec *iov, int iovcnt);
	/* Wait up to timeout_ms (0: poll, -1: forever) for one datagram:
	 * 0 and *pkt filled, -ETIMEDOUT when none came, other -errno on a dead
	 * transport. */
	int (*recv)(struct ibmc_tr *tr, struct ibmc_tr_pkt *pkt, int timeout_ms);
	/* Optional: wait up to timeout_ms until a datagram may be ready,
	 * consuming nothing; 0, or -ETIMEDOUT. Unlike every other op it may
	 * run while another thread is in recv (the progress thread waits
	 * with it outside the library lock); a spurious 0 is harmless. */
	int (*wait)(struct ibmc_tr *tr, int timeout_ms);
	/* Optional, transports that keep a modeled clock (sim; libjob/model.h):
	 * take a received packet's modeled arrival into the clock (a message
	 * the protocol needed), and make the next sends cost no modeled time
	 * (on; stamped at_ns unless 0) or their ordinary cost again (off). */
	void (*model_take)(struct ibmc_tr *tr, uint64_t arrival_ns);
	void (*model_quiet)(struct ibmc_tr *tr, int on, uint64_t at_ns);
	uint64_t (*model_clock)(struct ibmc_tr *tr);
};

extern const struct ibmc_tr_ops ibmc__tr_sim_ops;
extern const struct ibmc_tr_ops ibmc__tr_loopback_ops;
#ifdef IBMC_HAVE_VERBS
extern const struct ibmc_tr_ops ibmc__tr_verbs_ops;
#endif

/* The ops table by name ("sim", "verbs", "loopback"), or NULL. */
const struct ibmc_tr_ops *ibmc__tr_find(const char *name);

/*
 * Loopback fault injection, for tests: applied to every datagram of the hub
 * (probabilities in parts per million; seed makes a run reproducible).
 * Set before or while the ranks run; affects later datagrams.
 */
struct ibmc_loopback_faults {
	uint32_t loss_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm;	/* held back and delivered after the next one */
	uint32_t mcast_broken;	/* 1: multicast datagrams are all lost */
	uint64_t seed;
};
int ibmc__loopback_set_faults(const char *hub,
			      const struct ibmc_loopback_faults *f);

#endif /* IBMCAST_LIBJOB_TRANSPORT_H */
