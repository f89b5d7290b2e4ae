/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcast-load: many concurrent fake jobs against the control server, each
 * reserving, waiting, holding and releasing in a loop while some of its
 * clients vanish mid-request, to find lost or duplicated reservations and
 * measure throughput and latency under load. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/client.h"
#include "common/hostlist.h"
#include "common/net.h"
#include "common/proto.h"

#define CALL_TIMEOUT_MS 30000 /* reserve/release/status: the server is slow
				 only when OpenSM's lock is, never this slow */

enum op { OP_RESERVE, OP_REISSUE, OP_WAIT, OP_RELEASE, OP_STATUS, OP_R2R,
	  OP_SERVER_R2R, OP_N };
static const char *op_names[OP_N] = { "reserve", "reserve_again", "wait",
				      "release", "status", "reserve_to_ready",
				      "server_reserve_to_ready" };

/* Everything that is not a clean answer, by name: the protocol's error
 * codes, the transport's, and our own consistency checks. */
#define MAX_ERR_KINDS 32

struct opts {
	const char *servers[8];
	unsigned nservers;
	const char *munge_socket;
	unsigned jobs;
	double duration_s;
	unsigned iterations; /* per worker; 0: run for duration_s */
	unsigned seed;
	double disconnect_prob;
	double status_prob;
	unsigned hold_ms;
	unsigned hosts;
	unsigned max_nodes;
	unsigned max_groups;
	uint32_t job_base;
	unsigned wait_ms;
	bool keep;
	bool json;
};

struct samples {
	uint32_t *v; /* microseconds */
	size_t n, cap;
};

struct worker {
	unsigned idx;
	uint64_t rng;
	pthread_t thread;
	struct samples lat[OP_N];
	char err_name[MAX_ERR_KINDS][32];
	uint64_t err_count[MAX_ERR_KINDS];
	char first_err[MAX_ERR_KINDS][200];
	uint64_t reserves, releases, cycles, disconnects[3], statuses;
	uint32_t held; /* the job this worker believes reserved, or 0 */
	char *held_nodes; /* with --keep: the nodes the held job asked for */
};

static struct opts o = {
	.jobs = 10, .duration_s = 10, .seed = 1, .disconnect_prob = 0.1,
	.status_prob = 0.05, .hold_ms = 20, .hosts = 648, .max_nodes = 64,
	.max_groups = 4, .job_base = 1000000, .wait_ms = 60000,
};
static atomic_uint next_job;
static atomic_bool stop_now;
static uint64_t t_end_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: each worker its own stream, so runs repeat for a seed. */
static uint64_t rnd(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 2685821657736338717ULL;
}

static double rnd01(struct worker *w)
{
	return (double)(rnd(w) >> 11) / 9007199254740992.0;
}

static unsigned rnd_range(struct worker *w, unsigned lo, unsigned hi)
{
	return lo + (unsigned)(rnd(w) % (hi - lo + 1));
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void record(struct worker *w, enum op op, uint64_t us)
{
	struct samples *s = &w->lat[op];

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		uint32_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return; /* a lost sample skews nothing we assert on */
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void error_of(struct worker *w, const char *kind, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));

static void error_of(struct worker *w, const char *kind, const char *fmt,
		     ...)
{
	unsigned i;
	va_list ap;

	for (i = 0; i < MAX_ERR_KINDS && w->err_name[i][0]; i++)
		if (!strcmp(w->err_name[i], kind))
			break;
	if (i == MAX_ERR_KINDS)
		i = MAX_ERR_KINDS - 1; /* overflow shares the last bucket */
	if (!w->err_name[i][0]) {
		snprintf(w->err_name[i], sizeof(w->err_name[i]), "%s", kind);
		va_start(ap, fmt);
		vsnprintf(w->first_err[i], sizeof(w->first_err[i]), fmt, ap);
		va_end(ap);
	}
	w->err_count[i]++;
}

static const char *pick_server(struct worker *w)
{
	return o.servers[rnd(w) % o.nservers];
}

/* One request on a fresh connection. Returns the reply (its "ok" may be
 * false; that error is recorded) or NULL after a transport error. */
static json_t *call(struct worker *w, const char *server, json_t *req,
		    enum op op, int timeout_ms)
{
	char detail[300];
	uint64_t t0 = now_ns();
	json_t *reply = NULL;
	int rc;

	rc = ibmc__client_call(server, o.munge_socket, req, timeout_ms,
			       &reply, detail, sizeof(detail));
	json_decref(req);
	if (rc) {
		error_of(w, rc == -ETIMEDOUT ? "client_timeout"
					     : "client_transport",
			 "%s: %s", op_names[op], detail);
		return NULL;
	}
	record(w, op, (now_ns() - t0) / 1000);
	if (!json_is_true(json_object_get(reply, "ok"))) {
		const char *e = json_string_value(json_object_get(reply,
								  "error"));
		const char *d = json_string_value(json_object_get(reply,
								  "detail"));

		error_of(w, e ? e : "no_error_code", "%s: %s", op_names[op],
			 d ? d : "");
	}
	return reply;
}

static bool reply_ok(const json_t *r)
{
	return r && json_is_true(json_object_get(r, "ok"));
}

/* The MLIDs of a job object, comma-joined: the identity of what the SM
 * built, compared between a reserve and its idempotent repeat. */
static void mlids_of(const json_t *job, char *buf, size_t len)
{
	const json_t *g, *groups = json_object_get(job, "groups");
	size_t off = 0, i;

	buf[0] = '\0';
	json_array_foreach(groups, i, g) {
		const char *m = json_string_value(json_object_get(g, "mlid"));

		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						i ? "," : "", m ? m : "?");
	}
}

