/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcast-mftwatch: an independent check of multicast routes. Discovers the
 * fabric, reads the switches' MFTs over its own SMPs and computes where a
 * multicast packet from each HCA really arrives; never asks OpenSM. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <jansson.h>

#include "common/clock.h"
#include "common/parse.h"

#define MLID_BASE	0xc000u
#define MLID_TOP	0xffffu
#define MAX_MLIDS	64
#define SMP_WINDOW	32	/* SMPs in flight */
#define SMP_TRIES	3
/* umad2sim copies whole simulator packets into receive buffers.
 * The MAD lands at struct ib_user_mad's data, 64 bytes in, where this
 * libibumad's umad_size() says 56: the buffer is sized by the struct, or a
 * receive of the full length would end 8 bytes past it. */
#define UMAD_ROOM	1024

enum { EXIT_DONE = 0, EXIT_NO = 1, EXIT_ERR = 2 };

/* What the reads of one (switch, MLID, position) entry returned so far. */
struct seen {
	bool valid;
	uint16_t val;		/* the latest read's mask */
	uint64_t last_sent;	/* when the latest read was sent */
	uint64_t wrong_sent;	/* the last read sent whose mask differs
				 * from val: 0 if none */
};

struct sw {
	ibnd_node_t *node;
	uint16_t lid;
	int npos;		/* port groups: ports 16*pos .. 16*pos+15 */
	uint16_t *mask;		/* [mlid index][pos], this pass */
	struct seen *seen;	/* [mlid index][pos], every pass */
};

struct hca {
	ibnd_node_t *node;
	const char *name;
};

struct watch {
	ibnd_fabric_t *fabric;
	struct ibmad_port *port;
	int fd, agent;
	void *umad;
	uint32_t tid;
	int smp_tmo_ms;
	struct sw *sw;
	int nsw;
	struct hca *hca;	/* sorted by node pointer */
	int nhca;
	uint16_t mlid[MAX_MLIDS];
	int nmlid;
	unsigned long smps, smp_errors;
	bool announce;		/* say once on stderr that reads went out */
};

/* One (switch, block, position) read. */
struct rd {
	int sw;
	uint16_t block;
	uint8_t pos;
	uint8_t tries;
	bool done;
	uint32_t tid;
	uint64_t deadline;
	uint64_t first_sent, sent;	/* the first try's, the latest's */
};

static void die_usage(void)
{
	fprintf(stderr,
		"usage: ibmcast-mftwatch reach --mlid M [--mlid M...]\n"
		"       ibmcast-mftwatch watch {--mlid M[,M...] | "
		"--mlids-from-stdin} --nodes A,B,...\n"
		"               [--timeout-ms T] [--interval-us U]\n"
		"common: [--smp-timeout-ms T]\n");
	exit(EXIT_ERR);
}

static int cmp_hca(const void *a, const void *b)
{
	const struct hca *x = a, *y = b;

	return x->node < y->node ? -1 : x->node > y->node;
}

static int hca_index(const struct watch *w, const ibnd_node_t *n)
{
	struct hca key = { .node = (ibnd_node_t *)n }, *h;

	h = bsearch(&key, w->hca, (size_t)w->nhca, sizeof(*h), cmp_hca);
	return h ? (int)(h - w->hca) : -1;
}

static int find_hca(const struct watch *w, const char *name)
{
	int i, found = -1;

	for (i = 0; i < w->nhca; i++) {
		if (strcmp(w->hca[i].name, name))
			continue;
		if (found >= 0) {
			fprintf(stderr, "ibmcast-mftwatch: node description "
				"\"%s\" is not unique\n", name);
			return -2;
		}
		found = i;
	}
	return found;
}

static int mlid_index(const struct watch *w, uint16_t mlid)
{
	int i;

	for (i = 0; i < w->nmlid; i++)
		if (w->mlid[i] == mlid)
			return i;
	return -1;
}

static uint16_t *mask_of(const struct watch *w, int s, int mi)
{
	return &w->sw[s].mask[mi * w->sw[s].npos];
}

static bool port_bit(const struct watch *w, int s, int mi, int port)
{
	return mask_of(w, s, mi)[port / 16] & (1u << (port % 16));
}

static int sw_index(const struct watch *w, const ibnd_node_t *n)
{
	int i;

	for (i = 0; i < w->nsw; i++)
		if (w->sw[i].node == n)
			return i;
	return -1;
}

