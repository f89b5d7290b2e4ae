/* SPDX-License-Identifier: BSD-3-Clause */
/* Building and tearing down a job's groups inside OpenSM, exactly as the
 * SA would for a join, but all at once and before anyone asks. */
#ifndef IBMCAST_OSM_BUILDER_H
#define IBMCAST_OSM_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "plugin.h"
#include "registry.h"

struct osm_port;
struct osm_subn;
struct osm_opensm;
struct osm_mgrp;
struct _ib_member_rec;

/* The active HCA ports of a set of nodes, and the slowest rate and
 * smallest MTU among them. */
struct member_set {
	struct osm_port **ports;
	size_t count, cap;
	uint8_t mtu, rate;
};

/* Under osm->lock: collects every active HCA port of the named nodes into
 * m (m->ports is the caller's to free). -ENOENT with err and detail set
 * when a node has no active port (its ports found so far are kept in m),
 * -ENOMEM. */
int ibmc__builder_resolve(struct osm_subn *subn, char *const *names,
			  size_t count, struct member_set *m,
			  enum ibmc_err *err, char *detail, size_t dlen);

/* Under osm->lock: port joins mgrp as a full member with rec (the group's
 * record; its port GID and join state are set here), as a member's SA
 * join would; OpenSM then reroutes the MLID. false if OpenSM could not. */
bool ibmc__builder_join(struct osm_opensm *osm, struct osm_mgrp *mgrp,
			struct osm_port *port, struct _ib_member_rec *rec);

/* Create job's ngroups groups, with indices first_index and on, spanning
 * every active HCA port of the named nodes (matched against the first
 * word of each CA's NodeDescription). Takes osm->lock exclusively. On
 * success fills groups[0..ngroups) and *ports; on failure creates nothing
 * and returns -errno with *err and detail set (unknown_node, no_mlid,
 * busy, internal). */
int ibmc__builder_create(struct ibmc_plugin *p, uint32_t job,
			 char *const *names, size_t count,
			 unsigned first_index, unsigned ngroups,
			 uint32_t qkey, uint16_t pkey,
			 struct ibmc_group *groups, unsigned *ports,
			 enum ibmc_err *err, char *detail, size_t detail_len);

/* Make an existing group's members exactly the active HCA ports of the
 * named nodes: ports of other nodes leave it, missing ones join (joins
 * first, so the group never empties). OpenSM then recomputes its tree;
 * the old tree keeps reaching every remaining member meanwhile. Takes
 * osm->lock exclusively. 0 with *members set (ports now in the group,
 * *changed whether any joined or left), or -errno with *err and detail
 * (unknown_node, busy, internal). */
int ibmc__builder_reshape(struct ibmc_plugin *p, const uint8_t mgid[16],
			  char *const *names, size_t count, unsigned *members,
			  bool *changed, enum ibmc_err *err, char *detail,
			  size_t detail_len);

/* Remove the groups (by MGID, so it is safe after OpenSM rebuilt them).
 * Takes osm->lock exclusively. OpenSM then clears their MFT entries. */
void ibmc__builder_destroy(struct ibmc_plugin *p,
			   const struct ibmc_group *groups, unsigned ngroups);

/* MLID space: usable MLIDs and those in use by any group. */
void ibmc__builder_mlid_usage(struct ibmc_plugin *p, unsigned *total,
			      unsigned *used);

#endif
