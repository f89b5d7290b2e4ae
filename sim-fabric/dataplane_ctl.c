/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_ctl.c - the control socket: newline-delimited JSON requests
 * (counters, reset, set, clear, status), one JSON line per reply. Lets tests
 * read per-link counters and change fault injection while packets flow. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "common/clock.h"
#include "sim-fabric/dataplane.h"

#define LINE_MAX_BYTES 65536

struct dp_ctl_client {
	int fd;
	bool dead;
	size_t len;
	char buf[LINE_MAX_BYTES];
	struct dp_ctl_client *next;
};

int dp_ctl_fd(struct dp_ctl_client *c)
{
	return c->fd;
}

struct dp_ctl_client *dp_ctl_next(struct dp_ctl_client *c)
{
	return c->next;
}

int dp_ctl_accept(struct dataplane *dp)
{
	struct dp_ctl_client *c;
	int fd = accept4(dp->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return -errno;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->next = dp->ctls;
	dp->ctls = c;
	return 0;
}

static json_t *drops_obj(const uint64_t *d)
{
	json_t *o = json_object();
	int i;

	for (i = 0; o && i < DP_DROP_MAX; i++)
		json_object_set_new(o, dp_drop_names[i],
				    json_integer((json_int_t)d[i]));
	return o;
}

static json_t *counters(struct dataplane *dp, bool all)
{
	json_t *o = json_object(), *links = json_array(), *eps = json_array();
	char name[200];
	uint64_t now = ibmc__now_ns();
	unsigned long mads, errs;
	struct dp_ep *ep;
	int i, k;

	for (i = 0; i < dp->fm.nlink; i++) {
		const struct dp_link_ctr *c = &dp->lc[i];
		const struct fm_link *l = &dp->fm.link[i];
		bool any = c->pkts;

		for (k = 0; k < DP_DROP_MAX; k++)
			any |= c->drops[k] != 0;
		if (!all && !any)
			continue;
		fm_link_name(&dp->fm, i, name, sizeof(name));
		json_array_append_new(links, json_pack(
			"{s:s,s:s,s:i,s:b,s:s,s:i,s:b,s:I,s:I,s:I,s:I,s:o}",
			"link", name,
			"from", dp->fm.node[l->from].name,
			"from_port", l->from_port,
			"from_hca", !dp->fm.node[l->from].is_switch,
			"to", dp->fm.node[l->to].name, "to_port", l->to_port,
			"down", dp->link_down && dp->link_down[i],
			"packets", (json_int_t)c->pkts,
			"bytes", (json_int_t)c->bytes,
			"recovery_packets", (json_int_t)c->recovery_pkts,
			"recovery_bytes", (json_int_t)c->recovery_bytes,
			"drops", drops_obj(c->drops)));
	}
	for (ep = dp->eps; ep; ep = ep->next) {
		if (!ep->hello)
			continue;
		json_array_append_new(eps, json_pack(
			"{s:s,s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:i}",
			"node", ep->node, "lid", dp->fm.node[ep->hca].lid,
			"qpn", (int)ep->qpn,
			"tx_packets", (json_int_t)ep->tx_pkts,
			"tx_bytes", (json_int_t)ep->tx_bytes,
			"rx_packets", (json_int_t)ep->rx_pkts,
			"rx_bytes", (json_int_t)ep->rx_bytes,
			"rq_overflow", (json_int_t)ep->rq_overflow,
			"expired", (json_int_t)ep->expired,
			"errors", (json_int_t)ep->errors,
			"attached", ep->natt));
	}
	mads = dp_mad_count(dp->mad, &errs);
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "links", links);
	json_object_set_new(o, "endpoints", eps);
	json_object_set_new(o, "drops", drops_obj(dp->drops));
	json_object_set_new(o, "sends", json_integer((json_int_t)dp->sends));
	json_object_set_new(o, "mc_sends",
			    json_integer((json_int_t)dp->mc_sends));
	json_object_set_new(o, "uc_small",
			    json_integer((json_int_t)dp->uc_small));
	json_object_set_new(o, "delivered",
			    json_integer((json_int_t)dp->delivered));
	json_object_set_new(o, "bad_messages",
			    json_integer((json_int_t)dp->bad_msgs));
	json_object_set_new(o, "tables", json_pack(
		"{s:i,s:i,s:I,s:I,s:I,s:I,s:I,s:I}",
		"mft_ms", dp->mft_ms, "lft_ms", dp->lft_ms,
		"mft_passes", (json_int_t)dp->mft_passes,
		"lft_passes", (json_int_t)dp->lft_passes,
		"mft_age_us", dp->mft_as_of_ns ?
			(json_int_t)((now - dp->mft_as_of_ns) / 1000) : -1,
		"lft_age_us", dp->lft_as_of_ns ?
			(json_int_t)((now - dp->lft_as_of_ns) / 1000) : -1,
		"smps", (json_int_t)(mads + dp->smps_before),
		"smp_errors", (json_int_t)(errs + dp->smp_errors_before)));
	json_object_set_new(o, "topology", json_pack(
		"{s:i,s:i,s:i,s:i,s:I,s:I,s:I}",
		"topo_ms", dp->topo_ms, "nodes", dp->fm.nnode,
		"link_directions", dp->fm.nlink, "links_down", dp->links_down,
		"passes", (json_int_t)dp->topo_passes,
		"link_changes", (json_int_t)dp->link_changes,
		"rediscoveries", (json_int_t)dp->rediscoveries));
	return o;
}

