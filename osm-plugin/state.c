/* SPDX-License-Identifier: BSD-3-Clause */
/* The state file: {"format":"ibmcast-state","version":1,"jobs":[...],
 * "fnv1a64":"<hash of the jobs>"}. Written to a temporary file, fsync'ed
 * and renamed, so a crash leaves the old or the new file, never half of
 * one; the hash catches a file damaged some other way. MGIDs derive from
 * (job, index), so a rebuilt job gets the same group identities; OpenSM
 * may hand out other MLIDs. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "osm_includes.h"

#include "builder.h"
#include "common/client.h"
#include "common/fnv.h"
#include "common/hostlist.h"
#include "common/log.h"
#include "common/mgid.h"
#include "confirmer.h"
#include "state.h"

#define FORMAT "ibmcast-state"
#define STATE_VERSION 1
#define MIRROR_EVERY_NS 2000000000ULL
#define RESTORE_RETRY_NS 1000000000ULL

static int64_t now_unix(void)
{
	return (int64_t)time(NULL);
}

static void set_error(struct ibmc_plugin *p, char *buf, size_t len,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void set_error(struct ibmc_plugin *p, char *buf, size_t len,
		      const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&p->reg.lock);
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&p->reg.lock);
	ibmc_log(IBMC_LOG_ERROR, "state file %s: %s", p->opt.state_path, buf);
}

/* What prune and grow changed: how many of the groups were reserved (the
 * rest were grown) and the subset of each pruned group, as
 * "pruned":{"<index>":"<hostlist>"}. Both absent for a job as reserved,
 * so files written before prune and grow existed read the same. */
static int add_shape(json_t *o, const struct ibmc_job *j)
{
	json_t *pruned = NULL;
	char key[12];

	if (j->pool_groups != j->ngroups &&
	    json_object_set_new(o, "pool_groups",
				json_integer((json_int_t)j->pool_groups)))
		return -ENOMEM;
	for (unsigned i = 0; i < j->ngroups; i++) {
		if (!j->groups[i].nodes)
			continue;
		if (!pruned && !(pruned = json_object()))
			return -ENOMEM;
		snprintf(key, sizeof(key), "%u", i);
		if (json_object_set_new(pruned, key,
					json_string(j->groups[i].nodes))) {
			json_decref(pruned);
			return -ENOMEM;
		}
	}
	if (pruned && json_object_set_new(o, "pruned", pruned))
		return -ENOMEM;
	return 0;
}

/* The shape add_shape saved, onto a job read back (groups allocated).
 * The file's checksum, or the master that sent it, vouches for the
 * subsets; rebuilding them resolves every name again. */
static int read_shape(struct ibmc_plugin *p, json_t *o, struct ibmc_job *j,
		      char *why, size_t wlen)
{
	json_t *pool = json_object_get(o, "pool_groups");
	json_t *pruned = json_object_get(o, "pruned"), *v;
	const char *key;

	j->pool_groups = j->ngroups;
	if (pool) {
		json_int_t n = json_integer_value(pool);

		if (!json_is_integer(pool) || n < 1 ||
		    n > (json_int_t)j->ngroups) {
			snprintf(why, wlen, "job %u: bad pool_groups", j->id);
			return -EINVAL;
		}
		j->pool_groups = (unsigned)n;
	}
	for (unsigned i = j->pool_groups; i < j->ngroups; i++)
		j->groups[i].grown = true;
	if (pruned && !json_is_object(pruned)) {
		snprintf(why, wlen, "job %u: bad pruned", j->id);
		return -EINVAL;
	}
	json_object_foreach(pruned, key, v) {
		struct ibmc_hostlist hl = { 0 };
		unsigned long idx;
		char *end;
		int ret;

		idx = strtoul(key, &end, 10);
		if (*end || end == key || idx >= j->ngroups ||
		    !json_is_string(v) ||
		    ibmc__hostlist_expand(json_string_value(v),
					  p->opt.max_nodes, &hl) ||
		    !hl.count) {
			ibmc__hostlist_free(&hl);
			snprintf(why, wlen,
				 "job %u: bad pruned group \"%.20s\"", j->id,
				 key);
			return -EINVAL;
		}
		ret = ibmc__group_set_subset(&j->groups[idx], hl.names,
					     hl.count);
		ibmc__hostlist_free(&hl);
		if (ret) {
			snprintf(why, wlen, "out of memory");
			return ret;
		}
	}
	return 0;
}

