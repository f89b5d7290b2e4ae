/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_shim_abi.h - the shim's MPI entry points are GNU indirect functions:
 * when the program is linked with the MPI the shim was built for, a call
 * binds to the shim's wrapper; when it runs on the other MPI (MPICH's shim
 * preloaded into an Open MPI program, or the reverse), it binds straight
 * to that MPI's own function. MPICH's handles are ints and Open MPI's are
 * pointers, so a wrapper built for one must never see the other's
 * arguments, not even to pass them on: an indirect function decides
 * before any argument is touched.
 *
 *   static int shim_Bcast(void *buf, ...) { ... }
 *   IBMC_SHIM_ENTRY(MPI_Bcast, shim_Bcast)
 */
#ifndef IBMCAST_LIBJOB_MPI_SHIM_ABI_H
#define IBMCAST_LIBJOB_MPI_SHIM_ABI_H

/* The MPI the shim was built for: "MPICH" or "Open MPI". */
extern const char ibmc__shim_mpi_name[];

/* 1 when the program's MPI (the library PMPI_Init binds to) is the one
 * the shim was built for, else 0; decided once. Safe inside a resolver. */
int ibmc__shim_abi_ok(void);

/* What name binds to: impl when the MPI matches, else the next
 * definition of name after the shim (the program's MPI). */
void *ibmc__shim_pick(void *impl, const char *name);

#define IBMC_SHIM_ENTRY(name, impl)                                        \
	static __typeof__(impl) *resolve_##name(void)                      \
	{                                                                  \
		return (__typeof__(impl) *)ibmc__shim_pick((void *)(impl), \
							  #name);          \
	}                                                                  \
	__typeof__(impl) name __attribute__((ifunc("resolve_" #name)));

#endif
