/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fabric_model.h - the fabric as discovered over SMP (libibnetdisc), in
 * plain arrays: nodes, ports, their peers and one index per link direction.
 * Used by the data plane daemon; nothing here asks OpenSM.
 */
#ifndef IBMCAST_FABRIC_MODEL_H
#define IBMCAST_FABRIC_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#define FM_MLID_BASE 0xc000u
#define FM_MLID_COUNT 0x4000u	/* 0xc000 .. 0xffff */

struct fm_port {
	int peer;		/* node index, -1: not cabled */
	int peer_port;
	int link;		/* link index of the direction out of here */
};

struct fm_node {
	uint64_t guid;
	bool is_switch;
	char desc[65];		/* NodeDescription */
	char name[65];		/* its first word (HCAs: the Slurm node name) */
	uint16_t lid;		/* switch: port 0's LID; HCA: port 1's */
	int hca_port;		/* HCA: the cabled port used */
	uint32_t mtu;		/* HCA: active MTU of hca_port, bytes */
	uint64_t port_guid;	/* HCA: GUID of hca_port */
	uint16_t sm_lid;
	int nports;
	struct fm_port *ports;	/* [0 .. nports] */
	int npos;		/* switch: MFT port groups of 16 */
};

struct fm_link {
	int from, from_port, to, to_port;
};

struct fabric_model {
	struct fm_node *node;
	int nnode;
	struct fm_link *link;
	int nlink;
	uint16_t max_lid;
	int *lid_node;		/* [0 .. max_lid]: node index or -1 */
	uint64_t subnet_prefix;	/* network order as a number, host order */
};

/* Discover the fabric through the umad port this process sees (under
 * umad2sim: ibsim). 0 or -errno; on error *fm is left empty. */
int fm_discover(struct fabric_model *fm);
void fm_free(struct fabric_model *fm);

/* Fold a newer discovery nf into fm without renumbering: nodes are matched
 * by GUID and keep their index, links keep theirs; nodes and links nf has
 * and fm lacks are appended, a port nf finds cabled elsewhere is re-pointed
 * (its link index kept), LIDs are taken from nf. Links nf lacks stay in fm
 * (the caller tracks which are up). Arrays indexed by node, link or LID
 * must then grow to fm's new nnode, nlink and max_lid. 0 or -ENOMEM (fm
 * then unchanged in its counts, possibly with bigger arrays). */
int fm_merge(struct fabric_model *fm, const struct fabric_model *nf);

/* The HCA whose name (NodeDescription's first word) is name: index, -1
 * if none, -2 if not unique. */
int fm_find_hca(const struct fabric_model *fm, const char *name);

/* "desc/port" of one end of a link, for names of links. */
void fm_link_name(const struct fabric_model *fm, int link, char *buf,
		  unsigned len);

#endif
