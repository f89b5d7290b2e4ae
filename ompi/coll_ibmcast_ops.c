/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives coll/ibmcast takes: MPI_Bcast through ibmc_bcast (any
 * datatype, packed by Open MPI's convertor when not contiguous),
 * MPI_Barrier through ibmc_barrier, MPI_Allgather through ibmc_allgather
 * (packed alike) and MPI_Allreduce through ibmc_allreduce (predefined
 * operations on the C types libibmcast reduces); MPI_Ibcast and
 * MPI_Ibarrier are only counted and handed to the previous module.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libjob/mpi_map.h"
#include "ompi/coll_ibmcast.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"

#define C (mca_coll_ibmcast_component)

/* Packs (root) or unpacks (others) count elements of dtype at buf to or
 * from the len contiguous bytes at tmp, by this rank's own type map. */
static int convert(int pack, void *buf, int count,
		   struct ompi_datatype_t *dtype, void *tmp, size_t len)
{
	opal_convertor_t conv;
	struct iovec iov = { .iov_base = tmp, .iov_len = len };
	uint32_t niov = 1;
	size_t max = len;
	int rc;

	OBJ_CONSTRUCT(&conv, opal_convertor_t);
	if (pack) {
		rc = opal_convertor_copy_and_prepare_for_send(
			ompi_mpi_local_convertor, &dtype->super,
			(size_t)count, buf, 0, &conv);
		if (rc == OPAL_SUCCESS)
			rc = opal_convertor_pack(&conv, &iov, &niov, &max) < 0 ?
				     OMPI_ERROR : OMPI_SUCCESS;
	} else {
		rc = opal_convertor_copy_and_prepare_for_recv(
			ompi_mpi_local_convertor, &dtype->super,
			(size_t)count, buf, 0, &conv);
		if (rc == OPAL_SUCCESS)
			rc = opal_convertor_unpack(&conv, &iov, &niov, &max) < 0 ?
				     OMPI_ERROR : OMPI_SUCCESS;
	}
	OBJ_DESTRUCT(&conv);
	if (rc == OMPI_SUCCESS && max != len)
		rc = OMPI_ERROR;
	return rc;
}

/*
 * A failed ibmc collective may have completed on other members, so the
 * previous module cannot redo it: report it through the communicator's
 * error handler (MPI_ERRORS_ARE_FATAL by default), saying why. Members
 * that disagree (an erroneous program; every member fails alike) are
 * reported as MPI reports argument errors, without a line of ours, and a
 * program with MPI_ERRORS_RETURN goes on: lengths as MPI_ERR_TRUNCATE,
 * operations or datatypes (-EINVAL: this rank's own arguments were
 * checked before) as MPI_ERR_ARG. A dead member (-ESRCH: libibmcast's log
 * names it) fails the collective on every survivor alike, and every later
 * one on the communicator at once: MPI's process failure (MPI_ERR_OTHER,
 * Open MPI 4 has no ULFM class), which MPI_ERRORS_RETURN lets the program
 * see and go on from.
 */
static int failed(const char *what, struct ompi_communicator_t *comm,
		  int rc)
{
	if (rc == -EMSGSIZE)
		return MPI_ERR_TRUNCATE;
	if (rc == -EINVAL)
		return MPI_ERR_ARG;
	if (rc == -ESRCH) {
		mca_coll_ibmcast_say("%s on communicator %s (cid %d, %d ranks): %s",
			what, comm->c_name, (int)comm->c_contextid,
			ompi_comm_size(comm), ibmc_strerror(rc));
		return IBMC__MPI_ERR_PROC_FAILED;
	}
	mca_coll_ibmcast_say("%s on communicator %s (cid %d, %d ranks) over ibmcast failed: %s; it cannot be redone by the previous module (--mca coll_ibmcast_enable 0 runs without ibmcast)",
		what, comm->c_name, (int)comm->c_contextid,
		ompi_comm_size(comm), ibmc_strerror(rc));
	return rc == -ENOMEM ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_ERROR;
}

/*
 * Every member of a mapped communicator takes this path for every
 * broadcast, whatever datatype it passes (MPI lets members use different
 * datatypes with one type signature): the byte count is the signature's
 * size, equal on all, so all decide alike. Contiguous data moves in
 * place; anything else is packed by the root's type map and unpacked by
 * each receiver's own.
 */
int mca_coll_ibmcast_bcast(void *buf, int count,
			   struct ompi_datatype_t *dtype, int root,
			   struct ompi_communicator_t *comm,
			   mca_coll_base_module_t *module)
{
	ibmcast_module_t *m = (ibmcast_module_t *)module;
	ptrdiff_t lb = 0, extent = 0;
	size_t tsize = 0, len;
	void *tmp = NULL;
	int rc, me;

	if (m->map_pending)
		mca_coll_ibmcast_map_pending(m);
	if (!m->ic) {
		IBMCAST_COUNT(C.bcast.pass[IBMCAST_PASS_UNMAPPED]);
		goto pass;
	}
	ompi_datatype_type_size(dtype, &tsize);
	if (count < 0 || (uint64_t)count * tsize > UINT32_MAX) {
		IBMCAST_COUNT(C.bcast.pass[IBMCAST_PASS_SIZE]);
		goto pass;
	}
	len = (size_t)count * tsize;
	me = ompi_comm_rank(comm);
	if (ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
		ompi_datatype_get_true_extent(dtype, &lb, &extent);
		rc = ibmc_bcast(m->ic, (char *)buf + lb, len, root);
	} else {
		tmp = malloc(len ? len : 1);
		if (!tmp)
			return failed("MPI_Bcast", comm, -ENOMEM);
		if (me == root &&
		    convert(1, buf, count, dtype, tmp, len) != OMPI_SUCCESS) {
			free(tmp);
			return failed("MPI_Bcast (packing)", comm, -EPROTO);
		}
		rc = ibmc_bcast(m->ic, tmp, len, root);
		if (!rc && me != root &&
		    convert(0, buf, count, dtype, tmp, len) != OMPI_SUCCESS)
			rc = -EPROTO;
		free(tmp);
		IBMCAST_COUNT(C.bcast.packed);
	}
	if (rc)
		return failed("MPI_Bcast", comm, rc);
	if (ibmc__mpi_algo_mcast(ibmc_comm_last_bcast_algo(m->ic)))
		IBMCAST_COUNT(C.bcast.mcast);
	else
		IBMCAST_COUNT(C.bcast.p2p);
	return OMPI_SUCCESS;
pass:
	return m->prev_bcast(buf, count, dtype, root, comm,
			     m->prev_bcast_module);
}

/*
 * Every member of a mapped communicator takes this path for every
 * barrier, so all run the same algorithm, as ibmc_barrier requires.
 */
int mca_coll_ibmcast_barrier(struct ompi_communicator_t *comm,
			     mca_coll_base_module_t *module)
{
	ibmcast_module_t *m = (ibmcast_module_t *)module;
	int rc;

	if (m->map_pending)
		mca_coll_ibmcast_map_pending(m);
	if (!m->ic) {
		IBMCAST_COUNT(C.barrier.pass[IBMCAST_PASS_UNMAPPED]);
		return m->prev_barrier(comm, m->prev_barrier_module);
	}
	rc = ibmc_barrier(m->ic);
	if (rc)
		return failed("MPI_Barrier", comm, rc);
	if (ibmc__mpi_algo_mcast(ibmc_comm_last_algo(m->ic, "barrier")))
		IBMCAST_COUNT(C.barrier.mcast);
	else
		IBMCAST_COUNT(C.barrier.p2p);
	return OMPI_SUCCESS;
}

/*
 * Every member of a mapped communicator takes this path for every
 * allgather whose block fits: members may use different datatypes of one
 * type signature, so only the block's byte count (rcount elements of
 * rdtype, equal on all members) decides. Contiguous data moves in place;
 * a non-contiguous send type is packed into the rank's slot, a
 * non-contiguous receive type gathers into a packed buffer unpacked by
 * this rank's own type map. A send size unlike the receive size is an
 * erroneous program: the previous module reports it.
 */
int mca_coll_ibmcast_allgather(const void *sbuf, int scount,
			       struct ompi_datatype_t *sdtype, void *rbuf,
			       int rcount, struct ompi_datatype_t *rdtype,
			       struct ompi_communicator_t *comm,
			       mca_coll_base_module_t *module)
{
	ibmcast_module_t *m = (ibmcast_module_t *)module;
	int inplace = sbuf == MPI_IN_PLACE, n, me, packed = 0, rc;
	ptrdiff_t lb = 0, textent = 0, xlb = 0, extent = 0;
	size_t ssize = 0, rsize = 0, blocklen, total;
	char *dst, *tmp = NULL;
	const void *src;

	if (m->map_pending)
		mca_coll_ibmcast_map_pending(m);
	if (!m->ic) {
		IBMCAST_COUNT(C.allgather.pass[IBMCAST_PASS_UNMAPPED]);
		goto pass;
	}
	n = ompi_comm_size(comm);
	me = ompi_comm_rank(comm);
	ompi_datatype_type_size(rdtype, &rsize);
	/* (rcount * n elements go to the convertor and the contiguity
	 * check as an int) */
	if (rcount < 0 ||
	    (uint64_t)rcount * rsize * (uint64_t)n > UINT32_MAX ||
	    (uint64_t)rcount * (uint64_t)n > INT_MAX) {
		IBMCAST_COUNT(C.allgather.pass[IBMCAST_PASS_SIZE]);
		goto pass;
	}
	blocklen = (size_t)rcount * rsize;
	total = blocklen * (size_t)n;
	if (!inplace) {
		ompi_datatype_type_size(sdtype, &ssize);
		/* (not passed: the other members are in libibmcast's) */
		if (scount < 0 || (uint64_t)scount * ssize != blocklen)
			return failed("MPI_Allgather", comm, -EMSGSIZE);
	}
	if (!blocklen) {
		rc = ibmc_allgather(m->ic, IBMC_IN_PLACE, rbuf, 0);
	} else if (ompi_datatype_is_contiguous_memory_layout(rdtype,
							      rcount * n)) {
		ompi_datatype_get_true_extent(rdtype, &lb, &textent);
		dst = (char *)rbuf + lb;
		src = IBMC_IN_PLACE;
		if (!inplace &&
		    ompi_datatype_is_contiguous_memory_layout(sdtype, scount)) {
			ompi_datatype_get_true_extent(sdtype, &lb, &textent);
			src = (const char *)sbuf + lb;
		} else if (!inplace) {
			if (convert(1, (void *)sbuf, scount, sdtype,
				    dst + (size_t)me * blocklen,
				    blocklen) != OMPI_SUCCESS)
				return failed("MPI_Allgather (packing)", comm,
					      -EPROTO);
			packed = 1;
		}
		rc = ibmc_allgather(m->ic, src, dst, blocklen);
	} else {
		packed = 1;
		tmp = malloc(total);
		if (!tmp)
			return failed("MPI_Allgather", comm, -ENOMEM);
		ompi_datatype_get_extent(rdtype, &xlb, &extent);
		rc = inplace ?
			convert(1, (char *)rbuf + (ptrdiff_t)me * rcount * extent,
				rcount, rdtype, tmp + (size_t)me * blocklen,
				blocklen) :
			convert(1, (void *)sbuf, scount, sdtype,
				tmp + (size_t)me * blocklen, blocklen);
		if (rc != OMPI_SUCCESS) {
			free(tmp);
			return failed("MPI_Allgather (packing)", comm, -EPROTO);
		}
		rc = ibmc_allgather(m->ic, IBMC_IN_PLACE, tmp, blocklen);
		if (!rc && convert(0, rbuf, rcount * n, rdtype, tmp, total) !=
				   OMPI_SUCCESS)
			rc = -EPROTO;
		free(tmp);
	}
	if (rc)
		return failed("MPI_Allgather", comm, rc);
	if (packed)
		IBMCAST_COUNT(C.allgather.packed);
	if (ibmc__mpi_algo_mcast(ibmc_comm_last_algo(m->ic, "allgather")))
		IBMCAST_COUNT(C.allgather.mcast);
	else
		IBMCAST_COUNT(C.allgather.p2p);
	return OMPI_SUCCESS;
pass:
	return m->prev_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype,
				 comm, m->prev_allgather_module);
}

