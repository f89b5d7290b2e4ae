/* SPDX-License-Identifier: BSD-3-Clause */
/* One pool's life as the plugin sees it: requests to the control server
 * over common/client.c (MUNGE-wrapped on TCP), replies turned into the
 * state the tasks are told. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/client.h"
#include "common/clock.h"
#include "common/hostlist.h"
#include "spank/groups.h"
#include "spank/pool.h"

/* The reason a task is told; a long server address or message is cut, not
 * an error (vsnprintf: the truncation is deliberate). */
__attribute__((format(printf, 2, 3)))
static void set_reason(struct spank_pool *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
	va_end(ap);
}

/* A single request (not wait) never takes longer than this. */
#define CALL_TIMEOUT_MS 10000
/* Pause between attempts while the pool is unknown or the server down. */
#define RETRY_MS 250

int spank_pool_id(uint32_t job, uint32_t step, bool jobwide, uint32_t *id)
{
	if (job == 0 || job > SPANK_MAX_SLURM_JOB)
		return -ERANGE;
	if (jobwide)
		*id = job;
	else
		*id = SPANK_STEP_POOL_BIT | job << 5 |
		      (step % SPANK_STEP_POOL_SLOTS);
	return 0;
}

const char *spank_pool_state_name(enum spank_pool_state s)
{
	switch (s) {
	case SPANK_POOL_READY:
		return "ready";
	case SPANK_POOL_TIMEOUT:
		return "timeout";
	case SPANK_POOL_FAILED:
		return "failed";
	case SPANK_POOL_UNAVAILABLE:
	default:
		return "unavailable";
	}
}

void spank_pool_clear(struct spank_pool *p)
{
	free(p->groups);
	memset(p, 0, sizeof(*p));
}

/* One request; on success *reply is an "ok": true object. A refusal is
 * -EPERM (unauthorized), -ENOENT (unknown_job) or -EIO, with the server's
 * code and detail in why. */
static int call(const struct spank_conf *c, json_t *req, int timeout_ms,
		json_t **reply, char *why, size_t why_len)
{
	const char *code, *detail;
	json_t *r = NULL;
	int rc;

	*reply = NULL;
	if (!req) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	rc = ibmc__client_call(c->server, c->munge_socket, req, timeout_ms,
			       &r, why, why_len);
	json_decref(req);
	if (rc)
		return rc;
	if (json_is_true(json_object_get(r, "ok"))) {
		*reply = r;
		return 0;
	}
	code = json_string_value(json_object_get(r, "error"));
	detail = json_string_value(json_object_get(r, "detail"));
	snprintf(why, why_len, "server refused: %s: %s", code ? code : "?",
		 detail ? detail : "no detail");
	rc = -EIO;
	if (code && !strcmp(code, "unauthorized"))
		rc = -EPERM;
	else if (code && !strcmp(code, "unknown_job"))
		rc = -ENOENT;
	json_decref(r);
	return rc;
}

int spank_pool_reserve(const struct spank_conf *c, uint32_t id,
		       const char *nodes, uid_t uid, unsigned groups,
		       bool *created, char *why, size_t why_len)
{
	json_t *r;
	int rc;

	rc = call(c, json_pack("{s:s, s:I, s:s, s:I, s:i, s:i}", "op",
			       "reserve", "job", (json_int_t)id, "nodes",
			       nodes, "uid", (json_int_t)uid, "groups",
			       (int)groups, "lease_s", (int)c->lease_s),
		  CALL_TIMEOUT_MS, &r, why, why_len);
	if (rc)
		return rc;
	*created = json_is_true(json_object_get(r, "created"));
	json_decref(r);
	return 0;
}

int spank_pool_renew(const struct spank_conf *c, uint32_t id, char *why,
		     size_t why_len)
{
	json_t *r;
	int rc;

	rc = call(c, json_pack("{s:s, s:I, s:i}", "op", "renew", "job",
			       (json_int_t)id, "lease_s", (int)c->lease_s),
		  CALL_TIMEOUT_MS, &r, why, why_len);
	json_decref(r);
	return rc;
}

int spank_pool_release(const struct spank_conf *c, uint32_t id,
		       bool *released, char *why, size_t why_len)
{
	json_t *r;
	int rc;

	rc = call(c, json_pack("{s:s, s:I}", "op", "release", "job",
			       (json_int_t)id),
		  CALL_TIMEOUT_MS, &r, why, why_len);
	if (!rc && released)
		*released = json_is_true(json_object_get(r, "released"));
	json_decref(r);
	return rc;
}