static int discover(struct watch *w)
{
	struct ibnd_config cfg = { 0 };
	ibnd_node_t *n;
	int i;

	w->fabric = ibnd_discover_fabric(NULL, 0, NULL, &cfg);
	if (!w->fabric) {
		fprintf(stderr, "ibmcast-mftwatch: fabric discovery failed\n");
		return -EIO;
	}
	for (n = w->fabric->switches; n; n = n->type_next)
		w->nsw++;
	for (n = w->fabric->ch_adapters; n; n = n->type_next)
		w->nhca++;
	w->sw = calloc((size_t)w->nsw + 1, sizeof(*w->sw));
	w->hca = calloc((size_t)w->nhca + 1, sizeof(*w->hca));
	if (!w->sw || !w->hca)
		return -ENOMEM;
	i = 0;
	for (n = w->fabric->switches; n; n = n->type_next, i++) {
		w->sw[i].node = n;
		w->sw[i].lid = n->smalid;
		if (!w->sw[i].lid && n->ports && n->ports[0])
			w->sw[i].lid = n->ports[0]->base_lid;
		if (!w->sw[i].lid) {
			fprintf(stderr, "ibmcast-mftwatch: switch 0x%016" PRIx64
				" \"%s\" has no LID yet\n", n->guid,
				n->nodedesc);
			return -EAGAIN;
		}
		/* Port 0 is bit 0 of position 0. */
		w->sw[i].npos = (n->numports + 1 + 15) / 16;
		w->sw[i].mask = calloc((size_t)w->sw[i].npos * MAX_MLIDS,
				       sizeof(uint16_t));
		w->sw[i].seen = calloc((size_t)w->sw[i].npos * MAX_MLIDS,
				       sizeof(struct seen));
		if (!w->sw[i].mask || !w->sw[i].seen)
			return -ENOMEM;
	}
	i = 0;
	for (n = w->fabric->ch_adapters; n; n = n->type_next, i++) {
		w->hca[i].node = n;
		w->hca[i].name = n->nodedesc;
	}
	qsort(w->hca, (size_t)w->nhca, sizeof(*w->hca), cmp_hca);
	return 0;
}

static int open_smp(struct watch *w)
{
	int classes[] = { IB_SMI_CLASS, IB_SMI_DIRECT_CLASS };

	w->port = mad_rpc_open_port(NULL, 0, classes, 2);
	if (!w->port) {
		fprintf(stderr, "ibmcast-mftwatch: cannot open a umad port\n");
		return -EIO;
	}
	w->fd = mad_rpc_portid(w->port);
	w->agent = mad_rpc_class_agent(w->port, IB_SMI_CLASS);
	w->umad = calloc(1, sizeof(struct ib_user_mad) + UMAD_ROOM);
	if (!w->umad)
		return -ENOMEM;
	return 0;
}

static int send_rd(struct watch *w, struct rd *r, uint32_t idx)
{
	ib_rpc_t rpc = { 0 };
	ib_portid_t dst = { 0 };

	memset(w->umad, 0, sizeof(struct ib_user_mad) + UMAD_ROOM);
	rpc.mgtclass = IB_SMI_CLASS;
	rpc.method = IB_MAD_METHOD_GET;
	rpc.attr.id = IB_ATTR_MULTICASTFORWTBL;
	rpc.attr.mod = (uint32_t)r->pos << 28 | r->block;
	rpc.timeout = (unsigned)w->smp_tmo_ms;
	rpc.datasz = IB_SMP_DATA_SIZE;
	rpc.dataoffs = IB_SMP_DATA_OFFS;
	/* Low 16 bits: which read; above them a counter, so an answer to
	 * an abandoned try of the same read is still accepted. */
	w->tid = (w->tid + 1) & 0xffff;
	if (!w->tid)
		w->tid = 1;
	rpc.trid = (uint64_t)w->tid << 16 | idx;
	dst.lid = w->sw[r->sw].lid;
	if (mad_build_pkt(w->umad, &rpc, &dst, NULL, NULL) < 0)
		return -EINVAL;
	if (umad_send(w->fd, w->agent, w->umad, IB_MAD_SIZE, w->smp_tmo_ms,
		      0) < 0)
		return -EIO;
	w->smps++;
	r->tid = (uint32_t)rpc.trid;
	r->tries++;
	r->sent = ibmc__now_ns();
	if (r->tries == 1)
		r->first_sent = r->sent;
	r->deadline = r->sent + (uint64_t)w->smp_tmo_ms * 1000000ull;
	return 0;
}