static void reset(struct dataplane *dp)
{
	struct dp_ep *ep;

	memset(dp->lc, 0, sizeof(*dp->lc) * (size_t)dp->fm.nlink);
	memset(dp->drops, 0, sizeof(dp->drops));
	dp->sends = dp->mc_sends = dp->uc_small = 0;
	dp->delivered = dp->bad_msgs = 0;
	for (ep = dp->eps; ep; ep = ep->next)
		ep->tx_pkts = ep->tx_bytes = ep->rx_pkts = ep->rx_bytes =
			ep->rq_overflow = ep->expired = ep->errors = 0;
}

static json_t *faults_obj(struct dataplane *dp)
{
	struct dp_faults *f = &dp->faults;
	json_t *ll = json_object();
	char name[200];
	int i;

	for (i = 0; f->link_loss && i < dp->fm.nlink; i++)
		if (f->link_loss[i] > 0) {
			fm_link_name(&dp->fm, i, name, sizeof(name));
			json_object_set_new(ll, name,
					    json_real(f->link_loss[i]));
		}
	return json_pack("{s:f,s:f,s:f,s:i,s:I,s:I,s:I,s:s,s:I,s:o}",
			 "loss", f->loss, "dup", f->dup, "reorder", f->reorder,
			 "delay_ms", f->delay_ms,
			 "drop_every", (json_int_t)f->drop_every,
			 "drop_from", (json_int_t)f->drop_from,
			 "drop_to", (json_int_t)f->drop_to,
			 "scope", f->scope == DP_SCOPE_MC ? "mc" :
				  f->scope == DP_SCOPE_UC ? "uc" : "all",
			 "seed", (json_int_t)f->seed, "link_loss", ll);
}

/* A link by its full name ("a/1 -> b/2") or its sending end ("a/1"). */
static int find_link(struct dataplane *dp, const char *s)
{
	char name[200], *arrow;
	int i;

	for (i = 0; i < dp->fm.nlink; i++) {
		fm_link_name(&dp->fm, i, name, sizeof(name));
		if (!strcmp(name, s))
			return i;
		arrow = strstr(name, " -> ");
		if (arrow) {
			*arrow = '\0';
			if (!strcmp(name, s))
				return i;
		}
	}
	return -1;
}

static double num(json_t *v, bool *bad)
{
	if (json_is_number(v))
		return json_number_value(v);
	if (json_is_string(v)) {
		char *end;
		double d = strtod(json_string_value(v), &end);

		if (*end || end == json_string_value(v))
			*bad = true;
		return d;
	}
	*bad = true;
	return 0;
}

