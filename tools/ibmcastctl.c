/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmcastctl: the administrator's command line to the ibmcast control
 * server: reserve, wait for, release, renew, prune, grow and inspect
 * jobs' groups. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/client.h"
#include "common/hostlist.h"
#include "common/net.h"
#include "common/parse.h"
#include "common/proto.h"

#ifndef IBMCAST_VERSION
#define IBMCAST_VERSION "unknown"
#endif

#define EXIT_NOT_READY 1 /* wait: timed out or failed */
#define EXIT_SERVER 2
#define EXIT_TRANSPORT 3
#define EXIT_USAGE 64

#define DEFAULT_TIMEOUT_MS 10000
#define DEFAULT_WAIT_MS 30000 /* the server's default for wait */

static const char *prog = "ibmcastctl";

struct opts {
	const char *server;
	const char *munge_socket;
	int timeout_ms;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTIONS] COMMAND [ARGS]\n"
"\n"
"Commands:\n"
"  reserve JOB --nodes HOSTLIST [--groups N] [--uid U] [--lease S]\n"
"  wait JOB [--group I] [--timeout-ms N]\n"
"                           block until the job's groups (or group I) are\n"
"                           ready\n"
"  release JOB\n"
"  renew JOB [--lease S]\n"
"  status [JOB]\n"
"  prune JOB --group I [--nodes HOSTLIST]\n"
"                           narrow group I to some of the job's nodes\n"
"                           (no --nodes: widen it back to all of them)\n"
"  grow JOB [--group I]     one more group for the job (I: the index\n"
"                           expected, so that a retry adds no second one)\n"
"  gc [--dry-run] [--squeue PATH]  release reservations whose Slurm job\n"
"                           is gone (squeue: $IBMCAST_SQUEUE or squeue)\n"
"\n"
"Options:\n"
"  -s, --server ADDR        control server (unix:/path, /path, tcp:HOST:PORT,\n"
"                           HOST:PORT, [v6]:PORT); default $IBMCAST_SERVER\n"
"  -m, --munge-socket PATH  munged socket for TCP requests\n"
"                           (default $IBMCAST_MUNGE_SOCKET or libmunge's)\n"
"  -t, --timeout-ms N       bound on the whole exchange (default %d)\n"
"  -j, --json               print the server's reply as one JSON line\n"
"  -h, --help               this help\n"
"  -V, --version            version\n"
"\n"
"Exit status: 0 ok, 1 wait timed out or failed, 2 server error,\n"
"3 transport error, 64 usage error.\n",
		prog, DEFAULT_TIMEOUT_MS);
}

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	return EXIT_USAGE;
}

static int num_arg(const char *what, const char *s, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	unsigned long v;

	/* EXIT_USAGE spelled out: the compiler then sees that *out is set
	 * whenever 0 is returned. */
	if (ibmc__parse_ulong(s, 10, min, max, &v)) {
		usage_error("%s: expected an integer in %" PRIu64 "..%" PRIu64
			    ", got '%s'", what, min, max, s);
		return EXIT_USAGE;
	}
	*out = v;
	return 0;
}

/* --- printing ----------------------------------------------------------- */

static const char *str_or(const json_t *o, const char *key, const char *def)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : def;
}

static bool int_of(const json_t *o, const char *key, json_int_t *v)
{
	json_t *j = json_object_get(o, key);

	if (!json_is_integer(j))
		return false;
	*v = json_integer_value(j);
	return true;
}

/* Integer field as text, "-" when absent. */
static const char *int_str(const json_t *o, const char *key, char *buf,
			   size_t len)
{
	json_int_t v;

	if (!int_of(o, key, &v))
		return "-";
	snprintf(buf, len, "%" JSON_INTEGER_FORMAT, v);
	return buf;
}

static const char *dur_us(json_int_t us, char *buf, size_t len)
{
	if (us < 1000)
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT " us", us);
	else if (us < 1000000)
		snprintf(buf, len, "%.1f ms", (double)us / 1e3);
	else
		snprintf(buf, len, "%.2f s", (double)us / 1e6);
	return buf;
}