/* Send LINE_PART bytes of a request on a connection we then drop: a mid-
 * request or mid-wait disconnect, as a client killed at a bad moment. */
static void vanish(struct worker *w, const char *server, json_t *req,
		   double fraction, unsigned linger_ms)
{
	char detail[300], *text = NULL, *cred = NULL, *line = NULL;
	struct ibmc_addr a;
	json_t *wrap = NULL;
	int fd;

	if (ibmc__addr_parse(server, &a))
		goto out;
	text = ibmc__json_line(req);
	if (!text)
		goto out;
	if (a.is_unix) {
		line = text;
		text = NULL;
	} else {
		text[strlen(text) - 1] = '\0';
		if (ibmc__munge_wrap(text, o.munge_socket, &cred, detail,
				     sizeof(detail))) {
			error_of(w, "munge", "%s", detail);
			goto out;
		}
		wrap = json_pack("{s:s}", "munge", cred);
		line = wrap ? ibmc__json_line(wrap) : NULL;
		if (!line)
			goto out;
	}
	fd = ibmc__connect(&a, 5000);
	if (fd < 0) {
		error_of(w, "client_transport", "connect for a disconnect: %s",
			 strerror(-fd));
		goto out;
	}
	if (ibmc__write_all(fd, line, (size_t)(strlen(line) * fraction),
			    5000) == 0 && linger_ms)
		sleep_ms(linger_ms);
	close(fd);
out:
	json_decref(req);
	json_decref(wrap);
	free(cred);
	free(text);
	free(line);
}

/* Random distinct nodes of node1..nodeH as a compressed hostlist. */
static char *random_nodes(struct worker *w, unsigned k)
{
	unsigned char *used = calloc(o.hosts + 1, 1);
	char **names = calloc(k, sizeof(*names));
	char *hl = NULL;
	unsigned i;

	if (!used || !names)
		goto out;
	for (i = 0; i < k; i++) {
		unsigned n;

		do
			n = rnd_range(w, 1, o.hosts);
		while (used[n]);
		used[n] = 1;
		names[i] = malloc(16);
		if (!names[i])
			goto out;
		snprintf(names[i], 16, "node%u", n);
	}
	hl = ibmc__hostlist_compress(names, k);
out:
	for (i = 0; names && i < k; i++)
		free(names[i]);
	free(names);
	free(used);
	return hl;
}

static json_t *req_reserve(uint32_t job, const char *nodes, unsigned groups)
{
	return json_pack("{s:s, s:I, s:s, s:i, s:i}", "op", "reserve", "job",
			 (json_int_t)job, "nodes", nodes, "groups",
			 (int)groups, "lease_s", 600);
}

static json_t *req_job(const char *op, uint32_t job)
{
	return json_pack("{s:s, s:I}", "op", op, "job", (json_int_t)job);
}

