/* SPDX-License-Identifier: BSD-3-Clause */
/* ibmc_strerror(): the library returns -errno, so the text is the C
 * library's, with the cases ibmc_* give a narrower meaning. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "ibmcast/ibmcast.h"

const char *ibmc_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ETIMEDOUT:
		return "nothing moved within IBMCAST_BCAST_TIMEOUT_MS";
	case -ESRCH:
		return "a member of the communicator is dead (it answered no liveness probe within IBMCAST_DEAD_MS)";
	case -EMSGSIZE:
		return "members disagree on the broadcast length";
	case -EBUSY:
		return "communicator busy (calls on one communicator must be serial)";
	case -ENODEV:
		return "no transport (set IBMCAST_TRANSPORT or IBMCAST_SIM_DATAPLANE)";
	}
	/* strerror() of a known errno is a static string in glibc. */
	return strerror(err < 0 ? -err : err);
}