static void print_job(const json_t *job)
{
	char a[32], b[32], c[32], d[32];
	const json_t *groups = json_object_get(job, "groups");
	json_int_t v, rem;
	size_t i;

	printf("job %s: %s", int_str(job, "job", a, sizeof(a)),
	       str_or(job, "state", "?"));
	if (int_of(job, "reserve_to_ready_us", &v))
		printf(" (reserve to ready %s)", dur_us(v, b, sizeof(b)));
	printf("\n");
	printf("  uid %s, nodes %s (%s nodes, %s ports), qkey %s, pkey %s",
	       int_str(job, "uid", a, sizeof(a)), str_or(job, "nodes", "-"),
	       int_str(job, "node_count", b, sizeof(b)),
	       int_str(job, "port_count", c, sizeof(c)),
	       str_or(job, "qkey", "-"), str_or(job, "pkey", "-"));
	if (int_of(job, "lease_s", &v)) {
		if (int_of(job, "lease_remaining_s", &rem))
			printf(", lease %" JSON_INTEGER_FORMAT " s (%"
			       JSON_INTEGER_FORMAT " s left)", v, rem);
		else
			printf(", lease %" JSON_INTEGER_FORMAT " s", v);
	}
	printf("\n");
	if (json_object_get(job, "reason"))
		printf("  reason: %s\n", str_or(job, "reason", "?"));
	if (!json_is_array(groups) || !json_array_size(groups)) {
		printf("  (no groups)\n");
		return;
	}
	printf("  %5s  %-39s  %-6s  %7s  %8s  %-8s  %s\n", "INDEX", "MGID",
	       "MLID", "MEMBERS", "SWITCHES", "STATE", "READY");
	for (i = 0; i < json_array_size(groups); i++) {
		const json_t *g = json_array_get(groups, i);

		printf("  %5s  %-39s  %-6s  %7s  %8s  %-8s  %s\n",
		       int_str(g, "index", a, sizeof(a)),
		       str_or(g, "mgid", "-"), str_or(g, "mlid", "-"),
		       int_str(g, "members", b, sizeof(b)),
		       int_str(g, "switches", c, sizeof(c)),
		       str_or(g, "state", "-"),
		       int_of(g, "ready_us", &v) ? dur_us(v, d, sizeof(d)) :
						   "-");
	}
}

static void print_status(const json_t *r)
{
	const json_t *srv = json_object_get(r, "server");
	const json_t *ml = json_object_get(r, "mlids");
	const json_t *cnt = json_object_get(r, "counters");
	const json_t *jobs = json_object_get(r, "jobs");
	const char *key;
	json_t *val;
	char a[32], b[32], c[32];
	size_t i;

	printf("server %s, SM %s, subnet %s, MFT read-back %s\n",
	       str_or(srv, "version", "?"), str_or(srv, "sm_state", "?"),
	       json_is_true(json_object_get(srv, "subnet_up")) ? "up" :
								  "down",
	       json_is_true(json_object_get(srv, "readback")) ? "on" :
								 "off");
	printf("MLIDs: %s used of %s, %s by ibmcast\n",
	       int_str(ml, "used", a, sizeof(a)),
	       int_str(ml, "total", b, sizeof(b)),
	       int_str(ml, "ibmcast", c, sizeof(c)));
	printf("counters:");
	json_object_foreach((json_t *)cnt, key, val) {
		if (json_is_integer(val))
			printf(" %s %" JSON_INTEGER_FORMAT, key,
			       json_integer_value(val));
	}
	printf("\n");
	if (!json_is_array(jobs) || !json_array_size(jobs)) {
		printf("\nno jobs\n");
		return;
	}
	for (i = 0; i < json_array_size(jobs); i++) {
		printf("\n");
		print_job(json_array_get(jobs, i));
	}
}