/* Waits until ready; false (recorded) otherwise. */
static bool wait_ready(struct worker *w, const char *server, uint32_t job,
		       uint64_t t_reserve, json_t **job_out)
{
	json_t *r = call(w, server,
			 json_pack("{s:s, s:I, s:i}", "op", "wait", "job",
				   (json_int_t)job, "timeout_ms",
				   (int)o.wait_ms),
			 OP_WAIT, (int)o.wait_ms + CALL_TIMEOUT_MS);
	json_t *j = r ? json_object_get(r, "job") : NULL;
	const char *st = json_string_value(json_object_get(j, "state"));
	bool ready = reply_ok(r) && st && !strcmp(st, "ready");

	if (reply_ok(r) && !ready)
		error_of(w, "wait_not_ready", "job %u: %s%s", job,
			 st ? st : "?",
			 json_is_true(json_object_get(r, "timed_out"))
				 ? " (timed out)" : "");
	if (ready) {
		json_int_t us = json_integer_value(
			json_object_get(j, "reserve_to_ready_us"));

		record(w, OP_R2R, (now_ns() - t_reserve) / 1000);
		if (us > 0)
			record(w, OP_SERVER_R2R, (uint64_t)us);
		if (job_out)
			*job_out = json_incref(j);
	}
	json_decref(r);
	return ready;
}

/* status for one job must show it exactly once while we hold it. */
static void check_status(struct worker *w, uint32_t job)
{
	json_t *r = call(w, pick_server(w), req_job("status", job), OP_STATUS,
			 CALL_TIMEOUT_MS);
	json_t *jobs = json_object_get(r, "jobs"), *j;
	size_t i, seen = 0;

	w->statuses++;
	json_array_foreach(jobs, i, j)
		if (json_integer_value(json_object_get(j, "job")) == job)
			seen++;
	if (reply_ok(r) && seen != 1)
		error_of(w, "status_mismatch",
			 "job %u appears %zu times in its status", job, seen);
	json_decref(r);
}

/* Release what we hold; a held job the server does not know was lost. */
static void release(struct worker *w, uint32_t job)
{
	json_t *r = call(w, pick_server(w), req_job("release", job),
			 OP_RELEASE, CALL_TIMEOUT_MS);

	if (reply_ok(r)) {
		if (!json_is_true(json_object_get(r, "released")))
			error_of(w, "lost_reservation",
				 "job %u: release found no reservation", job);
		w->releases++;
		w->held = 0;
	}
	json_decref(r);
}

