/* SPDX-License-Identifier: BSD-3-Clause */
/* The delay estimator of rtt.h. */
#include "config.h"

#include "libjob/rtt.h"

void ibmc__rtt_sample(struct ibmc__rtt *r, int64_t s)
{
	int64_t d;

	if (s < 1)
		s = 1;
	if (!r->srtt) {
		r->srtt = s;
		r->rttvar = s / 2;
		return;
	}
	d = r->srtt > s ? r->srtt - s : s - r->srtt;
	r->rttvar += (d - r->rttvar) / 4;
	r->srtt += (s - r->srtt) / 8;
	if (r->srtt < 1)
		r->srtt = 1;
}

int64_t ibmc__rto_clamp(int64_t v)
{
	if (v < IBMC__RTO_MIN_US)
		return IBMC__RTO_MIN_US;
	return v > IBMC__RTO_MAX_US ? IBMC__RTO_MAX_US : v;
}

int64_t ibmc__rtt_rto(const struct ibmc__rtt *r, int64_t fallback)
{
	int64_t var;

	if (!r->srtt)
		return ibmc__rto_clamp(fallback);
	/* At least twice the mean: on a busy host delays swing by whole
	 * scheduling slices, and a timer is only the fallback here (gaps
	 * are NACKed at once), so a spurious one costs more than a late. */
	var = 4 * r->rttvar > r->srtt ? 4 * r->rttvar : r->srtt;
	if (var < IBMC__RTO_GRAIN_US)
		var = IBMC__RTO_GRAIN_US;
	return ibmc__rto_clamp(r->srtt + var);
}

int64_t ibmc__retry_wait(int64_t wait, int64_t waited)
{
	int64_t w = waited / 8;

	if (w > IBMC__RTO_MAX_US)
		w = IBMC__RTO_MAX_US;
	return w > wait ? w : wait;
}