/* Human output of a successful reply; returns the exit status. */
static int print_human(enum ibmc_op op, const json_t *r, int wait_ms)
{
	const json_t *job = json_object_get(r, "job");
	const json_t *grp = json_object_get(r, "group");
	char a[32], b[32];
	json_int_t v;
	const char *state;

	switch (op) {
	case IBMC_OP_RESERVE:
		printf("%s\n", json_is_false(json_object_get(r, "created")) ?
			       "existing reservation" : "reserved");
		print_job(job);
		return 0;
	case IBMC_OP_WAIT:
		/* A group's wait is about that group. */
		state = str_or(grp ? grp : job, "state", "?");
		if (json_is_true(json_object_get(r, "timed_out"))) {
			if (wait_ms >= 0)
				printf("timed out after %d ms, ", wait_ms);
			else
				printf("timed out, ");
		} else if (int_of(r, "waited_us", &v)) {
			printf("waited %s, ", dur_us(v, a, sizeof(a)));
		}
		printf("state %s\n", state);
		print_job(job);
		if (json_is_true(json_object_get(r, "timed_out")) ||
		    strcmp(state, "ready"))
			return EXIT_NOT_READY;
		return 0;
	case IBMC_OP_RELEASE:
		printf("job %s: %s\n", int_str(r, "job", a, sizeof(a)),
		       json_is_false(json_object_get(r, "released")) ?
			       "not reserved, nothing to release" :
			       "released");
		return 0;
	case IBMC_OP_RENEW:
		printf("job %s: lease renewed to %s s\n",
		       int_str(r, "job", a, sizeof(a)),
		       int_str(r, "lease_s", b, sizeof(b)));
		return 0;
	case IBMC_OP_STATUS:
		print_status(r);
		return 0;
	case IBMC_OP_PRUNE:
		printf("job %s group %s: %s, state %s\n",
		       int_str(job, "job", a, sizeof(a)),
		       int_str(grp, "index", b, sizeof(b)),
		       !json_is_true(json_object_get(r, "changed"))
			       ? "already so"
		       : json_object_get(grp, "nodes")
			       ? "pruned"
			       : "widened to all the job's nodes",
		       str_or(grp, "state", "?"));
		print_job(job);
		return 0;
	case IBMC_OP_GROW:
		printf("job %s: %s group %s (MLID %s, MGID %s), state %s\n",
		       int_str(job, "job", a, sizeof(a)),
		       json_is_true(json_object_get(r, "created"))
			       ? "grew"
			       : "already has",
		       int_str(grp, "index", b, sizeof(b)),
		       str_or(grp, "mlid", "-"), str_or(grp, "mgid", "-"),
		       str_or(grp, "state", "?"));
		print_job(job);
		return 0;
	}
	return 0;
}

/* The wait command's verdict in --json mode, from the same fields. */
static int wait_verdict(const json_t *r)
{
	const json_t *grp = json_object_get(r, "group");
	const char *state = str_or(grp ? grp : json_object_get(r, "job"),
				   "state", "?");

	if (json_is_true(json_object_get(r, "timed_out")) ||
	    strcmp(state, "ready")) {
		fprintf(stderr, "%s: wait: %s not ready: state %s%s\n", prog,
			grp ? "group" : "job", state,
			json_is_true(json_object_get(r, "timed_out")) ?
				" (timed out)" : "");
		return EXIT_NOT_READY;
	}
	return 0;
}

/* --- commands ------------------------------------------------------------ */

enum {
	OPT_NODES = 256,
	OPT_GROUPS,
	OPT_UID,
	OPT_LEASE,
	OPT_GROUP,
};

static const struct option global_opts[] = {
	{ "server", required_argument, NULL, 's' },
	{ "munge-socket", required_argument, NULL, 'm' },
	{ "timeout-ms", required_argument, NULL, 't' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "nodes", required_argument, NULL, OPT_NODES },
	{ "groups", required_argument, NULL, OPT_GROUPS },
	{ "uid", required_argument, NULL, OPT_UID },
	{ "lease", required_argument, NULL, OPT_LEASE },
	{ "group", required_argument, NULL, OPT_GROUP },
	{ NULL, 0, NULL, 0 },
};

