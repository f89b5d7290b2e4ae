/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the check programs (see check_util.h). */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ibmcast/sim.h"
#include "tests/libjob/check_util.h"

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: rank %d: ", prog, bs.rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

ibmc_context_t *check_init(void)
{
	ibmc_context_t *ctx = NULL;
	int rc = ibmc_bootstrap_default(&bs);

	if (rc) {
		fprintf(stderr, "%s: no bootstrap: %s (run me with "
			"ibmcast-run or srun --mpi=pmi2)\n", prog,
			ibmc_strerror(rc));
		exit(2);
	}
	rc = ibmc_init(&bs, &ctx);
	if (rc)
		die("ibmc_init: %s", ibmc_strerror(rc));
	return ctx;
}

ibmc_comm_t *check_world(ibmc_context_t *ctx, const char *coll,
			 const char *algo)
{
	ibmc_comm_t *comm = NULL;
	int rc = ibmc_comm_create(ctx, NULL, 0, &comm);

	if (rc)
		die("ibmc_comm_create: %s", ibmc_strerror(rc));
	if (algo) {
		rc = ibmc_comm_set_algo(comm, coll, algo);
		if (rc)
			die("--algo %s: %s", algo, ibmc_strerror(rc));
	}
	return comm;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void check_sync_all(void)
{
	int32_t in = 0, *out = calloc((size_t)bs.size, sizeof(*out));

	if (!out || bs.allgather(bs.arg, &in, out, sizeof(in)))
		die("bootstrap barrier failed");
	free(out);
}

#define HOLD_MAX_S 300

void check_wait_file(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;
	int i;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (i = 0; stat(path, &st) && i < HOLD_MAX_S * 10; i++)
		usleep(100000);
	if (i == HOLD_MAX_S * 10)
		die("%s never appeared", path);
}

void check_hold(const char *dir, const char *here, const char *go)
{
	char path[4096];
	FILE *f;

	check_sync_all();
	if (bs.rank == 0) {
		snprintf(path, sizeof(path), "%s/%s", dir, here);
		f = fopen(path, "w");
		if (!f)
			die("cannot create %s", path);
		fclose(f);
		check_wait_file(dir, go);
	}
	check_sync_all();
}

uint64_t check_model_align(ibmc_context_t *ctx)
{
	uint64_t c, *all, t0 = 0;
	int k, rc;

	if (ibmc_sim_clock_ns(ctx, &c))
		return 0;
	rc = ibmc_sim_settle(ctx, 30000);
	if (rc)
		die("settling the last collective: %s", ibmc_strerror(rc));
	all = malloc(sizeof(*all) * (size_t)bs.size);
	if (!all || ibmc_sim_clock_ns(ctx, &c) ||
	    bs.allgather(bs.arg, &c, all, sizeof(c)))
		die("aligning the modeled clocks failed");
	for (k = 0; k < bs.size; k++)
		if (all[k] > t0)
			t0 = all[k];
	t0 += 1000000;
	if (ibmc_sim_clock_ns(ctx, &c) ||
	    (t0 > c && ibmc_sim_compute(ctx, t0 - c)))
		die("aligning the modeled clocks failed");
	free(all);
	return t0;
}

double check_model_since(ibmc_context_t *ctx, uint64_t start)
{
	uint64_t c;

	if (!start || ibmc_sim_return_ns(ctx, &c) || c < start)
		return 0;
	return (double)(c - start) * 1e-9;
}

int parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k') {
		v <<= 10;
		end++;
	} else if (*end == 'M' || *end == 'm') {
		v <<= 20;
		end++;
	}
	if (*end || v > UINT32_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

int int_arg(const char *what, const char *s, int lo, int hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		die("%s: expected %d..%d, not '%s'", what, lo, hi, s);
	return (int)v;
}

/* Calls one(what, token, i) for each token of arg's comma-separated list,
 * i counting from 0 up to max - 1; returns how many. */
static int each_token(const char *what, const char *arg, int max,
		      void (*one)(const char *what, const char *tok, int i,
				  void *out), void *out)
{
	char *list = strdup(arg), *tok, *save;
	int n = 0;

	if (!list)
		die("out of memory");
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == max)
			die("%s: more than %d values", what, max);
		one(what, tok, n++, out);
	}
	free(list);
	if (!n)
		die("%s: empty list", what);
	return n;
}

static void one_size(const char *what, const char *tok, int i, void *out)
{
	if (parse_size(tok, (size_t *)out + i))
		die("%s: bad size '%s'", what, tok);
}

int size_list_arg(const char *what, const char *arg, size_t *out, int max)
{
	return each_token(what, arg, max, one_size, out);
}

struct int_range {
	int *out;
	int lo, hi;
};

static void one_int(const char *what, const char *tok, int i, void *arg)
{
	struct int_range *r = arg;

	r->out[i] = int_arg(what, tok, r->lo, r->hi);
}

int int_list_arg(const char *what, const char *arg, int *out, int max,
		 int lo, int hi)
{
	struct int_range r = { out, lo, hi };

	return each_token(what, arg, max, one_int, &r);
}

static void one_double(const char *what, const char *tok, int i, void *out)
{
	double *v = (double *)out + i;
	char *end;

	errno = 0;
	*v = strtod(tok, &end);
	if (errno || end == tok || *end || *v < 0)
		die("%s: bad value '%s'", what, tok);
}

int double_list_arg(const char *what, const char *arg, double *out, int max)
{
	return each_token(what, arg, max, one_double, out);
}