static json_t *model_obj(const struct dataplane *dp)
{
	const struct dp_model *m = &dp->model;

	return json_pack("{s:s,s:f,s:f,s:i,s:i,s:i,s:i,s:i,s:i,s:i}",
			 "name", m->name, "link_gbps", m->link_gbps,
			 "inj_gbps", m->inj_gbps, "link_ns", (int)m->link_ns,
			 "switch_ns", (int)m->switch_ns,
			 "o_s_ns", (int)m->o_s_ns, "o_r_ns", (int)m->o_r_ns,
			 "gap_ns", (int)m->gap_ns,
			 "hdr_bytes", (int)m->hdr_bytes,
			 "grh_bytes", (int)m->grh_bytes);
}

/* A parameter of the timing model: NULL (done or not one), or an error. */
static const char *set_model(struct dataplane *dp, const char *key,
			     double d, bool *taken)
{
	static const struct {
		const char *key;
		size_t off;
		double lo, hi;
	} u32[] = {
		{ "link_ns", offsetof(struct dp_model, link_ns), 0, 1e7 },
		{ "switch_ns", offsetof(struct dp_model, switch_ns), 0, 1e7 },
		{ "o_s_ns", offsetof(struct dp_model, o_s_ns), 0, 1e8 },
		{ "o_r_ns", offsetof(struct dp_model, o_r_ns), 0, 1e8 },
		{ "gap_ns", offsetof(struct dp_model, gap_ns), 0, 1e8 },
		{ "hdr_bytes", offsetof(struct dp_model, hdr_bytes), 0, 4096 },
		{ "grh_bytes", offsetof(struct dp_model, grh_bytes), 0, 4096 },
	};
	struct dp_model *m = &dp->model;
	size_t i;

	*taken = true;
	if (!strcmp(key, "link_gbps") || !strcmp(key, "inj_gbps")) {
		if (!(d >= 0.001 && d <= 1e6))
			return "link_gbps/inj_gbps: 0.001..1000000";
		*(!strcmp(key, "link_gbps") ? &m->link_gbps : &m->inj_gbps) =
			d;
		return NULL;
	}
	for (i = 0; i < sizeof(u32) / sizeof(u32[0]); i++)
		if (!strcmp(key, u32[i].key)) {
			if (!(d >= u32[i].lo && d <= u32[i].hi))
				return "model parameter out of range";
			*(uint32_t *)((char *)m + u32[i].off) = (uint32_t)d;
			return NULL;
		}
	*taken = false;
	return NULL;
}

