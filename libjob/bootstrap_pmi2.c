/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_pmi2.c - the bootstrap of plain programs started by srun
 * --mpi=pmi2: an allgather through Slurm's PMI2 key-value space.
 *
 * PMI2 values are strings of at most PMI2_MAX_VALLEN bytes, so each rank's
 * block is hex-encoded and cut into chunks, one key per chunk:
 * "ibmc.<round>.<rank>.<chunk>". Every call is one round (put, fence, get);
 * keys are never reused, as a KVS put may not overwrite.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "ibmcast/ibmcast.h"
#include "libjob/bootstrap.h"

#ifdef IBMC_HAVE_PMI2
#include <slurm/pmi2.h>

/* Data bytes per chunk: two hex digits each, and the value's NUL. */
#define CHUNK ((PMI2_MAX_VALLEN - 1) / 2)

struct pmi2_bs {
	char jobid[PMI2_MAX_VALLEN];
	unsigned round;
	int rank, size;
};

static const char hexdig[] = "0123456789abcdef";

static void hex_encode(const unsigned char *in, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hexdig[in[i] >> 4];
		out[2 * i + 1] = hexdig[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_decode(const char *in, size_t len, unsigned char *out)
{
	size_t i;
	int hi, lo;

	for (i = 0; i < len; i++) {
		hi = hexval(in[2 * i]);
		lo = hi < 0 ? -1 : hexval(in[2 * i + 1]);
		if (lo < 0)
			return -EPROTO;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return in[2 * len] ? -EPROTO : 0;
}

int ibmc__bootstrap_pmi2_allgather(void *arg, const void *in, void *out,
				   size_t len)
{
	struct pmi2_bs *p = arg;
	size_t nchunks = len ? (len + CHUNK - 1) / CHUNK : 1;
	char key[PMI2_MAX_KEYLEN], val[PMI2_MAX_VALLEN];
	size_t c, off, n;
	int r, rc, vlen;
	unsigned round = p->round++;

	for (c = 0; c < nchunks; c++) {
		off = c * CHUNK;
		n = len - off < CHUNK ? len - off : CHUNK;
		snprintf(key, sizeof(key), "ibmc.%u.%d.%zu", round, p->rank, c);
		hex_encode((const unsigned char *)in + off, n, val);
		rc = PMI2_KVS_Put(key, val);
		if (rc != PMI2_SUCCESS) {
			ibmc_log(IBMC_LOG_ERROR, "bootstrap: PMI2_KVS_Put %s "
				 "failed (PMI2 error %d)", key, rc);
			return -EIO;
		}
	}
	rc = PMI2_KVS_Fence();
	if (rc != PMI2_SUCCESS) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: PMI2_KVS_Fence failed "
			 "(PMI2 error %d)", rc);
		return -EIO;
	}
	for (r = 0; r < p->size; r++) {
		for (c = 0; c < nchunks; c++) {
			off = c * CHUNK;
			n = len - off < CHUNK ? len - off : CHUNK;
			snprintf(key, sizeof(key), "ibmc.%u.%d.%zu", round, r,
				 c);
			vlen = 0;
			rc = PMI2_KVS_Get(p->jobid, r, key, val, sizeof(val),
					  &vlen);
			if (rc != PMI2_SUCCESS) {
				ibmc_log(IBMC_LOG_ERROR, "bootstrap: "
					 "PMI2_KVS_Get %s failed (PMI2 error "
					 "%d)", key, rc);
				return -EIO;
			}
			val[sizeof(val) - 1] = '\0';
			if (strlen(val) != 2 * n ||
			    hex_decode(val, n, (unsigned char *)out +
					       (size_t)r * len + off)) {
				ibmc_log(IBMC_LOG_ERROR, "bootstrap: PMI2 key "
					 "%s holds %zu bytes, not %zu hex "
					 "digits", key, strlen(val), 2 * n);
				return -EPROTO;
			}
		}
	}
	return 0;
}

int ibmc_bootstrap_pmi2(ibmc_bootstrap_t *bs)
{
	int spawned = 0, size = 0, rank = 0, appnum = 0, rc;
	struct pmi2_bs *p;

	if (!bs)
		return -EINVAL;
	memset(bs, 0, sizeof(*bs));
	/* Without PMI_FD Slurm's library would make a singleton of us,
	 * which is never what a multi-rank job wants: say so instead. */
	if (!getenv("PMI_FD")) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: PMI2 is not reachable: "
			 "PMI_FD is not set (start the program with srun "
			 "--mpi=pmi2)");
		return -EIO;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rc = PMI2_Init(&spawned, &size, &rank, &appnum);
	if (rc != PMI2_SUCCESS || size < 1 || rank < 0 || rank >= size) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: PMI2_Init failed (PMI2 "
			 "error %d, rank %d of %d)", rc, rank, size);
		free(p);
		return -EIO;
	}
	rc = PMI2_Job_GetId(p->jobid, sizeof(p->jobid));
	if (rc != PMI2_SUCCESS) {
		ibmc_log(IBMC_LOG_ERROR, "bootstrap: PMI2_Job_GetId failed "
			 "(PMI2 error %d)", rc);
		PMI2_Finalize();
		free(p);
		return -EIO;
	}
	p->rank = rank;
	p->size = size;
	bs->rank = rank;
	bs->size = size;
	bs->allgather = ibmc__bootstrap_pmi2_allgather;
	bs->arg = p;
	return 0;
}

void ibmc_bootstrap_pmi2_fini(ibmc_bootstrap_t *bs)
{
	if (!bs || bs->allgather != ibmc__bootstrap_pmi2_allgather)
		return;
	PMI2_Finalize();
	free(bs->arg);
	memset(bs, 0, sizeof(*bs));
}

#else /* !IBMC_HAVE_PMI2 */

int ibmc__bootstrap_pmi2_allgather(void *arg, const void *in, void *out,
				   size_t len)
{
	(void)arg;
	(void)in;
	(void)out;
	(void)len;
	return -ENOSYS;
}

int ibmc_bootstrap_pmi2(ibmc_bootstrap_t *bs)
{
	if (bs)
		memset(bs, 0, sizeof(*bs));
	ibmc_log(IBMC_LOG_ERROR, "bootstrap: libibmcast was built without "
		 "PMI2 (configure --with-pmi2, libpmi2-0-dev)");
	return -ENOSYS;
}

void ibmc_bootstrap_pmi2_fini(ibmc_bootstrap_t *bs)
{
	(void)bs;
}

#endif /* IBMC_HAVE_PMI2 */