/* Registry lock held. */
static json_t *jobs_to_json(struct ibmc_plugin *p, uint64_t mono_now,
			    int64_t unix_now)
{
	json_t *jobs = json_array();

	for (struct ibmc_job *j = p->reg.jobs; j && jobs; j = j->next) {
		int64_t left = j->lease_end_ns > mono_now
				       ? (int64_t)((j->lease_end_ns -
						    mono_now) / 1000000000ULL)
				       : 0;
		json_t *o = json_pack("{s:I, s:I, s:s, s:i, s:i, s:I}", "job",
				      (json_int_t)j->id, "uid",
				      (json_int_t)j->uid, "nodes", j->nodes,
				      "groups", (int)j->ngroups, "lease_s",
				      (int)j->lease_s, "lease_end_unix",
				      (json_int_t)(unix_now + left));

		if (!o || add_shape(o, j) || json_array_append_new(jobs, o)) {
			json_decref(o);
			json_decref(jobs);
			jobs = NULL;
		}
	}
	return jobs;
}

static int write_atomically(const char *path, const char *text)
{
	char tmp[4200];
	size_t len = strlen(text), off = 0;
	int fd, ret = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int ibmc__state_save(struct ibmc_plugin *p)
{
	char *jobs_text = NULL, *text = NULL, hash[20];
	json_t *jobs, *doc = NULL;
	int ret = -ENOMEM;

	if (!p->opt.state_path || !*p->opt.state_path)
		return 0;
	pthread_mutex_lock(&p->reg.lock);
	jobs = jobs_to_json(p, ibmc__now_ns(), now_unix());
	pthread_mutex_unlock(&p->reg.lock);
	if (!jobs)
		goto out;
	jobs_text = json_dumps(jobs, JSON_COMPACT | JSON_SORT_KEYS);
	if (!jobs_text)
		goto out;
	snprintf(hash, sizeof(hash), "%016" PRIx64,
		 ibmc__fnv1a64(IBMC__FNV64_INIT, jobs_text, strlen(jobs_text)));
	doc = json_pack("{s:s, s:i, s:I, s:O, s:s}", "format", FORMAT,
			"version", STATE_VERSION, "saved_unix",
			(json_int_t)now_unix(), "jobs", jobs, "fnv1a64", hash);
	text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
	if (!text)
		goto out;
	ret = write_atomically(p->opt.state_path, text);
out:
	if (ret)
		set_error(p, p->state_error, sizeof(p->state_error),
			  "cannot save %zu jobs: %s",
			  jobs ? json_array_size(jobs) : 0, strerror(-ret));
	else if (p->state_error[0]) {
		pthread_mutex_lock(&p->reg.lock);
		p->state_error[0] = '\0';
		pthread_mutex_unlock(&p->reg.lock);
	}
	free(text);
	free(jobs_text);
	json_decref(doc);
	json_decref(jobs);
	return ret;
}

/* A job awaiting its groups: same identity, MGIDs and lease as before. */
static struct ibmc_job *job_from_json(struct ibmc_plugin *p, json_t *o,
				      uint64_t mono_now, int64_t unix_now,
				      char *why, size_t wlen)
{
	json_int_t id, uid, lease_end;
	const char *nodes;
	int ngroups, lease_s;
	struct ibmc_hostlist hl = { 0 };
	struct ibmc_job *j;

	if (json_unpack(o, "{s:I, s:I, s:s, s:i, s:i, s:I}", "job", &id,
			"uid", &uid, "nodes", &nodes, "groups", &ngroups,
			"lease_s", &lease_s, "lease_end_unix", &lease_end) ||
	    id < 1 || id > IBMC_PROTO_MAX_JOB || uid < 0 ||
	    uid > 0xfffffffeLL || ngroups < 1 ||
	    ngroups > IBMC_PROTO_MAX_GROUPS || lease_s < 1) {
		snprintf(why, wlen, "a job entry has missing or bad fields");
		return NULL;
	}
	if (lease_end <= unix_now) {
		snprintf(why, wlen, "job %lld: lease ended while OpenSM was "
			 "down", (long long)id);
		return NULL;
	}
	if (ibmc__hostlist_expand(nodes, p->opt.max_nodes, &hl) ||
	    !hl.count) {
		ibmc__hostlist_free(&hl);
		snprintf(why, wlen, "job %lld: bad nodes \"%.60s\"",
			 (long long)id, nodes);
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (j) {
		j->groups = calloc((size_t)ngroups, sizeof(*j->groups));
		j->nodes = strdup(nodes);
		j->canon = ibmc__nodes_canonical(hl.names, hl.count);
	}
	if (!j || !j->groups || !j->nodes || !j->canon) {
		ibmc__job_free(j);
		ibmc__hostlist_free(&hl);
		snprintf(why, wlen, "out of memory");
		return NULL;
	}
	j->id = (uint32_t)id;
	j->uid = (uint32_t)uid;
	j->node_count = (unsigned)hl.count;
	j->qkey = ibmc__qkey_for_job(j->id);
	j->pkey = 0xffff;
	j->ngroups = (unsigned)ngroups;
	for (unsigned i = 0; i < j->ngroups; i++) {
		j->groups[i].index = (uint16_t)i;
		ibmc__mgid_derive(j->id, (uint16_t)i, j->pkey,
				  j->groups[i].mgid);
		j->groups[i].state = IBMC_STATE_BUILDING;
	}
	j->state = IBMC_STATE_BUILDING;
	j->needs_build = true;
	j->lease_s = (unsigned)lease_s;
	j->reserved_ns = j->building_since_ns = mono_now;
	j->lease_end_ns = mono_now +
			  (uint64_t)(lease_end - unix_now) * 1000000000ULL;
	ibmc__hostlist_free(&hl);
	if (read_shape(p, o, j, why, wlen)) {
		ibmc__job_free(j);
		return NULL;
	}
	return j;
}

/* Same groups, same subsets: nothing for a mirror to change. */
static bool same_shape(const struct ibmc_job *a, const struct ibmc_job *b)
{
	if (a->ngroups != b->ngroups || a->pool_groups != b->pool_groups)
		return false;
	for (unsigned i = 0; i < a->ngroups; i++) {
		const char *x = a->groups[i].canon, *y = b->groups[i].canon;

		if ((x || y) && (!x || !y || strcmp(x, y)))
			return false;
	}
	return true;
}

/* Take a restored or mirrored job into the registry, unless it already
 * holds that job: then only the lease is refreshed (if asked) and j is
 * freed; a mirrored copy not yet built takes the master's shape. Returns
 * whether j was inserted. */
static bool adopt(struct ibmc_plugin *p, struct ibmc_job *j,
		  bool refresh_lease)
{
	struct ibmc_job *old;

	bool taken;

	pthread_mutex_lock(&p->reg.lock);
	old = ibmc__registry_find(&p->reg, j->id);
	if (old && refresh_lease && old->needs_build && !same_shape(old, j)) {
		/* The master grew or pruned it: mirror the new shape. */
		ibmc__job_free(ibmc__registry_remove(&p->reg, j->id));
		old = NULL;
	}
	taken = !old;
	if (!old)
		ibmc__registry_insert(&p->reg, j);
	else if (refresh_lease)
		old->lease_end_ns = j->lease_end_ns;
	pthread_mutex_unlock(&p->reg.lock);
	if (!taken)
		ibmc__job_free(j);
	return taken;
}

/* Parse and check a state document; the jobs array on success. */
static json_t *parse_doc(const char *path, json_t **doc, char *why,
			 size_t wlen)
{
	json_error_t jerr;
	const char *format, *hash;
	json_t *jobs;
	char *text, want[20];
	int version;

	*doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!*doc) {
		snprintf(why, wlen, "not valid JSON (torn?): %s at line %d",
			 jerr.text, jerr.line);
		return NULL;
	}
	if (json_unpack(*doc, "{s:s, s:i, s:o, s:s}", "format", &format,
			"version", &version, "jobs", &jobs, "fnv1a64", &hash) ||
	    strcmp(format, FORMAT) || !json_is_array(jobs)) {
		snprintf(why, wlen, "not an ibmcast state file");
		return NULL;
	}
	if (version != STATE_VERSION) {
		snprintf(why, wlen, "version %d, this plugin reads %d", version,
			 STATE_VERSION);
		return NULL;
	}
	text = json_dumps(jobs, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text) {
		snprintf(why, wlen, "out of memory");
		return NULL;
	}
	snprintf(want, sizeof(want), "%016" PRIx64,
		 ibmc__fnv1a64(IBMC__FNV64_INIT, text, strlen(text)));
	free(text);
	if (strcmp(want, hash)) {
		snprintf(why, wlen, "checksum mismatch (file damaged)");
		return NULL;
	}
	return jobs;
}

int ibmc__state_load(struct ibmc_plugin *p)
{
	const char *path = p->opt.state_path;
	uint64_t mono = ibmc__now_ns();
	int64_t unix_now = now_unix();
	char why[200];
	json_t *doc = NULL, *jobs, *o;
	size_t i;
	int n = 0;

	if (!path || !*path || access(path, F_OK))
		return 0;
	jobs = parse_doc(path, &doc, why, sizeof(why));
	if (!jobs) {
		char aside[4200];

		snprintf(aside, sizeof(aside), "%s.corrupt-%lld", path,
			 (long long)unix_now);
		if (rename(path, aside))
			aside[0] = '\0';
		set_error(p, p->state_load_error, sizeof(p->state_load_error),
			  "%s; ignored%s%s", why,
			  aside[0] ? ", kept as " : "", aside);
		json_decref(doc);
		return -EBADMSG;
	}
	json_array_foreach(jobs, i, o) {
		struct ibmc_job *j = job_from_json(p, o, mono, unix_now, why,
						   sizeof(why));

		if (!j) {
			ibmc_log(IBMC_LOG_WARN, "state file %s: entry %zu "
				 "dropped: %s", path, i, why);
			continue;
		}
		n += adopt(p, j, false);
	}
	json_decref(doc);
	if (n) {
		p->restore_pending = true;
		ibmc_log(IBMC_LOG_INFO, "state file %s: %d reservations to "
			 "rebuild once the subnet is up", path, n);
	}
	return n;
}

/* Narrow the rebuilt groups that were pruned (subsets[i] non-NULL) to
 * their subsets again. One that cannot be (a node gone) is left spanning
 * the job, which still reaches its subset, and its subset is forgotten
 * (NULL). Registry lock not held. */
static void reprune(struct ibmc_plugin *p, uint32_t id,
		    struct ibmc_group *groups, char **subsets,
		    unsigned ngroups)
{
	enum ibmc_err err;
	char detail[400];
	bool changed;

	for (unsigned i = 0; i < ngroups; i++) {
		struct ibmc_hostlist hl = { 0 };
		int ret;

		if (!subsets[i])
			continue;
		ret = ibmc__hostlist_expand(subsets[i], p->opt.max_nodes, &hl);
		if (!ret)
			ret = ibmc__builder_reshape(
				p, groups[i].mgid, hl.names, hl.count,
				&groups[i].members, &changed, &err, detail,
				sizeof(detail));
		else
			snprintf(detail, sizeof(detail), "%s", strerror(-ret));
		ibmc__hostlist_free(&hl);
		if (!ret)
			continue;
		ibmc_log(IBMC_LOG_WARN, "job %u: group %u spans the whole job "
			 "again: cannot prune it to %s: %s", id, i, subsets[i],
			 detail);
		free(subsets[i]);
		subsets[i] = NULL;
	}
}

/* Build one restored job's groups. Registry lock not held. */
static void rebuild(struct ibmc_plugin *p, uint32_t id, bool *retry)
{
	struct ibmc_hostlist hl = { 0 };
	struct ibmc_group *groups = NULL;
	enum ibmc_err err = IBMC_ERR_INTERNAL;
	char detail[400] = "", *nodes = NULL, **subsets = NULL;
	unsigned ngroups = 0, ports = 0;
	bool nomem = false;
	struct ibmc_job *j;
	int ret;

	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, id);
	if (j && j->needs_build) {
		nodes = strdup(j->nodes);
		ngroups = j->ngroups;
		groups = calloc(ngroups, sizeof(*groups));
		subsets = calloc(ngroups, sizeof(*subsets));
		for (unsigned i = 0; subsets && i < ngroups; i++)
			if (j->groups[i].nodes &&
			    !(subsets[i] = strdup(j->groups[i].nodes)))
				nomem = true;
	}
	pthread_mutex_unlock(&p->reg.lock);
	if (!nodes || !groups || !subsets || nomem) {
		if (j)
			*retry = true; /* out of memory: try again later */
		goto out;
	}
	ret = ibmc__hostlist_expand(nodes, p->opt.max_nodes, &hl);
	if (!ret)
		ret = ibmc__builder_create(p, id, hl.names, hl.count, 0,
					   ngroups, ibmc__qkey_for_job(id),
					   0xffff, groups, &ports, &err, detail,
					   sizeof(detail));
	if (!ret)
		reprune(p, id, groups, subsets, ngroups);
	if (ret && err == IBMC_ERR_BUSY) {
		*retry = true;
		goto out;
	}
	pthread_mutex_lock(&p->reg.lock);
	j = ibmc__registry_find(&p->reg, id);
	if (!j || !j->needs_build) {
		/* Released meanwhile: undo what we built. */
		pthread_mutex_unlock(&p->reg.lock);
		if (!ret)
			ibmc__builder_destroy(p, groups, ngroups);
		goto out;
	}
	j->needs_build = false;
	j->building_since_ns = ibmc__now_ns();
	if (ret) {
		j->state = IBMC_STATE_FAILED;
		/* The reason is shorter than the detail: cut it, knowingly. */
		size_t n = (size_t)snprintf(j->reason, sizeof(j->reason),
					    "could not rebuild after SM "
					    "start: ");

		if (n < sizeof(j->reason))
			memccpy(j->reason + n, detail, '\0',
				sizeof(j->reason) - n - 1);
		j->reason[sizeof(j->reason) - 1] = '\0';
		p->reg.counters.failed++;
		ibmc_log(IBMC_LOG_ERROR, "job %u: %s", id, j->reason);
	} else {
		/* The new groups keep what prune and grow made of them. */
		for (unsigned i = 0; i < ngroups; i++) {
			struct ibmc_group *g = &j->groups[i];

			groups[i].grown = g->grown;
			groups[i].nodes = g->nodes;
			groups[i].canon = g->canon;
			if (g->nodes && !subsets[i]) {
				ibmc__group_clear_subset(g);
				groups[i].nodes = groups[i].canon = NULL;
			}
			*g = groups[i];
		}
		j->port_count = ports;
		j->built_ns = ibmc__now_ns();
		j->generation = ibmc__registry_next_generation(&p->reg);
		ibmc__confirmer_kick(p);
		ibmc_log(IBMC_LOG_INFO, "job %u: rebuilt %u groups (first MLID "
			 "0x%04x)", id, ngroups, groups[0].mlid);
	}
	pthread_mutex_unlock(&p->reg.lock);
	ibmc__plugin_notify_server(p);
out:
	ibmc__hostlist_free(&hl);
	for (unsigned i = 0; subsets && i < ngroups; i++)
		free(subsets[i]);
	free(subsets);
	free(groups);
	free(nodes);
}