/* Whether two hostlist expressions name the same set of nodes. */
static bool same_nodes(const char *a, const char *b)
{
	struct ibmc_hostlist ha, hb;
	bool same = false;
	size_t i, j;

	if (!a || !b)
		return false;
	if (ibmc__hostlist_expand(a, 1 << 20, &ha))
		return false;
	if (ibmc__hostlist_expand(b, 1 << 20, &hb))
		goto out_a;
	if (ha.count != hb.count)
		goto out;
	/* Both are duplicate-free; small sets, so the square is fine. */
	for (i = 0; i < ha.count; i++) {
		for (j = 0; j < hb.count; j++)
			if (!strcmp(ha.names[i], hb.names[j]))
				break;
		if (j == hb.count)
			goto out;
	}
	same = true;
out:
	ibmc__hostlist_free(&hb);
out_a:
	ibmc__hostlist_free(&ha);
	return same;
}

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* What the SM says one of the job's groups is still waiting for ("switch
 * LID 3 did not answer the MFT read"), or NULL: the reason a timed-out
 * wait hands the tasks. */
static const char *first_pending(const json_t *job)
{
	const json_t *g;
	size_t i;

	json_array_foreach(json_object_get(job, "groups"), i, g) {
		const char *why = json_string_value(
			json_object_get(g, "pending"));

		if (why && *why)
			return why;
	}
	return NULL;
}

/* Judge a wait reply's job object. Returns 1 when final (p filled). */
static int judge(const json_t *job, const char *nodes, bool timed_out,
		 uint32_t id, struct spank_pool *p)
{
	const char *state = json_string_value(json_object_get(job, "state"));
	const char *have = json_string_value(json_object_get(job, "nodes"));
	const char *reason;

	if (!same_nodes(have, nodes)) {
		p->state = SPANK_POOL_UNAVAILABLE;
		set_reason(p, "reservation %u holds "
			 "nodes %s, not this pool's %s", id, have ? have : "?",
			 nodes);
		return 1;
	}
	if (state && !strcmp(state, "ready")) {
		if (spank_groups_format(job, &p->groups, &p->ngroups,
					p->reason, sizeof(p->reason))) {
			p->state = SPANK_POOL_FAILED;
			return 1;
		}
		p->state = SPANK_POOL_READY;
		return 1;
	}
	if (state && !strcmp(state, "failed")) {
		reason = json_string_value(json_object_get(job, "reason"));
		p->state = SPANK_POOL_FAILED;
		set_reason(p, "the SM failed "
			 "reservation %u: %s", id, reason ? reason : "no reason");
		return 1;
	}
	if (state && !strcmp(state, "released")) {
		p->state = SPANK_POOL_UNAVAILABLE;
		snprintf(p->reason, sizeof(p->reason),
			 "reservation %u was released", id);
		return 1;
	}
	if (timed_out) {
		reason = first_pending(job);
		p->state = SPANK_POOL_TIMEOUT;
		set_reason(p, "reservation %u still "
			 "%s when the wait timed out%s%s", id,
			 state ? state : "?", reason ? ": " : "",
			 reason ? reason : "");
		return 1;
	}
	return 0;
}

void spank_pool_wait(const struct spank_conf *c, uint32_t id,
		     const char *nodes, int timeout_ms, struct spank_pool *p)
{
	int64_t deadline = ibmc__now_ms() + timeout_ms;
	char why[256] = "";
	int64_t left;
	bool unknown = false;
	json_t *r;
	int rc;

	memset(p, 0, sizeof(*p));
	for (;;) {
		left = deadline - ibmc__now_ms();
		if (left < 0)
			left = 0;
		rc = call(c, json_pack("{s:s, s:I, s:I}", "op", "wait", "job",
				       (json_int_t)id, "timeout_ms",
				       (json_int_t)left),
			  (int)left + CALL_TIMEOUT_MS, &r, why, sizeof(why));
		if (!rc) {
			int done = judge(json_object_get(r, "job"), nodes,
					 json_is_true(json_object_get(
						 r, "timed_out")), id, p);

			json_decref(r);
			if (done)
				return;
		} else if (rc == -EPERM) {
			break; /* asking again will not help */
		}
		unknown = rc == -ENOENT;
		if (ibmc__now_ms() + RETRY_MS > deadline)
			break;
		pause_ms(RETRY_MS);
	}
	if (unknown) {
		p->state = SPANK_POOL_TIMEOUT;
		set_reason(p, "reservation %u was "
			 "not made within %d ms (the reserving node failed?)",
			 id, timeout_ms);
		return;
	}
	if (!rc) {
		p->state = SPANK_POOL_TIMEOUT;
		set_reason(p, "reservation %u not "
			 "ready within %d ms", id, timeout_ms);
		return;
	}
	p->state = SPANK_POOL_UNAVAILABLE;
	if (rc == -EPERM || rc == -EIO)
		set_reason(p, "control server %s: %s",
			 c->server, why);
	else
		set_reason(p, "control server %s "
			 "unreachable: %s", c->server, why);
}
