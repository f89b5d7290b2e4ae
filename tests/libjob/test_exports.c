/* SPDX-License-Identifier: BSD-3-Clause */
/* The installed libibmcast exports the public API and nothing internal:
 * every ibmc_* of ibmcast.h resolves, no ibmc__* nor common helper does. */
#include "config.h"

#include <dlfcn.h>
#include <string.h>

#include "ibmcast/ibmcast.h"
#include "tests/tap.h"

int main(void)
{
	static const char *const pub[] = {
		"ibmc_init", "ibmc_finalize", "ibmc_context_rank",
		"ibmc_context_size", "ibmc_comm_create", "ibmc_comm_create_attr",
		"ibmc_pool_free",
		"ibmc_comm_free",
		"ibmc_comm_rank", "ibmc_comm_size", "ibmc_comm_mcast_state",
		"ibmc_bcast", "ibmc_comm_set_bcast_algo",
		"ibmc_comm_last_bcast_algo", "ibmc_comm_get_stats",
		"ibmc_strerror", "ibmc_ibcast", "ibmc_barrier",
		"ibmc_ibarrier", "ibmc_test", "ibmc_wait",
		"ibmc_comm_set_algo", "ibmc_comm_last_algo",
		"ibmc_allgather", "ibmc_iallgather", "ibmc_allreduce",
		"ibmc_iallreduce",
		"ibmc_sim_clock_ns", "ibmc_sim_compute", "ibmc_sim_return_ns",
		"ibmc_sim_settle",
	};
	static const char *const priv[] = {
		"ibmc__tr_find", "ibmc__loopback_set_faults", "ibmc__pump",
		"ibmc__op_start", "ibmc__tr_loopback_ops", "ibmc_log",
		"ibmc__mgid_parse",
	};
	unsigned i;

	/* Linking against the library pulls it in. */
	tap_ok(strcmp(ibmc_strerror(0), "success") == 0, "ibmc_strerror(0)");
	for (i = 0; i < sizeof(pub) / sizeof(pub[0]); i++)
		tap_ok(dlsym(RTLD_DEFAULT, pub[i]) != NULL, "%s is exported",
		       pub[i]);
	for (i = 0; i < sizeof(priv) / sizeof(priv[0]); i++)
		tap_ok(dlsym(RTLD_DEFAULT, priv[i]) == NULL,
		       "%s is not exported", priv[i]);
	tap_plan(tap__n);
	return tap_done();
}
