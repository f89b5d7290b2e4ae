# SPDX-License-Identifier: BSD-3-Clause
# Included by Makefile.am (one fragment per part, so parts are edited apart).

# --- sim-fabric: the umad send-timeout shim -----------------------------
# An LD_PRELOAD module that ibmcast-sim loads before libumad2sim.so into
# every client of the simulated fabric, so that a request MAD nobody
# answers times out as it does with the kernel's MAD layer.
if BUILD_OSM_PLUGIN
pkglib_LTLIBRARIES = sim-fabric/libibmcast_umadtimeout.la
# common's clock and parser are built in, not its library: a convenience
# library would bring all of common (and libjansson, libmunge) into every
# process the shim is preloaded into. The map keeps them hidden.
sim_fabric_libibmcast_umadtimeout_la_SOURCES = sim-fabric/umad_timeout.c \
	common/clock.c common/clock.h common/parse.c common/parse.h
sim_fabric_libibmcast_umadtimeout_la_LDFLAGS = -module -avoid-version \
	-shared -Wl,--version-script=$(srcdir)/sim-fabric/umad_timeout.map
sim_fabric_libibmcast_umadtimeout_la_LIBADD = -ldl -lpthread
EXTRA_DIST += sim-fabric/umad_timeout.map

# Needs a running fabric: driven by umad_timeout.sh, not run on its own.
check_PROGRAMS += tests/unit/umad_probe
tests_unit_umad_probe_SOURCES = tests/unit/umad_probe.c
tests_unit_umad_probe_LDADD = -libumad
TESTS += tests/integration/umad_timeout.sh
endif
