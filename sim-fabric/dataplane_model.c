/* SPDX-License-Identifier: BSD-3-Clause */
/* dataplane_model.c - modeled time: the presets of the fabric's timing
 * model and the FIFO queues of every HCA's injection and every link
 * direction, in modeled nanoseconds (ibmcast-dataplane(8), MODELED TIME). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim-fabric/dataplane.h"

/* Sources of every value: ibmcast-dataplane(8), MODELED TIME. */
static const struct dp_model presets[] = {
	{ .name = "hdr", .link_gbps = 200, .inj_gbps = 200, .link_ns = 10,
	  .switch_ns = 130, .o_s_ns = 500, .o_r_ns = 500, .gap_ns = 5,
	  .hdr_bytes = 34, .grh_bytes = 40 },
	{ .name = "edr", .link_gbps = 100, .inj_gbps = 100, .link_ns = 10,
	  .switch_ns = 90, .o_s_ns = 500, .o_r_ns = 500, .gap_ns = 7,
	  .hdr_bytes = 34, .grh_bytes = 40 },
	{ .name = "ndr", .link_gbps = 400, .inj_gbps = 400, .link_ns = 10,
	  .switch_ns = 130, .o_s_ns = 500, .o_r_ns = 500, .gap_ns = 3,
	  .hdr_bytes = 34, .grh_bytes = 40 },
};

const char *dp_model_presets(void)
{
	return "hdr, edr, ndr";
}

int dp_model_preset(struct dp_model *m, const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		if (!strcmp(presets[i].name, name)) {
			struct dp_timeline *lb = m->link_busy;
			struct dp_timeline *hb = m->hca_busy;

			*m = presets[i];
			m->link_busy = lb;
			m->hca_busy = hb;
			return 0;
		}
	return -ENOENT;
}

int dp_model_init(struct dataplane *dp, const char *preset)
{
	struct dp_model *m = &dp->model;

	if (dp_model_preset(m, preset ? preset : "hdr"))
		return -ENOENT;
	m->link_busy = calloc((size_t)dp->fm.nlink + 1, sizeof(*m->link_busy));
	m->hca_busy = calloc((size_t)dp->fm.nnode + 1, sizeof(*m->hca_busy));
	if (!m->link_busy || !m->hca_busy) {
		dp_model_free(dp);
		return -ENOMEM;
	}
	return 0;
}

void dp_model_free(struct dataplane *dp)
{
	free(dp->model.link_busy);
	free(dp->model.hca_busy);
	dp->model.link_busy = dp->model.hca_busy = NULL;
}

/* ns to put bytes on a wire of gbps (Gb/s = bits per ns), rounded up. */
static uint64_t wire_ns(size_t bytes, double gbps)
{
	double ns = (double)bytes * 8.0 / gbps;
	uint64_t r = (uint64_t)ns;

	return (double)r < ns ? r + 1 : r;
}

static size_t wire_bytes(const struct dp_model *m, size_t len, bool mc)
{
	return len + m->hdr_bytes + (mc ? m->grh_bytes : 0);
}

uint64_t dp_model_ser(const struct dp_model *m, size_t len, bool mc)
{
	double g = m->link_gbps < m->inj_gbps ? m->link_gbps : m->inj_gbps;

	return wire_ns(wire_bytes(m, len, mc), g);
}

/* An unmodeled packet (a retransmission: loss recovery is not modeled)
 * neither waits in a queue nor leaves a trace in it: it arrives as an
 * original sent at its stamp on an idle fabric would, so that neither
 * how many of them real-time timers fired nor when the daemon handled
 * them moves modeled time. */
uint64_t dp_model_inject(struct dataplane *dp, int hca, uint64_t t,
			 size_t len, bool mc, bool charge)
{
	struct dp_model *m = &dp->model;
	uint64_t occ = wire_ns(wire_bytes(m, len, mc), m->inj_gbps);

	if (!charge)
		return t;
	return dp_timeline_reserve(&m->hca_busy[hca], t,
				   occ > m->gap_ns ? occ : m->gap_ns);
}

uint64_t dp_model_link(struct dataplane *dp, int link, uint64_t ready,
		       size_t len, bool mc, bool charge)
{
	struct dp_model *m = &dp->model;

	if (!charge)
		return ready;
	return dp_timeline_reserve(&m->link_busy[link], ready,
				   wire_ns(wire_bytes(m, len, mc),
					   m->link_gbps));
}
