/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_shim_abi.c - is the program's MPI the one this shim was built for?
 * (see mpi_shim_abi.h) */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "libjob/mpi_shim_abi.h"

/* A symbol only the shim's own MPI library defines. */
#if defined(OPEN_MPI)
const char ibmc__shim_mpi_name[] = "Open MPI";
#define MARKER "ompi_mpi_comm_world"
#elif defined(MPICH)
const char ibmc__shim_mpi_name[] = "MPICH";
#define MARKER "MPIR_Err_create_code"
#else
#error "the shim knows MPICH and Open MPI"
#endif

static int abi = -1;		/* -1: not decided yet */
static char other[256];		/* the program's MPI library, when not ours */

/*
 * The library the program's PMPI_Init comes from must be the one that
 * holds MARKER. Loaded into the other MPI's program, the shim brings its
 * own MPI along (a dependency), but the program's library comes first in
 * the lookup order and is the one PMPI_Init binds to.
 */
int ibmc__shim_abi_ok(void)
{
	Dl_info init, mark;
	void *pi, *pm;

	if (abi >= 0)
		return abi;
	pi = dlsym(RTLD_DEFAULT, "PMPI_Init");
	pm = dlsym(RTLD_DEFAULT, MARKER);
	abi = pi && pm && dladdr(pi, &init) && dladdr(pm, &mark) &&
	      init.dli_fbase == mark.dli_fbase;
	if (!abi)
		snprintf(other, sizeof(other), "%s",
			 pi && dladdr(pi, &init) && init.dli_fname ?
			 init.dli_fname : "no PMPI_Init");
	return abi;
}

void *ibmc__shim_pick(void *impl, const char *name)
{
	void *next;

	if (ibmc__shim_abi_ok())
		return impl;
	next = dlsym(RTLD_NEXT, name);
	return next ? next : impl;
}

/* The one line a mismatched process says (by its first rank, if the
 * launcher tells which it is); constructors run after every resolver. */
__attribute__((constructor)) static void say_mismatch(void)
{
	const char *vars[] = { "PMI_RANK", "OMPI_COMM_WORLD_RANK",
			       "SLURM_PROCID", "PMIX_RANK" };
	const char *r = NULL;
	size_t i;

	if (ibmc__shim_abi_ok())
		return;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]) && !r; i++)
		r = getenv(vars[i]);
	if (r && strcmp(r, "0"))
		return;
	fprintf(stderr, "ibmcast_mpi: this shim is built for %s, but the "
		"program runs on another MPI (%s): stepping aside, MPI's own "
		"collectives are used\n", ibmc__shim_mpi_name, other);
}
