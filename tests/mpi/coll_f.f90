! SPDX-License-Identifier: BSD-3-Clause
! coll_f: a plain Fortran MPI program (include 'mpif.h', the older of
! Fortran's two bindings; bcast_f uses `use mpi`) that checks every result
! of MPI_ALLGATHER and MPI_ALLREDUCE on MPI_COMM_WORLD and on a split
! communicator (even and odd ranks):
!  - MPI_ALLGATHER of INTEGER and DOUBLE PRECISION blocks, and in place;
!  - MPI_ALLREDUCE: REAL sum, DOUBLE PRECISION max, INTEGER prod and bor,
!    MPI_2INTEGER minloc, LOGICAL land and lor (libibmcast has no LOGICAL: it goes
!    to MPI, and must still be right), and MPI_IN_PLACE.
! Values are small integers, so every floating-point sum is exact and the
! expected result is computed here, not taken from a run.
! Output: "coll_f: rank R: N collectives verified, E errors"; exit 1 on
! errors.
program coll_f
  implicit none
  include 'mpif.h'
  integer, parameter :: blk = 300
  integer :: ierr, rank, nranks, comm, half, c, me, n, r, i, nerr, total, nv
  integer, allocatable :: ib(:), ig(:)
  double precision, allocatable :: db(:), dg(:)
  real :: rs(4), rr(4)
  double precision :: dm(3), dr(3)
  integer :: ip(2), ir(2), ibor, iborr, pair(2, 3), pairr(2, 3)
  logical :: l, lr

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  nerr = 0
  nv = 0
  do c = 1, 2
    comm = MPI_COMM_WORLD
    if (c == 2) comm = half
    call MPI_COMM_RANK(comm, me, ierr)
    call MPI_COMM_SIZE(comm, n, ierr)
    allocate(ib(blk), ig(blk * n), db(blk), dg(blk * n))

    ! allgather: rank r's block holds r * 10000 + i
    do i = 1, blk
      ib(i) = me * 10000 + i
      db(i) = dble(me) * 0.5d0 + dble(i)
    end do
    ig = -1
    dg = -1d0
    call MPI_ALLGATHER(ib, blk, MPI_INTEGER, ig, blk, MPI_INTEGER, comm, ierr)
    call MPI_ALLGATHER(db, blk, MPI_DOUBLE_PRECISION, dg, blk, &
         MPI_DOUBLE_PRECISION, comm, ierr)
    do r = 0, n - 1
      do i = 1, blk
        if (ig(r * blk + i) /= r * 10000 + i) nerr = nerr + 1
        if (dg(r * blk + i) /= dble(r) * 0.5d0 + dble(i)) nerr = nerr + 1
      end do
    end do
    nv = nv + 2
    ! in place: each rank's own block is already in the receive buffer
    ig = -1
    do i = 1, blk
      ig(me * blk + i) = me * 10000 + i
    end do
    call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ig, blk, &
         MPI_INTEGER, comm, ierr)
    do r = 0, n - 1
      do i = 1, blk
        if (ig(r * blk + i) /= r * 10000 + i) nerr = nerr + 1
      end do
    end do
    nv = nv + 1

    ! allreduce
    do i = 1, 4
      rs(i) = real(me + i)
    end do
    call MPI_ALLREDUCE(rs, rr, 4, MPI_REAL, MPI_SUM, comm, ierr)
    do i = 1, 4
      if (rr(i) /= real(n * (n - 1) / 2 + n * i)) nerr = nerr + 1
    end do
    do i = 1, 3
      dm(i) = dble(mod(me + i, n)) - 0.25d0
    end do
    call MPI_ALLREDUCE(dm, dr, 3, MPI_DOUBLE_PRECISION, MPI_MAX, comm, ierr)
    do i = 1, 3
      if (dr(i) /= dble(n - 1) - 0.25d0) nerr = nerr + 1
    end do
    ip(1) = 1
    ip(2) = 1
    if (me < 3) ip(1) = 2
    if (me == 0) ip(2) = -3
    call MPI_ALLREDUCE(ip, ir, 2, MPI_INTEGER, MPI_PROD, comm, ierr)
    if (ir(1) /= 2 ** min(n, 3) .or. ir(2) /= -3) nerr = nerr + 1
    ibor = 2 ** mod(me, 20)
    call MPI_ALLREDUCE(ibor, iborr, 1, MPI_INTEGER, MPI_BOR, comm, ierr)
    if (iborr /= 2 ** min(n, 20) - 1) nerr = nerr + 1
    ! minloc: value (me - 1)**2 is least at me = 1 (or 0 alone); ties go
    ! to the lower index
    do i = 1, 3
      pair(1, i) = (me - i) ** 2
      pair(2, i) = me
    end do
    call MPI_ALLREDUCE(pair, pairr, 3, MPI_2INTEGER, MPI_MINLOC, comm, ierr)
    do i = 1, 3
      r = min(i, n - 1)
      if (pairr(1, i) /= (r - i) ** 2 .or. pairr(2, i) /= r) &
           nerr = nerr + 1
    end do
    ! only the last rank says false: land is false, lor is true unless
    ! the last rank is alone
    l = me /= n - 1
    call MPI_ALLREDUCE(l, lr, 1, MPI_LOGICAL, MPI_LAND, comm, ierr)
    if (lr) nerr = nerr + 1
    call MPI_ALLREDUCE(l, lr, 1, MPI_LOGICAL, MPI_LOR, comm, ierr)
    if (lr .neqv. n > 1) nerr = nerr + 1
    ! in place: the sum of every rank's 1 .. blk offset by its rank
    do i = 1, blk
      ib(i) = me + i
    end do
    call MPI_ALLREDUCE(MPI_IN_PLACE, ib, blk, MPI_INTEGER, MPI_SUM, comm, &
         ierr)
    do i = 1, blk
      if (ib(i) /= n * (n - 1) / 2 + n * i) nerr = nerr + 1
    end do
    nv = nv + 8
    deallocate(ib, ig, db, dg)
  end do
  call MPI_COMM_FREE(half, ierr)
  call MPI_ALLREDUCE(nerr, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
       ierr)
  write (*, '(a,i0,a,i0,a,i0,a)') 'coll_f: rank ', rank, ': ', nv, &
       ' collectives verified, ', nerr, ' errors'
  call MPI_FINALIZE(ierr)
  if (total /= 0) stop 1
end program coll_f