/* One job's life. */
static void cycle(struct worker *w, bool keep)
{
	uint32_t job = atomic_fetch_add(&next_job, 1);
	unsigned k = rnd_range(w, 1, o.max_nodes);
	unsigned groups = rnd_range(w, 1, o.max_groups);
	char *nodes = random_nodes(w, k);
	char first[64 * 8], again[64 * 8];
	const char *server = pick_server(w);
	json_t *r, *jready = NULL;
	uint64_t t0;
	int how = -1;

	if (!nodes) {
		error_of(w, "client_nomem", "hostlist for %u nodes", k);
		return;
	}
	if (rnd01(w) < o.disconnect_prob)
		how = (int)(rnd(w) % 3);
	/* A reserve cut off mid-line must create nothing. */
	if (how == 0)
		vanish(w, server, req_reserve(job, nodes, groups),
		       0.3 + 0.6 * rnd01(w), 0);
	t0 = now_ns();
	r = call(w, server, req_reserve(job, nodes, groups), OP_RESERVE,
		 CALL_TIMEOUT_MS);
	if (!reply_ok(r)) {
		json_decref(r);
		goto out;
	}
	if (!json_is_true(json_object_get(r, "created")))
		error_of(w, "duplicate_reservation",
			 "job %u: a first reserve answered created:false", job);
	w->held = job;
	w->reserves++;
	mlids_of(json_object_get(r, "job"), first, sizeof(first));
	json_decref(r);

	if (how == 1 || how == 2) {
		/* Drop the client while its wait is parked (1) or right after
		 * connecting (2), then do what a restarted slurmstepd does:
		 * reserve again (idempotent) and wait again. */
		if (how == 1)
			vanish(w, server,
			       json_pack("{s:s, s:I, s:i}", "op", "wait", "job",
					 (json_int_t)job, "timeout_ms",
					 (int)o.wait_ms),
			       1.0, rnd_range(w, 0, 5));
		else
			vanish(w, server, req_job("status", job), 0.0, 0);
		w->disconnects[how]++;
		server = pick_server(w);
		r = call(w, server, req_reserve(job, nodes, groups), OP_REISSUE,
			 CALL_TIMEOUT_MS);
		if (reply_ok(r)) {
			mlids_of(json_object_get(r, "job"), again,
				 sizeof(again));
			if (json_is_true(json_object_get(r, "created")))
				error_of(w, "lost_reservation",
					 "job %u: repeated reserve created it "
					 "anew", job);
			else if (strcmp(first, again))
				error_of(w, "duplicate_reservation",
					 "job %u: MLIDs %s then %s", job,
					 first, again);
		}
		json_decref(r);
	} else if (how == 0) {
		w->disconnects[0]++;
	}
	if (!wait_ready(w, server, job, t0, &jready))
		goto out;
	mlids_of(jready, again, sizeof(again));
	if (strcmp(first, again))
		error_of(w, "duplicate_reservation",
			 "job %u: reserved MLIDs %s, ready with %s", job,
			 first, again);
	json_decref(jready);
	if (rnd01(w) < o.status_prob)
		check_status(w, job);
	if (keep)
		goto out;
	if (o.hold_ms)
		sleep_ms(rnd_range(w, 0, o.hold_ms));
	release(w, job);
	w->cycles++;
out:
	/* A job whose reserve or wait failed is still ours if reserved:
	 * release it so that the server ends as it began. */
	if (!keep && w->held) {
		release(w, w->held);
		w->cycles++;
	}
	/* Kept: remember what we asked for, so that the test can check the
	 * switches against our node list rather than the server's. */
	if (keep && w->held == job) {
		free(w->held_nodes);
		w->held_nodes = nodes;
		nodes = NULL;
	}
	free(nodes);
}

