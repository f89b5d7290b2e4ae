/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dataplane.h - the simulated fabric's data plane daemon (ibmcast-dataplane):
 * its state and the functions its files share. One poll loop, one thread.
 *
 * Staleness bound: a packet is forwarded by the switch tables as they were
 * last read over SMP. The MFT blocks of every MLID in use (a QP attached,
 * or a send within the last idle period) are re-read every mft_ms
 * (default 15 ms) in a pass that starts no earlier than the previous one
 * ended; so the tables used at time t were read at most mft_ms + one pass
 * (a few ms; at worst smp_timeout_ms x 3 when ibsim loses an answer) before
 * t. LFTs are re-read every lft_ms (default 1000 ms). A packet for an MLID
 * whose MFTs were never read yet is dropped (cause "mft_unread"), and the
 * read is started at once.
 *
 * Topology: the links are those discovered at start and since. Every
 * topo_ms (default 1000 ms) the PortInfo of every switch port is read; a
 * link whose switch end is not Active carries nothing (cause "link_down")
 * from the answer that says so until one that finds it Active again. An
 * Active port the model has no link for starts a new discovery, which
 * pauses the table reads (the daemon's own SMP port is closed while
 * libibnetdisc runs) and appends the new nodes and links.
 */
#ifndef IBMCAST_DATAPLANE_H
#define IBMCAST_DATAPLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim-fabric/dataplane_timeline.h"
#include "sim-fabric/dataplane_wire.h"
#include "sim-fabric/fabric_model.h"

/* ---- MADs over our one umad port (dataplane_mad.c) ---------------------- */

struct dp_mad;
typedef void (*dp_mad_done_fn)(void *arg, int status, const uint8_t *mad);

struct dp_mad_req {
	uint8_t mgmt_class;	/* IB_SMI_CLASS or IB_SA_CLASS */
	uint8_t method;
	uint16_t attr_id;
	uint32_t attr_mod;
	uint16_t dlid;
	uint64_t comp_mask;	/* SA */
	uint8_t data[200];	/* SMP: 64 bytes used; SA: the record */
	dp_mad_done_fn done;	/* status 0 (mad = the answer) or -errno */
	void *arg;
	/* engine's */
	uint32_t tid;
	int tries;
	uint64_t deadline;
	struct dp_mad_req *next;
};

int dp_mad_open(struct dp_mad **out, int timeout_ms, int window);
void dp_mad_close(struct dp_mad *m);
/* Queue a request (copied). 0 or -errno. */
int dp_mad_submit(struct dp_mad *m, const struct dp_mad_req *r);
/* Send, receive, time out. Returns how many requests are still under way. */
int dp_mad_progress(struct dp_mad *m);
unsigned long dp_mad_count(struct dp_mad *m, unsigned long *errors);

/* ---- faults (dataplane_faults.c) ---------------------------------------- */

enum dp_scope { DP_SCOPE_ALL, DP_SCOPE_MC, DP_SCOPE_UC };

struct dp_faults {
	double loss, dup, reorder;	/* per delivered copy */
	int delay_ms;			/* every delivered copy */
	uint64_t drop_every;		/* drop sends n % every == 0 */
	uint64_t drop_from, drop_to;	/* drop sends numbered from..to */
	uint64_t npattern;		/* sends numbered since set */
	int scope;
	uint64_t seed, rng;
	double *link_loss;		/* [nlink] */
};

uint64_t dp_rand(struct dp_faults *f);
bool dp_chance(struct dp_faults *f, double p);

/* ---- modeled time (dataplane_model.c) ----------------------------------- */

struct dataplane;

/* The fabric's timing model, LogGP-like (ibmcast-dataplane(8), MODELED
 * TIME). Parameters are global; the state (when each link direction and
 * each HCA's injection is busy until) is per link and per HCA. */
struct dp_model {
	char name[16];		/* the preset it started from */
	double link_gbps;	/* per link direction, data rate */
	double inj_gbps;	/* HCA injection */
	uint32_t link_ns;	/* propagation per link */
	uint32_t switch_ns;	/* forwarding per switch hop */
	uint32_t o_s_ns, o_r_ns;	/* CPU overheads per message */
	uint32_t gap_ns;	/* HCA: least time between two messages */
	uint32_t hdr_bytes;	/* per packet on the wire (UD headers) */
	uint32_t grh_bytes;	/* more per multicast packet (GRH) */
	struct dp_timeline *link_busy;	/* [nlink]: modeled busy times */
	struct dp_timeline *hca_busy;	/* [nnode] */
};

int dp_model_init(struct dataplane *dp, const char *preset);
void dp_model_free(struct dataplane *dp);
/* Load a preset's parameters (state kept); -ENOENT if none such. */
int dp_model_preset(struct dp_model *m, const char *name);
const char *dp_model_presets(void);
/* One packet of len payload bytes leaves HCA hca, handed over at t:
 * modeled time its head enters the first link (injection queue and gap).
 * charge false: an unmodeled packet, which neither waits nor occupies. */
