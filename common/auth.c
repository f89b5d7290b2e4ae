/* SPDX-License-Identifier: BSD-3-Clause */
/* Who is asking: the kernel's SO_PEERCRED on the Unix socket, and a MUNGE
 * credential around the request text on TCP. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <munge.h>

#include "common/auth.h"

int ibmc__peer_cred(int fd, uid_t *uid, gid_t *gid)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len))
		return -errno;
	if (len != sizeof(uc))
		return -EPROTO;
	if (uid)
		*uid = uc.uid;
	if (gid)
		*gid = uc.gid;
	return 0;
}

static int munge_errno(munge_err_t e)
{
	switch (e) {
	case EMUNGE_SUCCESS:
		return 0;
	case EMUNGE_SOCKET:
		return -ECONNREFUSED;
	case EMUNGE_TIMEOUT:
		return -ETIMEDOUT;
	case EMUNGE_NO_MEMORY:
		return -ENOMEM;
	case EMUNGE_BAD_ARG:
		return -EINVAL;
	case EMUNGE_BAD_LENGTH:
		return -EMSGSIZE;
	case EMUNGE_OVERFLOW:
		return -EOVERFLOW;
	case EMUNGE_BAD_CRED:
	case EMUNGE_BAD_VERSION:
	case EMUNGE_BAD_CIPHER:
	case EMUNGE_BAD_MAC:
	case EMUNGE_BAD_ZIP:
	case EMUNGE_BAD_REALM:
	case EMUNGE_CRED_INVALID:
	case EMUNGE_CRED_EXPIRED:
	case EMUNGE_CRED_REWOUND:
	case EMUNGE_CRED_REPLAYED:
	case EMUNGE_CRED_UNAUTHORIZED:
		/* Whatever is wrong with it, the credential proves nothing. */
		return -EACCES;
	default:
		return -EIO;
	}
}

/* A context aimed at the right munged: the caller's socket, else
 * $IBMCAST_MUNGE_SOCKET, else libmunge's own default. */
static int ctx_create(const char *sock, munge_ctx_t *out, char *detail,
		      size_t dlen)
{
	munge_ctx_t ctx;
	munge_err_t e;

	if (!sock) {
		sock = getenv("IBMCAST_MUNGE_SOCKET");
		if (sock && !*sock)
			sock = NULL;
	}
	ctx = munge_ctx_create();
	if (!ctx) {
		snprintf(detail, dlen, "munge: cannot create context");
		return -ENOMEM;
	}
	if (sock) {
		e = munge_ctx_set(ctx, MUNGE_OPT_SOCKET, sock);
		if (e != EMUNGE_SUCCESS) {
			snprintf(detail, dlen, "munge: socket %s: %s", sock,
				 munge_ctx_strerror(ctx));
			munge_ctx_destroy(ctx);
			return munge_errno(e);
		}
	}
	*out = ctx;
	return 0;
}

static void ctx_error(munge_ctx_t ctx, munge_err_t e, const char *what,
		      char *detail, size_t dlen)
{
	const char *msg = munge_ctx_strerror(ctx);

	if (!msg)
		msg = munge_strerror(e);
	snprintf(detail, dlen, "munge: %s: %s", what, msg ? msg : "failed");
}

int ibmc__munge_wrap(const char *payload, const char *munge_socket,
		     char **cred, char *detail, size_t detail_len)
{
	munge_ctx_t ctx;
	munge_err_t e;
	char *c = NULL;
	int rc;

	*cred = NULL;
	if (!payload)
		return -EINVAL;
	rc = ctx_create(munge_socket, &ctx, detail, detail_len);
	if (rc)
		return rc;
	e = munge_encode(&c, ctx, payload, (int)strlen(payload));
	if (e != EMUNGE_SUCCESS) {
		ctx_error(ctx, e, "encode", detail, detail_len);
		free(c);
		munge_ctx_destroy(ctx);
		return munge_errno(e);
	}
	munge_ctx_destroy(ctx);
	*cred = c;
	return 0;
}

int ibmc__munge_unwrap(const char *cred, const char *munge_socket,
		       char **payload, uid_t *uid, gid_t *gid, char *detail,
		       size_t detail_len)
{
	munge_ctx_t ctx;
	munge_err_t e;
	void *buf = NULL;
	int len = 0, rc;
	uid_t u;
	gid_t g;
	char *p;

	*payload = NULL;
	if (!cred)
		return -EINVAL;
	rc = ctx_create(munge_socket, &ctx, detail, detail_len);
	if (rc)
		return rc;
	e = munge_decode(cred, ctx, &buf, &len, &u, &g);
	if (e != EMUNGE_SUCCESS) {
		/* Expired or replayed credentials still carry a payload;
		 * it must not be used. */
		ctx_error(ctx, e, "decode", detail, detail_len);
		rc = munge_errno(e);
		goto out;
	}
	if (len < 0 || (len && memchr(buf, '\0', (size_t)len))) {
		snprintf(detail, detail_len, "munge: payload is not text");
		rc = -EINVAL;
		goto out;
	}
	p = malloc((size_t)len + 1);
	if (!p) {
		snprintf(detail, detail_len, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	if (len)
		memcpy(p, buf, (size_t)len);
	p[len] = '\0';
	*payload = p;
	if (uid)
		*uid = u;
	if (gid)
		*gid = g;
	rc = 0;
out:
	free(buf);
	munge_ctx_destroy(ctx);
	return rc;
}