bool ibmc__state_restore_pending(struct ibmc_plugin *p)
{
	uint64_t now = ibmc__now_ns();
	bool retry = false;
	uint32_t *ids = NULL;
	unsigned n = 0;

	if (!p->restore_pending || now < p->next_restore_ns ||
	    !atomic_load(&p->subnet_up) ||
	    p->osm->subn.sm_state != IB_SMINFO_STATE_MASTER)
		return false;
	pthread_mutex_lock(&p->reg.lock);
	ids = calloc(p->reg.njobs + 1, sizeof(*ids));
	for (struct ibmc_job *j = p->reg.jobs; ids && j; j = j->next)
		if (j->needs_build)
			ids[n++] = j->id;
	pthread_mutex_unlock(&p->reg.lock);
	if (!ids) {
		p->next_restore_ns = now + RESTORE_RETRY_NS;
		return false;
	}
	for (unsigned i = 0; i < n; i++)
		rebuild(p, ids[i], &retry);
	free(ids);
	p->restore_pending = retry;
	p->next_restore_ns = now + RESTORE_RETRY_NS;
	return n > 0;
}

/* A state entry's shape from the master's job object (status): its
 * pool size and the subsets of its pruned groups. */
static int mirror_shape(json_t *entry, json_t *job)
{
	json_t *pool = json_object_get(job, "pool_groups"), *g;
	json_t *pruned = json_object();
	char key[24];
	size_t i;

	if (!pruned)
		return -ENOMEM;
	json_array_foreach(json_object_get(job, "groups"), i, g) {
		json_t *nodes = json_object_get(g, "nodes");

		snprintf(key, sizeof(key), "%zu", i);
		if (json_is_string(nodes) &&
		    json_object_set(pruned, key, nodes)) {
			json_decref(pruned);
			return -ENOMEM;
		}
	}
	if ((pool && json_object_set(entry, "pool_groups", pool)) ||
	    json_object_set_new(entry, "pruned", pruned))
		return -ENOMEM;
	return 0;
}