static const char *set(struct dataplane *dp, json_t *req)
{
	struct dp_faults *f = &dp->faults;
	const char *key, *s;
	json_t *v, *lv;
	bool bad = false, taken;
	double d;

	/* A preset first, so that parameters given with it refine it. */
	v = json_object_get(req, "model");
	if (v && (!json_is_string(v) ||
		  dp_model_preset(&dp->model, json_string_value(v))))
		return "model: no such preset (hdr, edr, ndr)";
	json_object_foreach(req, key, v) {
		if (!strcmp(key, "op") || !strcmp(key, "model"))
			continue;
		if (!strcmp(key, "link_loss")) {
			const char *ln;

			if (!json_is_object(v))
				return "link_loss: expected an object";
			json_object_foreach(v, ln, lv) {
				int l = find_link(dp, ln);

				d = num(lv, &bad);
				if (l < 0)
					return "link_loss: no such link";
				if (bad || d < 0 || d > 1)
					return "link_loss: not 0..1";
				f->link_loss[l] = d;
			}
			continue;
		}
		if (!strcmp(key, "scope")) {
			s = json_string_value(v);
			if (!s)
				return "scope: expected all, mc or uc";
			if (!strcmp(s, "all"))
				f->scope = DP_SCOPE_ALL;
			else if (!strcmp(s, "mc"))
				f->scope = DP_SCOPE_MC;
			else if (!strcmp(s, "uc"))
				f->scope = DP_SCOPE_UC;
			else
				return "scope: expected all, mc or uc";
			continue;
		}
		if (!strcmp(key, "drop_range")) {
			unsigned long long a, b;
			char c;

			s = json_string_value(v);
			if (!s || sscanf(s, "%llu-%llu%c", &a, &b, &c) != 2 ||
			    !a || b < a)
				return "drop_range: expected K-M, 1 <= K <= M";
			f->drop_from = a;
			f->drop_to = b;
			f->npattern = 0;
			continue;
		}
		d = num(v, &bad);
		if (bad)
			return "values must be numbers";
		if (!strcmp(key, "loss") || !strcmp(key, "dup") ||
		    !strcmp(key, "reorder")) {
			if (d < 0 || d > 1)
				return "probabilities must be 0..1";
			*(!strcmp(key, "loss") ? &f->loss :
			  !strcmp(key, "dup") ? &f->dup : &f->reorder) = d;
		} else if (!strcmp(key, "delay_ms")) {
			if (d < 0 || d > 60000)
				return "delay_ms: 0..60000";
			f->delay_ms = (int)d;
		} else if (!strcmp(key, "drop_every")) {
			if (d < 0)
				return "drop_every: >= 0";
			f->drop_every = (uint64_t)d;
			f->npattern = 0;
		} else if (!strcmp(key, "seed")) {
			f->seed = f->rng = (uint64_t)d;
		} else if (!strcmp(key, "lifetime_ms")) {
			if (d < 0 || d > 3600000)
				return "lifetime_ms: 0..3600000";
			dp->lifetime_ns = (uint64_t)d * 1000000ull;
		} else if (!strcmp(key, "rq_bytes")) {
			if (d < 4096 || d > (double)(1L << 30))
				return "rq_bytes: 4096..1073741824";
			dp->rq_bytes = (uint64_t)d;
		} else if (!strcmp(key, "mft_ms") || !strcmp(key, "lft_ms")) {
			if (d < 1 || d > 600000)
				return "mft_ms/lft_ms: 1..600000";
			*(!strcmp(key, "mft_ms") ? &dp->mft_ms : &dp->lft_ms) =
				(int)d;
		} else {
			s = set_model(dp, key, d, &taken);
			if (s)
				return s;
			if (!taken)
				return "unknown key";
		}
	}
	return NULL;
}

static void clear(struct dataplane *dp)
{
	struct dp_faults *f = &dp->faults;
	double *ll = f->link_loss;

	memset(ll, 0, sizeof(*ll) * (size_t)(dp->fm.nlink + 1));
	*f = (struct dp_faults){ .seed = f->seed, .rng = f->seed,
				 .link_loss = ll };
}

static json_t *status(struct dataplane *dp)
{
	json_t *o = json_object(), *ml = json_array(), *hcas = json_array();
	const struct fabric_model *fm = &dp->fm;
	unsigned i;
	int n, s, p;

	for (n = 0; n < fm->nnode; n++)
		if (!fm->node[n].is_switch)
			json_array_append_new(hcas, json_pack("{s:s,s:i,s:I}",
				"node", fm->node[n].name, "lid",
				fm->node[n].lid, "guid",
				(json_int_t)fm->node[n].guid));
	for (i = 0; i < FM_MLID_COUNT; i++) {
		struct dp_mlid *m = dp->mlid[i];
		json_t *mem;

		if (!m)
			continue;
		/* HCAs whose switch port carries the MLID toward them. */
		mem = json_array();
		for (s = 0; s < fm->nnode; s++) {
			if (!fm->node[s].is_switch)
				continue;
			for (p = 1; p <= fm->node[s].nports; p++) {
				const struct fm_port *pt = &fm->node[s].ports[p];

				if (pt->peer < 0 || fm->node[pt->peer].is_switch ||
				    !(m->mask[s][p / 16] & (1u << (p % 16))))
					continue;
				json_array_append_new(mem,
					json_string(fm->node[pt->peer].name));
			}
		}
		json_array_append_new(ml, json_pack("{s:i,s:b,s:i,s:o}",
			"mlid", m->mlid, "read", m->read, "attached",
			m->attached, "members", mem));
	}
	json_object_set_new(o, "ok", json_true());
	json_object_set_new(o, "hcas", hcas);
	json_object_set_new(o, "mlids", ml);
	json_object_set_new(o, "endpoints", json_integer(dp->nep));
	json_object_set_new(o, "faults", faults_obj(dp));
	json_object_set_new(o, "model", model_obj(dp));
	json_object_set_new(o, "lft_ready", json_boolean(dp->lft_ready));
	json_object_set_new(o, "rq_bytes", json_integer((json_int_t)dp->rq_bytes));
	json_object_set_new(o, "lifetime_ms",
			    json_integer((json_int_t)(dp->lifetime_ns / 1000000)));
	return o;
}

