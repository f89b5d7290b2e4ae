# SPDX-License-Identifier: BSD-3-Clause
# Included by Makefile.am (one fragment per part, so parts are edited apart).

# --- the simulated fabric's data plane daemon and its client ----------------
if BUILD_OSM_PLUGIN
bin_PROGRAMS += sim-fabric/ibmcast-dataplane
sim_fabric_ibmcast_dataplane_SOURCES = \
	sim-fabric/dataplane.h sim-fabric/dataplane_wire.h \
	sim-fabric/dataplane_main.c sim-fabric/dataplane_ctlcli.c \
	sim-fabric/dataplane_mad.c sim-fabric/dataplane_tables.c \
	sim-fabric/dataplane_fwd.c sim-fabric/dataplane_ep.c \
	sim-fabric/dataplane_ctl.c sim-fabric/dataplane_sa.c \
	sim-fabric/dataplane_model.c sim-fabric/dataplane_topo.c \
	sim-fabric/dataplane_timeline.c sim-fabric/dataplane_timeline.h \
	sim-fabric/fabric_model.c sim-fabric/fabric_model.h \
	sim-fabric/fabric_merge.c
sim_fabric_ibmcast_dataplane_LDADD = common/libibmcast_common.la \
	$(JANSSON_LIBS) -libnetdisc -libumad -libmad

# The endpoint test tool the dataplane_*.sh tests drive.
check_PROGRAMS += tests/dataplane/dp_tool
tests_dataplane_dp_tool_SOURCES = tests/dataplane/dp_tool.c \
	sim-fabric/dp_client.c sim-fabric/dp_client.h
# Own object names: libibmcast builds dp_client.c with libtool too.
tests_dataplane_dp_tool_CPPFLAGS = $(AM_CPPFLAGS)
tests_dataplane_dp_tool_LDADD = common/libibmcast_common.la
# A ping-pong in modeled time, for model_closed_forms.sh.
check_PROGRAMS += tests/dataplane/dp_pingpong
tests_dataplane_dp_pingpong_SOURCES = tests/dataplane/dp_pingpong.c \
	sim-fabric/dp_client.c sim-fabric/dp_client.h
tests_dataplane_dp_pingpong_CPPFLAGS = $(AM_CPPFLAGS)
tests_dataplane_dp_pingpong_LDADD = common/libibmcast_common.la
endif

if BUILD_OSM_PLUGIN
TESTS += tests/integration/dataplane_unicast.sh \
	tests/integration/dataplane_queue.sh \
	tests/integration/dataplane_multicast.sh \
	tests/integration/dataplane_faults.sh \
	tests/integration/dataplane_follows_fabric.sh
endif
EXTRA_DIST += tests/lib-dataplane.sh
dist_man_MANS += man/ibmcast-dataplane.8