/* One entry read: the switch held val at some moment after sent. */
static void saw(struct seen *e, uint16_t val, uint64_t sent)
{
	if (e->valid && val != e->val)
		e->wrong_sent = e->last_sent;
	e->valid = true;
	e->val = val;
	e->last_sent = sent;
}

/* The latest send time of a read that returned an entry other than the
 * one the last pass saw: the switches still lacked the final entries at
 * some moment after it (0 if no read ever differed). Its resolution is one
 * SMP's round trip, not a pass. */
static uint64_t last_wrong_sent(const struct watch *w)
{
	uint64_t t = 0;
	int s, i;

	for (s = 0; s < w->nsw; s++)
		for (i = 0; i < w->nmlid * w->sw[s].npos; i++)
			if (w->sw[s].seen[i].wrong_sent > t)
				t = w->sw[s].seen[i].wrong_sent;
	return t;
}

static void take(struct watch *w, struct rd *rd, int n, int *left)
{
	uint8_t *mad = umad_get_mad(w->umad), *data;
	uint32_t tid = (uint32_t)mad_get_field64(mad, 0, IB_MAD_TRID_F);
	uint32_t idx = tid & 0xffff;
	uint64_t sent;
	struct rd *r;
	int i, mi;

	if ((int)idx >= n || mad_get_field(mad, 0, IB_MAD_MGMTCLASS_F) !=
	    IB_SMI_CLASS)
		return;
	r = &rd[idx];
	if (r->done || !mad_get_field(mad, 0, IB_MAD_RESPONSE_F))
		return;
	if (umad_status(w->umad)) {
		if (tid == r->tid)
			r->deadline = 0;	/* retry now */
		return;
	}
	r->done = true;
	(*left)--;
	if (mad_get_field(mad, 0, IB_MAD_STATUS_F)) {
		w->smp_errors++;
		return;
	}
	data = mad + IB_SMP_DATA_OFFS;
	/* An answer to an earlier try was read after that try was sent. */
	sent = tid == r->tid ? r->sent : r->first_sent;
	for (i = 0; i < 32; i++) {
		uint16_t v = (uint16_t)(data[2 * i] << 8 | data[2 * i + 1]);

		mi = mlid_index(w, (uint16_t)(MLID_BASE + 32u * r->block + i));
		if (mi < 0)
			continue;
		mask_of(w, r->sw, mi)[r->pos] = v;
		saw(&w->sw[r->sw].seen[mi * w->sw[r->sw].npos + r->pos], v,
		    sent);
	}
}

/* Read every block that holds a requested MLID, at every position of
 * every switch, keeping SMP_WINDOW in flight. Returns how many reads got
 * no valid answer. */
