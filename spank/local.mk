# SPDX-License-Identifier: BSD-3-Clause
# Included by Makefile.am (one fragment per part, so parts are edited apart).

# --- spank: the Slurm SPANK plugin ---------------------------------------
# Installed into $(libdir)/slurm; Debian's Slurm looks in
# /usr/lib/<triplet>/slurm-wlm: `make install spankdir=...` or give the
# full path in plugstack.conf.
dist_man_MANS += man/ibmcast_spank.8
EXTRA_DIST += spank/ibmcast_spank.map tests/lib-slurm.sh tests/slurm

if BUILD_SPANK
spankdir = $(libdir)/slurm
spank_LTLIBRARIES = spank/ibmcast_spank.la
spank_ibmcast_spank_la_SOURCES = \
	spank/dispatch.c \
	spank/conf.c spank/conf.h \
	spank/option.c spank/option.h \
	spank/log.c spank/log.h \
	spank/jobscript.c spank/jobscript.h \
	spank/stepd.c spank/stepd.h \
	spank/pool.c spank/pool.h \
	spank/groups.c spank/groups.h \
	spank/env.c spank/env.h \
	spank/marker.c spank/marker.h \
	spank/renew.c spank/renew.h
spank_ibmcast_spank_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--version-script=$(srcdir)/spank/ibmcast_spank.map
spank_ibmcast_spank_la_LIBADD = common/libibmcast_common.la -lpthread

check_PROGRAMS += tests/slurm/test_spank_conf
tests_slurm_test_spank_conf_SOURCES = tests/slurm/test_spank_conf.c \
	spank/conf.c spank/conf.h spank/groups.c spank/groups.h
tests_slurm_test_spank_conf_CPPFLAGS = $(AM_CPPFLAGS)
tests_slurm_test_spank_conf_LDADD = common/libibmcast_common.la
TESTS += tests/slurm/test_spank_conf

TESTS += \
	tests/integration/slurm_step_pool.sh \
	tests/integration/slurm_job_pool.sh \
	tests/integration/slurm_sm_down.sh \
	tests/integration/slurm_wait_bound.sh \
	tests/integration/slurm_gc.sh \
	tests/integration/slurm_lease_renew.sh
endif