static json_t *handle(struct dataplane *dp, const char *line)
{
	json_error_t jerr;
	json_t *req = json_loads(line, 0, &jerr), *rep = NULL;
	const char *op, *err = NULL;

	if (!req || !json_is_object(req)) {
		err = "bad_request: not a JSON object";
		goto out;
	}
	op = json_string_value(json_object_get(req, "op"));
	if (!op)
		err = "bad_request: no op";
	else if (!strcmp(op, "counters"))
		rep = counters(dp, json_is_true(json_object_get(req, "all")));
	else if (!strcmp(op, "reset"))
		reset(dp);
	else if (!strcmp(op, "set"))
		err = set(dp, req);
	else if (!strcmp(op, "clear"))
		clear(dp);
	else if (!strcmp(op, "status"))
		rep = status(dp);
	else
		err = "bad_request: unknown op";
	if (!err && !rep)
		rep = json_pack("{s:b,s:o,s:o}", "ok", 1, "faults",
				faults_obj(dp), "model", model_obj(dp));
out:
	if (err)
		rep = json_pack("{s:b,s:s}", "ok", 0, "error", err);
	json_decref(req);
	return rep;
}

static void reply(struct dp_ctl_client *c, json_t *rep)
{
	char *s = rep ? json_dumps(rep, JSON_COMPACT) : NULL;
	size_t len, off = 0;
	ssize_t n;
	int k;

	json_decref(rep);
	if (!s) {
		c->dead = true;
		return;
	}
	len = strlen(s);
	s[len++] = '\n';	/* replaces the NUL */
	/* A control client that does not read its replies for 1 s is
	 * dropped; the data plane does not wait longer for it. */
	for (k = 0; off < len && k < 1000; k++) {
		n = send(c->fd, s + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			break;
		usleep(1000);
	}
	if (off < len)
		c->dead = true;
	free(s);
}

void dp_ctl_input(struct dataplane *dp, struct dp_ctl_client *c)
{
	ssize_t n;
	char *nl, *line;

	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len,
		 MSG_DONTWAIT);
	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			c->dead = true;
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	line = c->buf;
	while ((nl = strchr(line, '\n'))) {
		*nl = '\0';
		if (*line)
			reply(c, handle(dp, line));
		line = nl + 1;
	}
	c->len -= (size_t)(line - c->buf);
	memmove(c->buf, line, c->len);
	if (c->len >= sizeof(c->buf) - 1) {
		reply(c, json_pack("{s:b,s:s}", "ok", 0, "error",
				   "bad_request: line too long"));
		c->dead = true;
	}
}

void dp_ctl_reap(struct dataplane *dp)
{
	struct dp_ctl_client **pp, *c;

	for (pp = &dp->ctls; (c = *pp);) {
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		close(c->fd);
		free(c);
	}
}

void dp_ctl_free_all(struct dataplane *dp)
{
	struct dp_ctl_client *c;

	for (c = dp->ctls; c; c = c->next)
		c->dead = true;
	dp_ctl_reap(dp);
}