uint64_t dp_model_inject(struct dataplane *dp, int hca, uint64_t t,
			 size_t len, bool mc, bool charge);
/* Its head reaches link at ready: when it starts crossing (FIFO behind
 * the link's earlier packets, in the order the daemon handles them). */
uint64_t dp_model_link(struct dataplane *dp, int link, uint64_t ready,
		       size_t len, bool mc, bool charge);
/* Serialization time of one packet (the slower of injection and link). */
uint64_t dp_model_ser(const struct dp_model *m, size_t len, bool mc);

/* ---- endpoints ----------------------------------------------------------- */

struct dp_qmsg {
	struct dp_qmsg *next;
	uint64_t due_ns;	/* delay queue only */
	uint64_t queued_ns;	/* endpoint queue: when it began to wait */
	struct dp_ep *ep;	/* delay queue only */
	size_t len;
	uint8_t data[];
};

struct dp_attach {
	uint8_t mgid[16];
	uint16_t mlid;
};

struct dp_ep {
	int fd;
	uint64_t id;
	bool hello;
	int hca;		/* node index */
	uint32_t qpn, qkey;
	char node[IBMC_DP_NODE_MAX];
	struct dp_attach *att;
	int natt, att_cap;
	struct dp_qmsg *qhead, *qtail;	/* waiting for the socket */
	size_t qbytes;
	struct dp_qmsg *held;		/* reorder: goes after the next one */
	uint64_t held_ns;
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes, rq_overflow, errors;
	uint64_t expired;		/* dropped past dp->lifetime_ns */
	bool dead;
	struct dp_ep *next;		/* all endpoints */
	struct dp_ep *hnext;		/* endpoints of the same HCA */
};

/* ---- multicast state per MLID (dataplane_tables.c) ---------------------- */

struct dp_tree_edge {
	int link;
	int parent;		/* edge index, -1: the sender's uplink */
	int hca;		/* node index reached, or -1 for a switch */
};

struct dp_tree {
	int nedge;
	struct dp_tree_edge e[];
};

struct dp_mlid {
	uint16_t mlid;
	int attached;
	uint64_t last_send_ns;
	bool read;		/* a whole pass has read it */
	uint16_t **mask;	/* [switch node][pos]; NULL for HCAs */
	struct dp_tree **tree;	/* [source HCA node], lazily built */
};

/* ---- counters ------------------------------------------------------------ */

enum dp_drop {
	DP_DROP_LOSS,		/* random loss ("loss") */
	DP_DROP_LINK_LOSS,	/* per-link loss */
	DP_DROP_PATTERN,	/* drop_every / drop_from..drop_to */
	DP_DROP_NO_ROUTE,	/* LFT/MFT carries it nowhere further */
	DP_DROP_MFT_UNREAD,
	DP_DROP_LOOP,		/* reached a switch twice / hop limit */
	DP_DROP_NO_QP,		/* no such QPN at the destination */
	DP_DROP_QKEY,
	DP_DROP_RQ_OVERFLOW,
	DP_DROP_LINK_DOWN,	/* the link is not Active (PortInfo) */
	DP_DROP_LIFETIME,	/* waited past --lifetime-ms for its QP */
	DP_DROP_MAX
};

extern const char *const dp_drop_names[DP_DROP_MAX];

struct dp_link_ctr {
	uint64_t pkts, bytes;
	/* Of those, the unmodeled ones (IBMC_DP_SEND_UNMODELED): loss
	 * recovery and real-time timers, which a lossless fabric whose
	 * hosts keep up would not carry; the rest is what the collectives
	 * need. */
	uint64_t recovery_pkts, recovery_bytes;
	uint64_t drops[DP_DROP_MAX];
};

/* ---- the daemon ---------------------------------------------------------- */

struct dp_sa_op;

/* libibmcast's largest control packet (IBMC__WIRE_CTL, libjob/wire.h):
 * unicast sends up to this size are counted apart (uc_small), so that
 * acknowledgments can be told from data on the links. */
#define DP_SMALL_BYTES 36