static bool done(const struct worker *w)
{
	if (atomic_load(&stop_now))
		return true;
	if (o.iterations)
		return w->cycles >= o.iterations;
	return now_ns() >= t_end_ns;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!done(w))
		cycle(w, false);
	if (o.keep)
		cycle(w, true);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(const struct samples *s, double p)
{
	size_t i;

	if (!s->n)
		return 0;
	i = (size_t)ceil(p * (double)s->n) - 1;
	if (i >= s->n)
		i = s->n - 1;
	return s->v[i] / 1000.0;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: ibmcast-load --server ADDR [--server ADDR]... [options]\n"
"Concurrent fake jobs against the ibmcast control server: each reserves\n"
"random nodes, waits for ready, holds, releases, in a loop.\n"
"  --server ADDR         unix:PATH or tcp:HOST:PORT (TCP signs with MUNGE);\n"
"                        repeat to mix; each request picks one at random\n"
"  --munge-socket PATH   munged socket for TCP\n"
"  --jobs N              concurrent jobs (worker threads; default 10)\n"
"  --duration-s S        run this long (default 10)\n"
"  --iterations N        instead: N jobs per worker\n"
"  --seed N              random seed (default 1)\n"
"  --disconnect-prob P   chance a job's client vanishes mid-reserve,\n"
"                        mid-wait or right after connecting (default 0.1)\n"
"  --status-prob P       chance a job checks its status (default 0.05)\n"
"  --hold-ms MS          hold a ready job up to MS (default 20)\n"
"  --hosts H             nodes are node1..nodeH (default 648)\n"
"  --max-nodes K         1..K nodes a job (default 64)\n"
"  --max-groups G        1..G groups a job (default 4)\n"
"  --job-base ID         first job id (default 1000000)\n"
"  --wait-ms MS          wait timeout (default 60000)\n"
"  --keep                end with one more job per worker, reserved and\n"
"                        ready, left held (listed under \"held\", their\n"
"                        nodes under \"held_nodes\")\n"
"  --json                print the summary as JSON\n"
"Exit 0 when no request failed, 1 otherwise, 64 on bad usage.\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "server", required_argument, NULL, 's' },
		{ "munge-socket", required_argument, NULL, 'm' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "duration-s", required_argument, NULL, 'd' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 'S' },
		{ "disconnect-prob", required_argument, NULL, 'p' },
		{ "status-prob", required_argument, NULL, 'P' },
		{ "hold-ms", required_argument, NULL, 'h' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "max-nodes", required_argument, NULL, 'n' },
		{ "max-groups", required_argument, NULL, 'g' },
		{ "job-base", required_argument, NULL, 'b' },
		{ "wait-ms", required_argument, NULL, 'w' },
		{ "keep", no_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, '?' + 256 },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end = NULL;
		double d = 0;
		unsigned long u = 0;

		/* Every option but the two paths takes a number. */
		if (optarg && c != 's' && c != 'm') {
			errno = 0;
			d = strtod(optarg, &end);
			if (errno || *end || d < 0)
				goto bad;
			u = strtoul(optarg, &end, 0);
		}
		switch (c) {
		case 's':
			if (o.nservers == 8)
				goto bad;
			o.servers[o.nservers++] = optarg;
			break;
		case 'm': o.munge_socket = optarg; break;
		case 'j': o.jobs = (unsigned)u; break;
		case 'd': o.duration_s = d; break;
		case 'i': o.iterations = (unsigned)u; break;
		case 'S': o.seed = (unsigned)u; break;
		case 'p': o.disconnect_prob = d; break;
		case 'P': o.status_prob = d; break;
		case 'h': o.hold_ms = (unsigned)u; break;
		case 'H': o.hosts = (unsigned)u; break;
		case 'n': o.max_nodes = (unsigned)u; break;
		case 'g': o.max_groups = (unsigned)u; break;
		case 'b': o.job_base = (uint32_t)u; break;
		case 'w': o.wait_ms = (unsigned)u; break;
		case 'k': o.keep = true; break;
		case 'J': o.json = true; break;
		case '?' + 256: usage(stdout); exit(0);
		default: goto bad;
		}
	}
	if (optind != argc || !o.nservers || !o.jobs || o.jobs > 4096 ||
	    !o.hosts || !o.max_nodes || o.max_nodes > o.hosts ||
	    !o.max_groups || o.disconnect_prob > 1 || o.status_prob > 1 ||
	    !o.job_base)
		goto bad;
	return 0;
bad:
	usage(stderr);
	return -EINVAL;
}