/* MPI's predefined operations and libibmcast's; -1: user-defined. */
static int map_op(struct ompi_op_t *op)
{
#define X(mpi, ibmc) if (op == mpi) return (int)ibmc;
	IBMC__MPI_OPS(X)
#undef X
	return -1;
}

/*
 * The ibmc_dtype_t of a predefined C datatype (libjob/mpi_map.h) whose
 * elements follow each other without holes, and its element size; -1 for
 * anything else (derived types, MPI_C_BOOL, complex, Fortran and C++
 * types). *bitwise_only: MPI_BYTE, which MPI reduces with MPI_BAND,
 * MPI_BOR and MPI_BXOR only.
 */
static int map_dtype(struct ompi_datatype_t *dtype, size_t *esize,
		     int *bitwise_only)
{
	/* Not static: Open MPI's predefined handles are addresses of its
	 * globals, resolved when the component is loaded. */
	const struct {
		struct ompi_datatype_t *mpi;
		int kind, ibmc;
		size_t esize;
	} types[] = {
#define X(mpi, kind, ibmc, esize) { mpi, kind, ibmc, esize },
		IBMC__MPI_DTYPES(X)
#undef X
	};
	ptrdiff_t lb = 0, extent = 0, tlb = 0, textent = 0;
	size_t i, size = 0;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].mpi == dtype)
			break;
	if (i == sizeof(types) / sizeof(types[0]))
		return -1;
	ompi_datatype_type_size(dtype, &size);
	ompi_datatype_get_extent(dtype, &lb, &extent);
	ompi_datatype_get_true_extent(dtype, &tlb, &textent);
	if (lb || tlb || extent <= 0)
		return -1;
	*esize = (size_t)extent;
	*bitwise_only = types[i].kind == IBMC__MK_BYTE;
	return ibmc__mpi_dtype(types[i].kind, types[i].ibmc, types[i].esize,
			       size, (size_t)extent);
}