static int read_mfts(struct watch *w)
{
	struct rd *rd;
	int n = 0, s, b, p, i, next = 0, left, failed = 0;
	uint16_t blocks[MAX_MLIDS];
	int nblocks = 0;

	for (i = 0; i < w->nmlid; i++) {
		uint16_t blk = (uint16_t)((w->mlid[i] - MLID_BASE) / 32);

		for (b = 0; b < nblocks && blocks[b] != blk; b++)
			;
		if (b == nblocks)
			blocks[nblocks++] = blk;
	}
	for (s = 0; s < w->nsw; s++)
		n += nblocks * w->sw[s].npos;
	/* The TID carries the read's index in 16 bits. */
	if (n > 0xffff) {
		fprintf(stderr, "ibmcast-mftwatch: %d block reads per pass is "
			"too many; ask for fewer MLID blocks\n", n);
		return -E2BIG;
	}
	rd = calloc((size_t)n + 1, sizeof(*rd));
	if (!rd)
		return -ENOMEM;
	i = 0;
	for (s = 0; s < w->nsw; s++) {
		memset(w->sw[s].mask, 0,
		       sizeof(uint16_t) * (size_t)w->sw[s].npos * MAX_MLIDS);
		for (b = 0; b < nblocks; b++)
			for (p = 0; p < w->sw[s].npos; p++) {
				rd[i].sw = s;
				rd[i].block = blocks[b];
				rd[i].pos = (uint8_t)p;
				i++;
			}
	}

	left = n;
	while (left > 0) {
		uint64_t now = ibmc__now_ns(), first = UINT64_MAX;
		int inflight = 0, len, wait_ms;

		for (i = 0; i < next; i++) {
			if (rd[i].done)
				continue;
			if (rd[i].deadline <= now &&
			    (rd[i].tries >= SMP_TRIES ||
			     send_rd(w, &rd[i], (uint32_t)i) < 0)) {
				rd[i].done = true;
				left--;
				failed++;
				continue;
			}
			inflight++;
			if (rd[i].deadline < first)
				first = rd[i].deadline;
		}
		for (; inflight < SMP_WINDOW && next < n; next++) {
			if (send_rd(w, &rd[next], (uint32_t)next) < 0) {
				rd[next].done = true;
				left--;
				failed++;
				continue;
			}
			inflight++;
			if (rd[next].deadline < first)
				first = rd[next].deadline;
		}
		/* A caller holding the fabric still (ibsim stopped) knows
		 * when the first reads are queued ahead of the SM's writes. */
		if (w->announce) {
			fprintf(stderr, "ibmcast-mftwatch: first reads sent\n");
			w->announce = false;
		}
		if (!left || !inflight)
			continue;
		now = ibmc__now_ns();
		if (first <= now)
			continue;
		wait_ms = (int)((first - now + 999999) / 1000000);
		len = UMAD_ROOM;
		if (umad_recv(w->fd, w->umad, &len, wait_ms) < 0)
			continue;
		take(w, rd, n, &left);
	}
	free(rd);
	w->smp_errors += (unsigned long)failed;
	return failed;
}

/* The port a node sends from: its lowest port on a switch, preferring
 * one that is a member of mlid index mi. Returns the switch-side port. */
static ibnd_port_t *uplink(const struct watch *w, const ibnd_node_t *n,
			   int mi)
{
	ibnd_port_t *first = NULL, *rp;
	int p, s;

	for (p = 1; p <= n->numports; p++) {
		if (!n->ports[p] || !n->ports[p]->remoteport)
			continue;
		rp = n->ports[p]->remoteport;
		if (rp->node->type != IB_NODE_SWITCH)
			continue;
		s = sw_index(w, rp->node);
		if (s < 0)
			continue;
		if (port_bit(w, s, mi, rp->portnum))
			return rp;
		if (!first)
			first = rp;
	}
	return first;
}

/* Where a packet for mlid index mi sent by HCA h arrives: got[] marks
 * HCAs. Each switch forwards out of every MFT port but the arrival port.
 * Returns how many times a switch was reached twice (a loop or diamond:
 * duplicates on hardware). */
static int reach(const struct watch *w, int h, int mi, bool *got,
		 int *queue_sw, int *queue_in, bool *seen)
{
	ibnd_port_t *up = uplink(w, w->hca[h].node, mi), *pp, *rp;
	int head = 0, tail = 0, again = 0, s, in, p, t;

	memset(got, 0, sizeof(*got) * (size_t)w->nhca);
	memset(seen, 0, sizeof(*seen) * (size_t)w->nsw);
	if (!up)
		return 0;
	queue_sw[tail] = sw_index(w, up->node);
	queue_in[tail++] = up->portnum;
	seen[queue_sw[0]] = true;
	while (head < tail) {
		s = queue_sw[head];
		in = queue_in[head++];
		for (p = 1; p <= w->sw[s].node->numports; p++) {
			if (p == in || !port_bit(w, s, mi, p))
				continue;
			pp = w->sw[s].node->ports[p];
			if (!pp || !(rp = pp->remoteport))
				continue;
			if (rp->node->type == IB_NODE_SWITCH) {
				t = sw_index(w, rp->node);
				if (t < 0)
					continue;
				if (seen[t]) {
					again++;
					continue;
				}
				seen[t] = true;
				queue_sw[tail] = t;
				queue_in[tail++] = rp->portnum;
			} else if ((t = hca_index(w, rp->node)) >= 0) {
				got[t] = true;
			}
		}
	}
	return again;
}

/* HCAs whose switch port has the MLID bit set toward them. */
static void members(const struct watch *w, int mi, bool *mem)
{
	ibnd_port_t *pp, *rp;
	int s, p, h;

	memset(mem, 0, sizeof(*mem) * (size_t)w->nhca);
	for (s = 0; s < w->nsw; s++)
		for (p = 1; p <= w->sw[s].node->numports; p++) {
			pp = w->sw[s].node->ports[p];
			if (!port_bit(w, s, mi, p) || !pp ||
			    !(rp = pp->remoteport) ||
			    rp->node->type == IB_NODE_SWITCH)
				continue;
			h = hca_index(w, rp->node);
			if (h >= 0)
				mem[h] = true;
		}
}

