# SPDX-License-Identifier: BSD-3-Clause
# libjob transports and bootstraps (included from libjob/local.mk).

# sim: an endpoint of the simulated fabric's data plane daemon.
libjob_libibmcast_la_SOURCES += libjob/tr_sim.c sim-fabric/dp_client.c \
	sim-fabric/dp_client.h
