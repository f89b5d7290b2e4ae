/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The collectives coll/ibmcast takes: MPI_Bcast through ibmc_bcast (any
 * datatype, packed by Open MPI's convertor when not contiguous) and
 * MPI_Barrier through ibmc_barrier; MPI_Ibcast and MPI_Ibarrier are only
 * counted and handed to the previous module.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
 * error handler (MPI_ERRORS_ARE_FATAL by default), saying why.
 */
static int failed(const char *what, struct ompi_communicator_t *comm,
		  int rc)
{
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
	if (!strcmp(ibmc_comm_last_bcast_algo(m->ic), "mcast"))
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

	if (!m->ic) {
		IBMCAST_COUNT(C.barrier.pass[IBMCAST_PASS_UNMAPPED]);
		return m->prev_barrier(comm, m->prev_barrier_module);
	}
	rc = ibmc_barrier(m->ic);
	if (rc)
		return failed("MPI_Barrier", comm, rc);
	if (!strcmp(ibmc_comm_last_algo(m->ic, "barrier"), "mcast"))
		IBMCAST_COUNT(C.barrier.mcast);
	else
		IBMCAST_COUNT(C.barrier.p2p);
	return OMPI_SUCCESS;
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