static json_t *names(const struct watch *w, const bool *set, int skip)
{
	json_t *a = json_array();
	int h;

	for (h = 0; a && h < w->nhca; h++)
		if (set[h] && h != skip)
			json_array_append_new(a, json_string(w->hca[h].name));
	return a;
}

struct scratch {
	bool *want, *got, *seen;
	int *qs, *qi;
};

static int scratch_alloc(const struct watch *w, struct scratch *x)
{
	size_t q = (size_t)w->nsw + 1;

	x->want = calloc((size_t)w->nhca + 1, sizeof(bool));
	x->got = calloc((size_t)w->nhca + 1, sizeof(bool));
	x->seen = calloc(q, sizeof(bool));
	x->qs = calloc(q, sizeof(int));
	x->qi = calloc(q, sizeof(int));
	return x->want && x->got && x->seen && x->qs && x->qi ? 0 : -ENOMEM;
}

static void scratch_free(struct scratch *x)
{
	free(x->want);
	free(x->got);
	free(x->seen);
	free(x->qs);
	free(x->qi);
}

/* Does reach from h equal want minus h? */
static bool reach_is(const struct watch *w, struct scratch *x, int h,
		     int mi, int *dups)
{
	int i;

	*dups = reach(w, h, mi, x->got, x->qs, x->qi, x->seen);
	for (i = 0; i < w->nhca; i++)
		if (i != h && x->got[i] != x->want[i])
			return false;
	return !*dups;
}

static json_t *mlid_str(uint16_t mlid)
{
	char buf[8];

	snprintf(buf, sizeof(buf), "0x%04x", mlid);
	return json_string(buf);
}

static int cmd_reach(struct watch *w)
{
	struct scratch x = { 0 };
	json_t *out = json_object(), *arr = json_array();
	bool all = true;
	int mi, h, s, dups, ret;

	if (!out || !arr || scratch_alloc(w, &x))
		goto oom;
	ret = read_mfts(w);
	if (ret) {
		if (ret > 0)
			fprintf(stderr, "ibmcast-mftwatch: %d MFT block reads "
				"got no answer\n", ret);
		else if (ret == -ENOMEM)
			fprintf(stderr, "ibmcast-mftwatch: out of memory\n");
		ret = EXIT_ERR;
		goto out;
	}
	for (mi = 0; mi < w->nmlid; mi++) {
		json_t *o = json_object(), *sws = json_array();
		json_t *diff = json_array();
		bool ok = true, any;

		if (!o || !sws || !diff)
			goto oom;
		members(w, mi, x.want);
		for (s = 0; s < w->nsw; s++) {
			any = false;
			for (h = 0; h < w->sw[s].npos; h++)
				any |= mask_of(w, s, mi)[h] != 0;
			if (any)
				json_array_append_new(sws,
						      json_integer(w->sw[s].lid));
		}
		for (h = 0; h < w->nhca; h++) {
			if (!x.want[h] || reach_is(w, &x, h, mi, &dups))
				continue;
			ok = false;
			json_array_append_new(diff, json_pack("{s:s,s:o,s:i}",
				"node", w->hca[h].name,
				"reach", names(w, x.got, h),
				"duplicates", dups));
		}
		all &= ok;
		json_object_set_new(o, "mlid", mlid_str(w->mlid[mi]));
		json_object_set_new(o, "members", names(w, x.want, -1));
		json_object_set_new(o, "switches", sws);
		json_object_set_new(o, "consistent", json_boolean(ok));
		json_object_set_new(o, "differing", diff);
		json_array_append_new(arr, o);
	}
	json_object_set_new(out, "mlids", arr);
	arr = NULL;
	json_object_set_new(out, "consistent", json_boolean(all));
	json_object_set_new(out, "smps", json_integer((json_int_t)w->smps));
	json_dumpf(out, stdout, JSON_COMPACT);
	putchar('\n');
	ret = all ? EXIT_DONE : EXIT_NO;
	goto out;
oom:
	fprintf(stderr, "ibmcast-mftwatch: out of memory\n");
	ret = EXIT_ERR;
out:
	json_decref(arr);
	json_decref(out);
	scratch_free(&x);
	return ret;
}