/* Standby: replace our unbuilt copies with the master's current list. */
void ibmc__state_mirror_peer(struct ibmc_plugin *p, uint64_t now_ns)
{
	json_t *req, *reply = NULL, *jobs, *o;
	uint64_t mono = ibmc__now_ns();
	int64_t unix_now = now_unix();
	char detail[256], why[200];
	bool changed = false;
	size_t i;

	if (!p->opt.peer || now_ns < p->next_mirror_ns ||
	    p->osm->subn.sm_state == IB_SMINFO_STATE_MASTER)
		return;
	p->next_mirror_ns = now_ns + MIRROR_EVERY_NS;
	req = json_pack("{s:s}", "op", "status");
	if (!req || ibmc__client_call(p->opt.peer, p->opt.munge_socket, req,
				      1000, &reply, detail, sizeof(detail))) {
		json_decref(req);
		ibmc_log(IBMC_LOG_DEBUG, "peer %s: %s", p->opt.peer, detail);
		return;
	}
	json_decref(req);
	jobs = json_object_get(reply, "jobs");
	if (!json_is_true(json_object_get(reply, "ok")) ||
	    !json_is_array(jobs)) {
		json_decref(reply);
		return;
	}
	pthread_mutex_lock(&p->reg.lock);
	/* Forget copies the master no longer holds. */
	for (struct ibmc_job *j = p->reg.jobs, *next; j; j = next) {
		bool held = false;

		next = j->next;
		json_array_foreach(jobs, i, o)
			if (json_integer_value(json_object_get(o, "job")) ==
			    (json_int_t)j->id)
				held = true;
		if (!held && j->needs_build) {
			ibmc__job_free(ibmc__registry_remove(&p->reg, j->id));
			changed = true;
		}
	}
	pthread_mutex_unlock(&p->reg.lock);
	json_array_foreach(jobs, i, o) {
		json_int_t id = json_integer_value(json_object_get(o, "job"));
		json_int_t left = json_integer_value(
			json_object_get(o, "lease_remaining_s"));
		json_t *entry = json_pack(
			"{s:I, s:O, s:O, s:I, s:O, s:I}", "job", id, "uid",
			json_object_get(o, "uid"), "nodes",
			json_object_get(o, "nodes"), "groups",
			(json_int_t)json_array_size(json_object_get(o,
								    "groups")),
			"lease_s", json_object_get(o, "lease_s"),
			"lease_end_unix", (json_int_t)(unix_now + left));
		struct ibmc_job *j;

		if (entry && mirror_shape(entry, o)) {
			json_decref(entry);
			entry = NULL;
		}
		j = entry ? job_from_json(p, entry, mono, unix_now, why,
					  sizeof(why))
			  : NULL;

		json_decref(entry);
		if (!j)
			continue;
		changed |= adopt(p, j, true);
	}
	json_decref(reply);
	p->restore_pending = true;
	if (changed)
		ibmc__state_save(p);
}