int main(int argc, char **argv)
{
	struct worker *ws;
	struct samples all[OP_N] = { 0 };
	uint64_t t0, elapsed, reserves = 0, releases = 0, statuses = 0;
	uint64_t disc[3] = { 0 }, nerr = 0;
	json_t *sum, *lat, *errs, *held, *held_nodes, *firsts;
	unsigned i, started = 0;
	int op;

	if (parse_args(argc, argv))
		return 64;
	ws = calloc(o.jobs, sizeof(*ws));
	if (!ws) {
		perror("ibmcast-load");
		return 1;
	}
	atomic_store(&next_job, o.job_base);
	t0 = now_ns();
	t_end_ns = t0 + (uint64_t)(o.duration_s * 1e9);
	for (i = 0; i < o.jobs; i++) {
		ws[i].idx = i;
		ws[i].rng = ((uint64_t)o.seed << 32 | (i + 1)) *
			    0x9e3779b97f4a7c15ULL;
		if (!ws[i].rng)
			ws[i].rng = 1;
		if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i])) {
			fprintf(stderr, "ibmcast-load: thread %u: %s\n", i,
				strerror(errno));
			atomic_store(&stop_now, true);
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(ws[i].thread, NULL);
	elapsed = now_ns() - t0;

	sum = json_object();
	lat = json_object();
	errs = json_object();
	firsts = json_object();
	held = json_array();
	held_nodes = json_object();
	for (i = 0; i < started; i++) {
		struct worker *w = &ws[i];

		reserves += w->reserves;
		releases += w->releases;
		statuses += w->statuses;
		for (int k = 0; k < 3; k++)
			disc[k] += w->disconnects[k];
		if (w->held)
			json_array_append_new(held, json_integer(w->held));
		if (w->held && w->held_nodes) {
			char key[16];

			snprintf(key, sizeof(key), "%" PRIu32, w->held);
			json_object_set_new(held_nodes, key,
					    json_string(w->held_nodes));
		}
		free(w->held_nodes);
		for (op = 0; op < OP_N; op++) {
			struct samples *s = &all[op];
			uint32_t *v = realloc(s->v, (s->n + w->lat[op].n + 1) *
						     sizeof(*v));

			if (v) {
				if (w->lat[op].n)
					memcpy(v + s->n, w->lat[op].v,
					       w->lat[op].n * sizeof(*v));
				s->v = v;
				s->n += w->lat[op].n;
			}
			free(w->lat[op].v);
		}
		for (int k = 0; k < MAX_ERR_KINDS && w->err_name[k][0]; k++) {
			json_t *c = json_object_get(errs, w->err_name[k]);

			json_object_set_new(errs, w->err_name[k],
					    json_integer(json_integer_value(c) +
							 (json_int_t)w->err_count[k]));
			if (!json_object_get(firsts, w->err_name[k]))
				json_object_set_new(firsts, w->err_name[k],
						    json_string(w->first_err[k]));
			nerr += w->err_count[k];
		}
	}
	for (op = 0; op < OP_N; op++) {
		struct samples *s = &all[op];

		qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
		json_object_set_new(lat, op_names[op],
			json_pack("{s:I, s:f, s:f, s:f, s:f}", "n",
				  (json_int_t)s->n, "median_ms", pct(s, 0.5),
				  "p90_ms", pct(s, 0.9), "p99_ms",
				  pct(s, 0.99), "max_ms", pct(s, 1.0)));
		free(s->v);
	}
	json_object_set_new(sum, "jobs", json_integer(started));
	json_object_set_new(sum, "elapsed_s", json_real(elapsed / 1e9));
	json_object_set_new(sum, "reservations", json_integer(reserves));
	json_object_set_new(sum, "releases", json_integer(releases));
	json_object_set_new(sum, "statuses", json_integer(statuses));
	json_object_set_new(sum, "reservations_per_s",
			    json_real(reserves / (elapsed / 1e9)));
	json_object_set_new(sum, "disconnects",
			    json_pack("{s:I, s:I, s:I}", "mid_reserve",
				      (json_int_t)disc[0], "mid_wait",
				      (json_int_t)disc[1], "idle",
				      (json_int_t)disc[2]));
	json_object_set_new(sum, "errors", errs);
	json_object_set_new(sum, "error_examples", firsts);
	json_object_set_new(sum, "error_total", json_integer(nerr));
	json_object_set_new(sum, "latency", lat);
	json_object_set_new(sum, "held", held);
	json_object_set_new(sum, "held_nodes", held_nodes);

	if (o.json) {
		char *s = json_dumps(sum, JSON_COMPACT);

		puts(s ? s : "{}");
		free(s);
	} else {
		const char *k;
		json_t *v;

		printf("%u jobs, %.1f s: %" PRIu64 " reservations (%.1f/s), "
		       "%" PRIu64 " releases, disconnects %" PRIu64 "/%" PRIu64
		       "/%" PRIu64 " (mid-reserve/mid-wait/idle)\n",
		       started, elapsed / 1e9, reserves,
		       reserves / (elapsed / 1e9), releases, disc[0], disc[1],
		       disc[2]);
		printf("%-24s %8s %9s %9s %9s %9s\n", "latency (ms)", "n",
		       "median", "p90", "p99", "max");
		json_object_foreach(lat, k, v)
			printf("%-24s %8" JSON_INTEGER_FORMAT " %9.2f %9.2f "
			       "%9.2f %9.2f\n", k,
			       json_integer_value(json_object_get(v, "n")),
			       json_real_value(json_object_get(v, "median_ms")),
			       json_real_value(json_object_get(v, "p90_ms")),
			       json_real_value(json_object_get(v, "p99_ms")),
			       json_real_value(json_object_get(v, "max_ms")));
		json_object_foreach(errs, k, v)
			printf("error %s: %" JSON_INTEGER_FORMAT " (e.g. %s)\n",
			       k, json_integer_value(v),
			       json_string_value(json_object_get(firsts, k)));
		if (o.keep)
			printf("held: %zu jobs\n", json_array_size(held));
	}
	json_decref(sum);
	free(ws);
	return nerr ? 1 : 0;
}
