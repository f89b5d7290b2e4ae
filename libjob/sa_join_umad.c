/* SPDX-License-Identifier: BSD-3-Clause */
/* SA joins and leaves of the verbs transport through libibumad: one umad
 * agent for the SA class per request (joins are rare: one per node and
 * communicator), the MAD built and checked by sa_mcmr.c. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/umad.h>

#include "common/clock.h"
#include "common/log.h"
#include "libjob/sa_join_umad.h"

#define SA_QPN 1
#define SA_QKEY 0x80010000
#define SA_TIMEOUT_MS 1000	/* per try, as the kernel's SA client */
#define SA_RETRIES 3

int ibmc__sa_join_umad(const char *ca, int port, struct ibmc__mcmr_req *r,
		       struct ibmc_tr_group *g)
{
	uint8_t mad[IBMC__MAD_LEN];
	umad_port_t up;
	void *umad = NULL;
	int fd = -1, agent = -1, rc, len;
	int64_t end;
	uint16_t status = 0;

	r->tid = (uint64_t)ibmc__now_ns() ^ ((uint64_t)rand() << 32);
	rc = ibmc__mcmr_encode(r, mad);
	if (rc)
		return rc;
	rc = umad_get_port(ca, port, &up);
	if (rc < 0)
		return rc;
	if (!up.sm_lid) {
		umad_release_port(&up);
		return -ENETDOWN;	/* no SM on this subnet */
	}
	fd = umad_open_port(ca, port);
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	agent = umad_register(fd, IBMC__SA_CLASS, IBMC__SA_CLASS_VERSION, 0,
			      NULL);
	if (agent < 0) {
		rc = agent;
		goto out;
	}
	umad = umad_alloc(1, umad_size() + IBMC__MAD_LEN);
	if (!umad) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(umad_get_mad(umad), mad, sizeof(mad));
	umad_set_addr(umad, up.sm_lid, SA_QPN, up.sm_sl, SA_QKEY);
	rc = umad_send(fd, agent, umad, IBMC__MAD_LEN, SA_TIMEOUT_MS,
		       SA_RETRIES);
	if (rc < 0)
		goto out;
	end = ibmc__now_ms() + (int64_t)SA_TIMEOUT_MS * (SA_RETRIES + 1);
	for (;;) {
		int left = (int)(end - ibmc__now_ms());

		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		len = IBMC__MAD_LEN;
		rc = umad_recv(fd, umad, &len, left);
		if (rc < 0)
			break;
		if (umad_status(umad)) {
			rc = -ETIMEDOUT;	/* the send timed out */
			break;
		}
		rc = ibmc__mcmr_decode(r, umad_get_mad(umad), (size_t)len, g,
				       &status);
		if (rc != -EAGAIN)
			break;
	}
	if (rc == -EREMOTEIO)
		ibmc_log(IBMC_LOG_WARN,
			 "libibmcast: %s port %d: the SA refused the multicast %s (MAD status 0x%04x)",
			 ca, port, r->leave ? "leave" : "join", status);
out:
	umad_free(umad);
	if (agent >= 0)
		umad_unregister(fd, agent);
	if (fd >= 0)
		umad_close_port(fd);
	umad_release_port(&up);
	return rc < 0 ? rc : 0;
}