/* Complete when, for every MLID, every listed node reaches exactly the
 * other listed nodes. pending (if not NULL) gets the nodes that do not. */
static bool complete(struct watch *w, struct scratch *x, const int *node,
		     int nnode, json_t *pending)
{
	bool ok = true;
	int mi, i, dups;

	for (mi = 0; mi < w->nmlid; mi++) {
		memset(x->want, 0, sizeof(bool) * (size_t)w->nhca);
		for (i = 0; i < nnode; i++)
			x->want[node[i]] = true;
		for (i = 0; i < nnode; i++) {
			if (reach_is(w, x, node[i], mi, &dups))
				continue;
			ok = false;
			if (!pending)
				return false;
			json_array_append_new(pending, json_pack(
				"{s:o,s:s,s:o,s:i}", "mlid",
				mlid_str(w->mlid[mi]), "node",
				w->hca[node[i]].name, "reach",
				names(w, x->got, node[i]), "duplicates",
				dups));
		}
	}
	return ok;
}

static int cmd_watch(struct watch *w, char *nodes, long timeout_ms,
		     long interval_us)
{
	struct scratch x = { 0 };
	uint64_t start = ibmc__now_ns(), t0, t1, prev_t0 = 0, pass_ns = 0;
	uint64_t end = start + (uint64_t)timeout_ms * 1000000ull;
	int *node = NULL, nnode = 0, cap = 0, polls = 0, ret;
	char *tok, *save = NULL;
	bool done = false;
	json_t *out = NULL, *pending;

	for (tok = strtok_r(nodes, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int h = find_hca(w, tok);

		if (h < 0) {
			if (h == -1)
				fprintf(stderr, "ibmcast-mftwatch: no HCA "
					"with node description \"%s\"\n", tok);
			ret = EXIT_ERR;
			goto out;
		}
		if (nnode == cap) {
			int *n2 = realloc(node, sizeof(int) *
					  (size_t)(cap = cap * 2 + 8));

			if (!n2)
				goto oom;
			node = n2;
		}
		node[nnode++] = h;
	}
	if (!nnode)
		die_usage();
	if (scratch_alloc(w, &x))
		goto oom;

	for (;;) {
		t0 = ibmc__now_ns();
		ret = read_mfts(w);
		t1 = ibmc__now_ns();
		if (ret == -ENOMEM)
			goto oom;
		if (ret < 0) {
			ret = EXIT_ERR;
			goto out;
		}
		polls++;
		pass_ns = t1 - t0;
		/* A pass with a missing block proves nothing either way. */
		if (!ret && complete(w, &x, node, nnode, NULL)) {
			done = true;
			break;
		}
		if (t1 >= end)
			break;
		prev_t0 = t0;
		if (interval_us > 0)
			usleep((useconds_t)interval_us);
	}

	out = json_object();
	if (!out)
		goto oom;
	json_object_set_new(out, "complete", json_boolean(done));
	if (done) {
		/* Completion happened before t1, and after the last read
		 * that still returned an entry other than the final one was
		 * sent; prev_t0 began the last pass that saw it incomplete. */
		json_object_set_new(out, "complete_mono_ns",
				    json_integer((json_int_t)t1));
		json_object_set_new(out, "complete_after_mono_ns",
				    json_integer((json_int_t)last_wrong_sent(w)));
		json_object_set_new(out, "incomplete_pass_mono_ns",
				    json_integer((json_int_t)prev_t0));
	} else {
		pending = json_array();
		if (!pending)
			goto oom;
		complete(w, &x, node, nnode, pending);
		json_object_set_new(out, "pending", pending);
	}
	json_object_set_new(out, "start_mono_ns",
			    json_integer((json_int_t)start));
	json_object_set_new(out, "polls", json_integer(polls));
	json_object_set_new(out, "last_poll_us",
			    json_integer((json_int_t)(pass_ns / 1000)));
	json_object_set_new(out, "smps", json_integer((json_int_t)w->smps));
	json_object_set_new(out, "smp_errors",
			    json_integer((json_int_t)w->smp_errors));
	json_dumpf(out, stdout, JSON_COMPACT);
	putchar('\n');
	ret = done ? EXIT_DONE : EXIT_NO;
	goto out;
oom:
	fprintf(stderr, "ibmcast-mftwatch: out of memory\n");
	ret = EXIT_ERR;
out:
	json_decref(out);
	scratch_free(&x);
	free(node);
	return ret;
}

static int add_mlids(struct watch *w, char *arg)
{
	char *tok, *save = NULL;
	unsigned long v;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (ibmc__parse_ulong(tok, 0, MLID_BASE, MLID_TOP, &v)) {
			fprintf(stderr, "ibmcast-mftwatch: bad MLID \"%s\" "
				"(0xc000-0xffff)\n", tok);
			return -EINVAL;
		}
		if (mlid_index(w, (uint16_t)v) >= 0)
			continue;
		if (w->nmlid == MAX_MLIDS) {
			fprintf(stderr, "ibmcast-mftwatch: at most %d MLIDs\n",
				MAX_MLIDS);
			return -E2BIG;
		}
		w->mlid[w->nmlid++] = (uint16_t)v;
	}
	return 0;
}

