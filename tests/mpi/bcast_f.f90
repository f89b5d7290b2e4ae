! SPDX-License-Identifier: BSD-3-Clause
! bcast_f: a plain Fortran MPI program (use mpi) that broadcasts integer
! arrays of several sizes from every root on MPI_COMM_WORLD and a dup,
! checks every element, calls MPI_BARRIER and sums the errors with
! MPI_ALLREDUCE. ompi_coll.sh builds it with mpifort.openmpi (Fortran calls
! reach coll/ibmcast inside Open MPI), mpi_shim.sh with mpifort.mpich
! (MPICH's Fortran bindings call the shim's C entry points).
! Output: "bcast_f: rank R: N broadcasts verified, E errors"; exit 1 on
! errors.
program bcast_f
  use mpi
  implicit none
  integer, parameter :: nsizes = 4
  integer :: sizes(nsizes) = (/ 1, 1000, 5000, 100000 /)
  integer, allocatable :: buf(:)
  integer :: ierr, rank, nranks, root, s, i, c, comm, dup, nb, nerr, total
  integer :: want

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  nb = 0
  nerr = 0
  do c = 1, 2
    comm = MPI_COMM_WORLD
    if (c == 2) comm = dup
    do root = 0, nranks - 1
      do s = 1, nsizes
        allocate(buf(sizes(s)))
        do i = 1, sizes(s)
          if (rank == root) then
            buf(i) = i * 7 + root * 1000 + s
          else
            buf(i) = -1
          end if
        end do
        call MPI_BCAST(buf, sizes(s), MPI_INTEGER, root, comm, ierr)
        do i = 1, sizes(s)
          want = i * 7 + root * 1000 + s
          if (buf(i) /= want) then
            nerr = nerr + 1
            exit
          end if
        end do
        nb = nb + 1
        deallocate(buf)
      end do
      call MPI_BARRIER(comm, ierr)
    end do
  end do
  call MPI_COMM_FREE(dup, ierr)
  call MPI_ALLREDUCE(nerr, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  write (*, '(a,i0,a,i0,a,i0,a)') 'bcast_f: rank ', rank, ': ', nb, &
       ' broadcasts verified, ', nerr, ' errors'
  call MPI_FINALIZE(ierr)
  if (total /= 0) stop 1
end program bcast_f