/* Options each command accepts besides the global ones. */
static bool cmd_takes(enum ibmc_op op, int opt)
{
	switch (opt) {
	case OPT_NODES:
		return op == IBMC_OP_RESERVE || op == IBMC_OP_PRUNE;
	case OPT_GROUPS:
	case OPT_UID:
		return op == IBMC_OP_RESERVE;
	case OPT_GROUP:
		return op == IBMC_OP_WAIT || op == IBMC_OP_PRUNE ||
		       op == IBMC_OP_GROW;
	case OPT_LEASE:
		return op == IBMC_OP_RESERVE || op == IBMC_OP_RENEW;
	default:
		return true;
	}
}

/* The option as the user wrote it, for messages: getopt leaves either
 * optopt (short options) or the word itself ("--name[=value]"). */
static const char *opt_name(char **argv, int ind, int longidx, int c)
{
	static char buf[64];
	const char *w = ind > 0 ? argv[ind - 1] : "";

	if (longidx >= 0)
		snprintf(buf, sizeof(buf), "--%s", global_opts[longidx].name);
	else if (!strncmp(w, "--", 2))
		snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(w, "="), w);
	else
		snprintf(buf, sizeof(buf), "-%c", optopt ? optopt : c);
	return buf;
}

/* getopt's own messages would name the command as the program, so
 * opterr is off and these say what went wrong. */
static int bad_option(const char *cmd, const char *name, int opt)
{
	const char *sep = cmd ? ": " : "";

	if (opt == ':')
		return usage_error("%s%soption '%s' needs an argument",
				   cmd ? cmd : "", sep, name);
	if (opt == '?')
		return usage_error("%s%sunknown option '%s'", cmd ? cmd : "",
				   sep, name);
	return usage_error("%s: option '%s' does not apply to %s", cmd, name,
			   cmd);
}

/* Global options: before the command and, for convenience, after it. */
static int global_opt(int c, const char *arg, struct opts *o)
{
	uint64_t v;
	int rc;

	switch (c) {
	case 's':
		o->server = arg;
		return 0;
	case 'm':
		o->munge_socket = arg;
		return 0;
	case 't':
		rc = num_arg("--timeout-ms", arg, 1, 86400000, &v);
		if (rc)
			return rc;
		o->timeout_ms = (int)v;
		return 0;
	case 'j':
		o->json = true;
		return 0;
	case 'h':
		usage(stdout);
		exit(0);
	case 'V':
		printf("%s (ibmcast) %s\n", prog, IBMCAST_VERSION);
		exit(0);
	}
	return -1;
}

static int run(enum ibmc_op op, struct ibmc_request *req, struct opts *o,
	       int wait_ms)
{
	char detail[512], where[400];
	struct ibmc_addr a;
	json_t *jreq, *reply = NULL;
	int rc, timeout = o->timeout_ms, status;

	if (ibmc__addr_parse(o->server, &a))
		return usage_error("invalid server address '%s'", o->server);
	ibmc__addr_format(&a, where, sizeof(where));
	/* wait legitimately takes as long as its own timeout. */
	if (op == IBMC_OP_WAIT)
		timeout += wait_ms >= 0 ? wait_ms : DEFAULT_WAIT_MS;

	jreq = ibmc__request_to_json(req);
	if (!jreq) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return EXIT_TRANSPORT;
	}
	rc = ibmc__client_call(o->server, o->munge_socket, jreq, timeout,
			       &reply, detail, sizeof(detail));
	json_decref(jreq);
	if (rc) {
		if (strstr(detail, where))
			fprintf(stderr, "%s: %s: %s\n", prog,
				ibmc__op_name(op), detail);
		else
			fprintf(stderr, "%s: %s: %s: %s\n", prog,
				ibmc__op_name(op), where, detail);
		return EXIT_TRANSPORT;
	}
	if (o->json) {
		char *line = ibmc__json_line(reply);

		if (line)
			fputs(line, stdout);
		free(line);
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		fprintf(stderr, "%s: %s: %s: %s\n", prog, ibmc__op_name(op),
			str_or(reply, "error", "unknown"),
			str_or(reply, "detail", "(no detail)"));
		json_decref(reply);
		return EXIT_SERVER;
	}
	if (o->json)
		status = op == IBMC_OP_WAIT ? wait_verdict(reply) : 0;
	else
		status = print_human(op, reply, wait_ms);
	fflush(stdout);
	json_decref(reply);
	return status;
}