/*
 * MPI requires the same count, datatype and operation on every member,
 * and MPI_IN_PLACE on all or none: every reason to pass through below is
 * the same on every member, so all take libibmcast's path or all the
 * previous module's.
 */
int mca_coll_ibmcast_allreduce(const void *sbuf, void *rbuf, int count,
			       struct ompi_datatype_t *dtype,
			       struct ompi_op_t *op,
			       struct ompi_communicator_t *comm,
			       mca_coll_base_module_t *module)
{
	ibmcast_module_t *m = (ibmcast_module_t *)module;
	int iop, dt, bitwise_only = 0, rc;
	enum ibmcast_pass why;
	size_t esize = 0;

	if (m->map_pending)
		mca_coll_ibmcast_map_pending(m);
	if (!m->ic) {
		why = IBMCAST_PASS_UNMAPPED;
		goto pass;
	}
	if ((iop = map_op(op)) < 0) {
		why = IBMCAST_PASS_OP;
		goto pass;
	}
	if ((dt = map_dtype(dtype, &esize, &bitwise_only)) < 0) {
		why = IBMCAST_PASS_TYPE;
		goto pass;
	}
	if (!ibmc__mpi_op_fits(iop, dt, bitwise_only)) {
		why = IBMCAST_PASS_OPTYPE;
		goto pass;
	}
	if (count < 0 || (uint64_t)count * esize > UINT32_MAX) {
		why = IBMCAST_PASS_SIZE;
		goto pass;
	}
	rc = ibmc_allreduce(m->ic, sbuf == MPI_IN_PLACE ? IBMC_IN_PLACE : sbuf,
			    rbuf, (size_t)count, dt, iop);
	if (rc)
		return failed("MPI_Allreduce", comm, rc);
	if (ibmc__mpi_algo_mcast(ibmc_comm_last_algo(m->ic, "allreduce")))
		IBMCAST_COUNT(C.allreduce.mcast);
	else
		IBMCAST_COUNT(C.allreduce.p2p);
	return OMPI_SUCCESS;
pass:
	IBMCAST_COUNT(C.allreduce.pass[why]);
	return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm,
				 m->prev_allreduce_module);
}

/*
 * Non-blocking: an Open MPI request would have to stand for an ibmc
 * request that moves only inside libibmcast's own calls (or its progress
 * thread), outside Open MPI's progress engine; they stay the previous
 * module's, on its own channel, ordered apart from the ibmcast ones.
 */
int mca_coll_ibmcast_ibcast(void *buf, int count,
			    struct ompi_datatype_t *dtype, int root,
			    struct ompi_communicator_t *comm,
			    ompi_request_t **req,
			    mca_coll_base_module_t *module)
{
	ibmcast_module_t *m = (ibmcast_module_t *)module;

	IBMCAST_COUNT(C.bcast.pass[IBMCAST_PASS_NONBLOCKING]);
	return m->prev_ibcast(buf, count, dtype, root, comm, req,
			      m->prev_ibcast_module);
}

int mca_coll_ibmcast_ibarrier(struct ompi_communicator_t *comm,
			      ompi_request_t **req,
			      mca_coll_base_module_t *module)
{
	ibmcast_module_t *m = (ibmcast_module_t *)module;

	IBMCAST_COUNT(C.barrier.pass[IBMCAST_PASS_NONBLOCKING]);
	return m->prev_ibarrier(comm, req, m->prev_ibarrier_module);
}