struct dataplane {
	struct fabric_model fm;
	struct dp_model model;
	struct dp_mad *mad;
	int smp_timeout_ms;
	int mft_ms, lft_ms, idle_ms;
	uint64_t rq_bytes;		/* per endpoint queue in the daemon */
	uint64_t lifetime_ns;		/* a packet's longest wait in it */
	int rt_prio;			/* SCHED_RR's while endpoints exist */
	bool rt_on;
	/* tables */
	uint8_t **lft;			/* [switch node][lid] */
	struct dp_mlid **mlid;		/* [mlid - 0xc000] */
	int lft_inflight, mft_inflight;
	uint64_t lft_next_ns, mft_next_ns, mft_pass_start_ns;
	uint64_t lft_passes, mft_passes, lft_as_of_ns, mft_as_of_ns;
	struct dp_mlid **mft_pass;	/* the MLIDs the running pass reads */
	int nmft_pass;
	bool lft_ready;
	/* topology (dataplane_topo.c) */
	int topo_ms;
	bool *link_down;		/* [nlink] */
	int links_down, topo_inflight;
	int topo_sw, topo_port;		/* the running pass's cursor */
	bool topo_running;
	bool topo_grew;			/* an Active port with no link */
	uint64_t topo_next_ns, rediscover_after_ns, rediscover_wait_ns;
	uint64_t topo_passes, rediscoveries, link_changes;
	unsigned long smps_before, smp_errors_before; /* closed SMP ports */
	/* endpoints */
	int listen_fd, ctl_fd;
	struct dp_ep *eps;
	struct dp_ep **hca_eps;		/* [node] */
	uint32_t *next_qpn;		/* [node] */
	uint64_t next_ep_id;
	int nep;
	struct dp_qmsg *delay_head, *delay_tail;
	/* control clients */
	struct dp_ctl_client *ctls;
	/* SA proxy */
	struct dp_sa_op *sa_ops;
	/* counters */
	struct dp_link_ctr *lc;		/* [nlink] */
	uint64_t drops[DP_DROP_MAX];
	uint64_t sends, delivered, bad_msgs;
	uint64_t mc_sends;	/* of sends, multicast ones */
	uint64_t uc_small;	/* of sends, unicast ones of at most
				 * DP_SMALL_BYTES: a job library's control
				 * packets (acks, NACKs, FINs, probes) */
	uint64_t nsend;			/* all sends, for patterns */
	struct dp_faults faults;
	uint64_t start_ns;
	volatile int stop;
};

/* dataplane_tables.c */
int dp_tables_init(struct dataplane *dp);
void dp_tables_free(struct dataplane *dp);
void dp_tables_tick(struct dataplane *dp, uint64_t now);
struct dp_mlid *dp_mlid_get(struct dataplane *dp, uint16_t mlid, bool create);
const struct dp_tree *dp_mlid_tree(struct dataplane *dp, struct dp_mlid *m,
				   int src_hca);
uint64_t dp_tables_next_ns(struct dataplane *dp);

/* Grow the per-node and per-LID tables after the model grew from nnode
 * nodes and LIDs up to max_lid; every cached tree is dropped. */
int dp_tables_grow(struct dataplane *dp, int nnode, uint16_t max_lid);

/* dataplane_topo.c */
int dp_topo_init(struct dataplane *dp);
void dp_topo_free(struct dataplane *dp);
void dp_topo_tick(struct dataplane *dp, uint64_t now);
/* A discovery is due: start no new table reads, let the others finish. */
bool dp_topo_quiesce(const struct dataplane *dp, uint64_t now);

/* dataplane_fwd.c */
void dp_forward_uc(struct dataplane *dp, struct dp_ep *src,
		   const struct ibmc_dp_send_uc *s, const void *pl,
		   size_t len);
void dp_forward_mc(struct dataplane *dp, struct dp_ep *src,
		   const struct ibmc_dp_send_mc *s, const void *pl,
		   size_t len);
void dp_delay_tick(struct dataplane *dp, uint64_t now);
uint64_t dp_delay_next_ns(struct dataplane *dp);

/* dataplane_ep.c */
int dp_ep_accept(struct dataplane *dp);
void dp_ep_input(struct dataplane *dp, struct dp_ep *ep);
void dp_ep_flush(struct dataplane *dp, struct dp_ep *ep);
void dp_ep_reap(struct dataplane *dp);
void dp_ep_free_all(struct dataplane *dp);
/* Queue or send one message to ep; ctl messages are never dropped. */
void dp_ep_put(struct dataplane *dp, struct dp_ep *ep, const void *hdr,
	       size_t hlen, const void *pl, size_t plen, bool ctl);
void dp_ep_deliver_msg(struct dataplane *dp, struct dp_ep *ep,
		       struct dp_qmsg *m);
void dp_ep_error(struct dataplane *dp, struct dp_ep *ep, int err,
		 const char *msg);
void dp_ep_reply(struct dataplane *dp, struct dp_ep *ep, uint16_t type,
		 const void *body, size_t blen);

/* dataplane_ctl.c */
struct dp_ctl_client;
int dp_ctl_accept(struct dataplane *dp);
void dp_ctl_input(struct dataplane *dp, struct dp_ctl_client *c);
void dp_ctl_reap(struct dataplane *dp);
int dp_ctl_fd(struct dp_ctl_client *c);
struct dp_ctl_client *dp_ctl_next(struct dp_ctl_client *c);
void dp_ctl_free_all(struct dataplane *dp);

/* dataplane_sa.c */
void dp_sa_join(struct dataplane *dp, struct dp_ep *ep,
		const struct ibmc_dp_join *j, bool leave);
void dp_sa_forget(struct dataplane *dp, struct dp_ep *ep);
void dp_sa_free_all(struct dataplane *dp);

#endif
