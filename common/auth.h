/* SPDX-License-Identifier: BSD-3-Clause */
/* Who is asking: SO_PEERCRED on the Unix socket, a MUNGE credential
 * wrapping the request on TCP (the cluster already runs munged for Slurm). */
#ifndef IBMCAST_COMMON_AUTH_H
#define IBMCAST_COMMON_AUTH_H

#include <stddef.h>
#include <sys/types.h>

/* Peer uid/gid of a connected Unix socket. 0 or -errno. */
int ibmc__peer_cred(int fd, uid_t *uid, gid_t *gid);

/* Encode payload into a MUNGE credential. munge_socket NULL = libmunge's
 * default (or $IBMCAST_MUNGE_SOCKET if set). 0 or -errno (-EACCES when
 * munged refuses, -ECONNREFUSED when it is not running); detail says why. */
int ibmc__munge_wrap(const char *payload, const char *munge_socket,
		     char **cred, char *detail, size_t detail_len);

/* Decode a credential: payload (NUL-terminated, caller frees) and the
 * authenticated uid/gid. Expired, replayed, rewound or invalid
 * credentials give -EACCES with the reason in detail; munged unreachable
 * gives -ECONNREFUSED. */
int ibmc__munge_unwrap(const char *cred, const char *munge_socket,
		       char **payload, uid_t *uid, gid_t *gid, char *detail,
		       size_t detail_len);

#endif