static long num_arg(const char *s, const char *what)
{
	long v;

	if (ibmc__parse_long(s, 0, 0, LONG_MAX, &v)) {
		fprintf(stderr, "ibmcast-mftwatch: bad %s \"%s\"\n", what, s);
		exit(EXIT_ERR);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mlid", required_argument, NULL, 'm' },
		{ "nodes", required_argument, NULL, 'n' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "smp-timeout-ms", required_argument, NULL, 's' },
		{ "mlids-from-stdin", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct watch w = { .smp_tmo_ms = 100 };
	long timeout_ms = 10000, interval_us = 1000;
	char *nodes = NULL, *line = NULL;
	size_t cap = 0;
	bool watch, from_stdin = false;
	int c, ret, i;

	if (argc < 2)
		die_usage();
	if (!strcmp(argv[1], "reach"))
		watch = false;
	else if (!strcmp(argv[1], "watch"))
		watch = true;
	else
		die_usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (add_mlids(&w, optarg))
				return EXIT_ERR;
			break;
		case 'n':
			nodes = optarg;
			break;
		case 'S':
			from_stdin = true;
			break;
		case 't':
			timeout_ms = num_arg(optarg, "--timeout-ms");
			break;
		case 'i':
			interval_us = num_arg(optarg, "--interval-us");
			break;
		case 's':
			w.smp_tmo_ms = (int)num_arg(optarg, "--smp-timeout-ms");
			if (w.smp_tmo_ms < 1 || w.smp_tmo_ms > 60000)
				die_usage();
			break;
		default:
			die_usage();
		}
	}
	if (optind != argc || !w.nmlid == !from_stdin || watch != !!nodes ||
	    (from_stdin && !watch))
		die_usage();

	ret = discover(&w);
	if (!ret)
		ret = open_smp(&w);
	/* Discovery takes a while on a large fabric: with --mlids-from-stdin
	 * it is done before the MLIDs exist, so that the first pass can
	 * start right after the caller learns them. */
	if (!ret && from_stdin) {
		fprintf(stderr, "ibmcast-mftwatch: discovered %d switches, "
			"%d HCAs; reading MLIDs from stdin\n", w.nsw, w.nhca);
		if (getline(&line, &cap, stdin) < 0) {
			fprintf(stderr, "ibmcast-mftwatch: no MLIDs on stdin\n");
			ret = -EINVAL;
		} else {
			line[strcspn(line, " \t\r\n")] = '\0';
			ret = add_mlids(&w, line);
			if (!ret && !w.nmlid) {
				fprintf(stderr, "ibmcast-mftwatch: no MLIDs "
					"on stdin\n");
				ret = -EINVAL;
			}
		}
		free(line);
		w.announce = true;
	}
	if (ret) {
		if (ret == -ENOMEM)
			fprintf(stderr, "ibmcast-mftwatch: out of memory\n");
		ret = EXIT_ERR;
	} else if (watch) {
		ret = cmd_watch(&w, nodes, timeout_ms, interval_us);
	} else {
		ret = cmd_reach(&w);
	}

	if (w.port)
		mad_rpc_close_port(w.port);
	free(w.umad);
	for (i = 0; w.sw && i < w.nsw; i++) {
		free(w.sw[i].mask);
		free(w.sw[i].seen);
	}
	free(w.sw);
	free(w.hca);
	if (w.fabric)
		ibnd_destroy_fabric(w.fabric);
	return ret;
}