/* --- gc: release reservations whose Slurm job is gone --------------------- */

/* A reservation's Slurm job: the id itself, or for the SPANK plugin's
 * step-only pools (top bit set) the job packed above 5 step bits. */
static uint32_t gc_slurm_job(uint32_t id)
{
	return id & 0x80000000U ? (id & 0x7fffffffU) >> 5 : id;
}

/* Slurm states after which a job holds nothing (squeue %T). */
static bool gc_state_ended(const char *s)
{
	static const char *const ended[] = {
		"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
		"PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
		"REVOKED", NULL,
	};
	int i;

	for (i = 0; ended[i]; i++)
		if (!strcmp(s, ended[i]))
			return true;
	return false;
}

struct gc_job {
	uint32_t id;
	char state[32];
};

/* Run squeue (no shell) and collect every job Slurm still knows with its
 * state. Any failure is fatal to gc: releasing on a wrong picture of
 * Slurm would tear down running jobs' groups. */
static int gc_slurm_jobs(const char *squeue, struct gc_job **out, size_t *n)
{
	char *argv[] = { (char *)squeue, "-h", "-o", "%A %T", "--states=all",
			 NULL };
	struct gc_job *jobs = NULL, *nj;
	char line[256], state[32];
	size_t cap = 0, cnt = 0;
	unsigned long id;
	int fds[2], status;
	FILE *f;
	pid_t pid;

	if (pipe(fds))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execvp(squeue, argv);
		fprintf(stderr, "%s: gc: cannot run %s: %s\n", prog, squeue,
			strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lu %31s", &id, state) != 2 || !id ||
		    id > UINT32_MAX)
			continue;
		if (cnt == cap) {
			cap = cap ? 2 * cap : 64;
			nj = realloc(jobs, cap * sizeof(*jobs));
			if (!nj)
				break;
			jobs = nj;
		}
		jobs[cnt].id = (uint32_t)id;
		snprintf(jobs[cnt].state, sizeof(jobs[cnt].state), "%s",
			 state);
		cnt++;
	}
	if (f)
		fclose(f);
	else
		close(fds[0]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		free(jobs);
		return -ECHILD;
	}
	*out = jobs;
	*n = cnt;
	return 0;
}

static int gc_call(struct opts *o, json_t *req, json_t **reply)
{
	char detail[512];
	int rc;

	rc = ibmc__client_call(o->server, o->munge_socket, req, o->timeout_ms,
			       reply, detail, sizeof(detail));
	json_decref(req);
	if (rc) {
		fprintf(stderr, "%s: gc: %s\n", prog, detail);
		return EXIT_TRANSPORT;
	}
	if (!json_is_true(json_object_get(*reply, "ok"))) {
		fprintf(stderr, "%s: gc: %s: %s\n", prog,
			str_or(*reply, "error", "unknown"),
			str_or(*reply, "detail", "(no detail)"));
		json_decref(*reply);
		*reply = NULL;
		return EXIT_SERVER;
	}
	return 0;
}

