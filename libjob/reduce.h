/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.h - the reduction kernels of ibmc_allreduce(3): MPI's predefined
 * operations on the basic C types and the MINLOC/MAXLOC pair types.
 */
#ifndef IBMCAST_LIBJOB_REDUCE_H
#define IBMCAST_LIBJOB_REDUCE_H

#include <stddef.h>

#include "ibmcast/ibmcast.h"

/* Bytes of one element of dt, 0 for an unknown type. */
size_t ibmc__dtype_size(ibmc_dtype_t dt);

/* inout[i] = in[i] op inout[i] ... in this order: the left operand is
 * always `in`, so a caller that always passes the lower rank's data as
 * `in` gets the same bits on every rank. */
void ibmc__reduce(ibmc_op_t op, ibmc_dtype_t dt, const void *in,
		  void *inout, size_t count);

#endif