static int cmd_gc(int argc, char **argv, struct opts *o)
{
	static const struct option gc_opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "squeue", required_argument, NULL, 'q' },
		{ "server", required_argument, NULL, 's' },
		{ "munge-socket", required_argument, NULL, 'm' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const char *squeue = getenv("IBMCAST_SQUEUE");
	struct gc_job *jobs = NULL;
	size_t njobs = 0, i, k;
	bool dry = false;
	json_t *st = NULL, *r, *j;
	int c, rc, status = 0, released = 0, kept = 0;

	if (!squeue || !*squeue)
		squeue = "squeue";
	optind = 0;
	while ((c = getopt_long(argc, argv, ":nq:s:m:t:j", gc_opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'n':
			dry = true;
			break;
		case 'q':
			squeue = optarg;
			break;
		case 's':
		case 'm':
		case 't':
		case 'j':
			rc = global_opt(c, optarg, o);
			if (rc)
				return rc;
			break;
		default:
			return usage_error("gc: bad option '%s'",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("gc: unexpected argument '%s'",
				   argv[optind]);
	if (!o->server)
		return usage_error("no server: use --server ADDR or set "
				   "IBMCAST_SERVER");
	rc = gc_call(o, json_pack("{s:s}", "op", "status"), &st);
	if (rc)
		return rc;
	rc = gc_slurm_jobs(squeue, &jobs, &njobs);
	if (rc) {
		fprintf(stderr, "%s: gc: '%s -h -o \"%%A %%T\" --states=all' "
			"failed; releasing nothing\n", prog, squeue);
		json_decref(st);
		return EXIT_TRANSPORT;
	}
	json_array_foreach(json_object_get(st, "jobs"), i, j) {
		json_int_t id = json_integer_value(json_object_get(j, "job"));
		uint32_t sj = gc_slurm_job((uint32_t)id);
		const char *state = NULL;

		for (k = 0; k < njobs; k++)
			if (jobs[k].id == sj)
				state = jobs[k].state;
		if (state && !gc_state_ended(state)) {
			printf("kept %" JSON_INTEGER_FORMAT " (Slurm job %u "
			       "%s)\n", id, sj, state);
			kept++;
			continue;
		}
		if (dry) {
			printf("would release %" JSON_INTEGER_FORMAT " (Slurm "
			       "job %u %s)\n", id, sj, state ? state : "gone");
			continue;
		}
		rc = gc_call(o, json_pack("{s:s, s:I}", "op", "release", "job",
					  id), &r);
		if (rc) {
			status = rc;
			continue;
		}
		json_decref(r);
		printf("released %" JSON_INTEGER_FORMAT " (Slurm job %u %s)\n",
		       id, sj, state ? state : "gone");
		released++;
	}
	printf("gc: %d released, %d kept%s\n", released, kept,
	       dry ? " (dry run)" : "");
	free(jobs);
	json_decref(st);
	return status;
}

int main(int argc, char **argv)
{
	struct opts o = { .timeout_ms = DEFAULT_TIMEOUT_MS };
	struct ibmc_request req;
	const char *cmd, *job_arg = NULL, *nodes = NULL;
	uint64_t v;
	int c, li, op, rc, wait_ms = -1, npos = 0;

	memset(&req, 0, sizeof(req));
	req.uid = -1;
	req.timeout_ms = -1;
	req.group = -1;
	o.server = getenv("IBMCAST_SERVER");
	if (o.server && !*o.server)
		o.server = NULL;
	opterr = 0;

	/* Global options stop at the command name ('+'). */
	for (;;) {
		optopt = 0;
		li = -1;
		c = getopt_long(argc, argv, "+:s:m:t:jhV", global_opts, &li);
		if (c == -1)
			break;
		if (c == '?' || c == ':')
			return bad_option(NULL, opt_name(argv, optind, li, c),
					  c);
		if (c >= 256)
			return usage_error("option '%s' belongs after the "
					   "command",
					   opt_name(argv, optind, li, c));
		rc = global_opt(c, optarg, &o);
		if (rc)
			return rc;
	}
	if (optind >= argc)
		return usage_error("no command given");
	cmd = argv[optind];
	if (!strcmp(cmd, "gc"))
		return cmd_gc(argc - optind, argv + optind, &o);
	op = ibmc__op_from_name(cmd);
	if (op < 0)
		return usage_error("unknown command '%s'", cmd);
	req.op = (enum ibmc_op)op;

	argc -= optind;
	argv += optind;
	optind = 0; /* glibc: start over on the command's arguments */
	for (;;) {
		optopt = 0;
		li = -1;
		c = getopt_long(argc, argv, ":s:m:t:jhV", global_opts, &li);
		if (c == -1)
			break;
		if (c == '?' || c == ':' || !cmd_takes(req.op, c))
			return bad_option(cmd, opt_name(argv, optind, li, c),
					  c);
		switch (c) {
		case 't':
			/* For wait, --timeout-ms is how long to wait. */
			if (req.op == IBMC_OP_WAIT) {
				rc = num_arg("--timeout-ms", optarg, 0,
					     IBMC_PROTO_MAX_WAIT_MS, &v);
				if (rc)
					return rc;
				wait_ms = (int)v;
				req.timeout_ms = (int64_t)v;
				break;
			}
			/* fall through */
		case 's':
		case 'm':
		case 'j':
		case 'h':
		case 'V':
			rc = global_opt(c, optarg, &o);
			if (rc)
				return rc;
			break;
		case OPT_NODES:
			nodes = optarg;
			break;
		case OPT_GROUPS:
			rc = num_arg("--groups", optarg, 1,
				     IBMC_PROTO_MAX_GROUPS, &v);
			if (rc)
				return rc;
			req.groups = (unsigned)v;
			break;
		case OPT_UID:
			rc = num_arg("--uid", optarg, 0, UINT32_MAX - 1, &v);
			if (rc)
				return rc;
			req.uid = (int64_t)v;
			break;
		case OPT_LEASE:
			rc = num_arg("--lease", optarg, 1,
				     IBMC_PROTO_MAX_LEASE_S, &v);
			if (rc)
				return rc;
			req.lease_s = (unsigned)v;
			break;
		case OPT_GROUP:
			rc = num_arg("--group", optarg, 0,
				     IBMC_PROTO_MAX_GROUPS - 1, &v);
			if (rc)
				return rc;
			req.group = (int)v;
			break;
		}
	}
	for (; optind < argc; optind++, npos++)
		if (!job_arg)
			job_arg = argv[optind];
	if (npos > 1)
		return usage_error("%s: unexpected argument '%s'", cmd,
				   argv[argc - npos + 1]);
	if (job_arg) {
		rc = num_arg("JOB", job_arg, 1, IBMC_PROTO_MAX_JOB, &v);
		if (rc)
			return rc;
		req.job = (uint32_t)v;
	} else if (req.op != IBMC_OP_STATUS) {
		return usage_error("%s: JOB is required", cmd);
	}
	if (req.op == IBMC_OP_PRUNE && req.group < 0)
		return usage_error("prune: --group is required");
	if (req.op == IBMC_OP_RESERVE && !nodes)
		return usage_error("reserve: --nodes is required");
	if (nodes) {
		struct ibmc_hostlist hl;

		if (strlen(nodes) > IBMC_PROTO_MAX_NODES_LEN)
			return usage_error("--nodes: longer than %d bytes",
					   IBMC_PROTO_MAX_NODES_LEN);
		/* Catch typos here; sizes are the server's to judge. */
		rc = ibmc__hostlist_expand(nodes, 1 << 20, &hl);
		if (rc == -EINVAL)
			return usage_error("--nodes: invalid hostlist '%s'",
					   nodes);
		ibmc__hostlist_free(&hl);
		req.nodes = (char *)nodes;
	}
	if (!o.server)
		return usage_error("no server: use --server ADDR or set "
				   "IBMCAST_SERVER");
	return run(req.op, &req, &o, wait_ms);
}
