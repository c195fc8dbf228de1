! use mpi_f08: the large-count overloads (MPI-4.0 19.2). Counts of
! INTEGER(KIND=MPI_COUNT_KIND) and displacements of
! INTEGER(KIND=MPI_ADDRESS_KIND) pick the _c forms under the routines'
! generic names: a ring of Send/Recv and Isend/Irecv with MPI_Get_count
! into a count-kind result, Bcast, Allreduce, Allgatherv with count-kind
! counts, a contiguous type of 2^31 + 5 bytes whose MPI_Type_size is
! read as a count (its int form cannot hold it) and its extent by
! MPI_Type_get_extent_c's own name, and MPI_Pack_size. The
! int forms still resolve beside them. Results checked on every rank.
program f_f08_large
  use mpi_f08
  implicit none
  integer :: rank, size, right, left, i
  integer(kind=MPI_COUNT_KIND) :: n, got, tsize
  integer(kind=MPI_COUNT_KIND), allocatable :: counts(:)
  integer(kind=MPI_ADDRESS_KIND), allocatable :: displs(:)
  integer :: sbuf(10), rbuf(10), small
  integer, allocatable :: all(:)
  double precision :: x(3), y(3)
  type(MPI_Status) :: st
  type(MPI_Request) :: rq(2)
  type(MPI_Datatype) :: big
  integer(kind=MPI_COUNT_KIND) :: lbc, extc

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  right = mod(rank + 1, size)
  left = mod(rank - 1 + size, size)

  ! Send/Recv with a count-kind count; the count read back as one.
  n = 10
  sbuf = [(rank * 100 + i, i = 1, 10)]
  rbuf = -1
  call MPI_Sendrecv(sbuf, n, MPI_INTEGER, right, 1, rbuf, n, MPI_INTEGER, left, 1, MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_INTEGER, got)
  if (got /= 10) call fail('Get_count (count kind) after Sendrecv')
  do i = 1, 10
    if (rbuf(i) /= left * 100 + i) call fail('Sendrecv (count kind) data')
  end do
  rbuf = -1
  call MPI_Irecv(rbuf, n, MPI_INTEGER, left, 2, MPI_COMM_WORLD, rq(1))
  call MPI_Isend(sbuf, n, MPI_INTEGER, right, 2, MPI_COMM_WORLD, rq(2))
  call MPI_Waitall(2, rq, MPI_STATUSES_IGNORE)
  if (any(rbuf /= [(left * 100 + i, i = 1, 10)])) call fail('Isend/Irecv (count kind) data')
  ! The int forms beside them.
  rbuf = -1
  call MPI_Sendrecv(sbuf, 10, MPI_INTEGER, right, 3, rbuf, 10, MPI_INTEGER, left, 3, MPI_COMM_WORLD, st)
  call MPI_Get_count(st, MPI_INTEGER, small)
  if (small /= 10 .or. rbuf(10) /= left * 100 + 10) call fail('int forms')

  ! Collectives.
  n = 3
  x = [1d0, 2d0, 3d0] * (rank + 1)
  call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (any(y /= [1d0, 2d0, 3d0] * (size * (size + 1) / 2))) call fail('Allreduce (count kind)')
  if (rank == 0) x = [7d0, 8d0, 9d0]
  call MPI_Bcast(x, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)
  if (any(x /= [7d0, 8d0, 9d0])) call fail('Bcast (count kind)')
  allocate(counts(size), displs(size), all(size * (size + 1) / 2))
  do i = 1, size
    counts(i) = i
    displs(i) = (i - 1) * i / 2
  end do
  sbuf = rank
  all = -1
  call MPI_Allgatherv(sbuf, counts(rank + 1), MPI_INTEGER, all, counts, displs, MPI_INTEGER, MPI_COMM_WORLD)
  do i = 1, size
    if (any(all(displs(i) + 1:displs(i) + i) /= i - 1)) call fail('Allgatherv (count kind)')
  end do

  ! A type of more bytes than an int holds.
  n = 2_MPI_COUNT_KIND**31 + 5
  call MPI_Type_contiguous(n, MPI_BYTE, big)
  call MPI_Type_commit(big)
  call MPI_Type_size(big, tsize)
  if (tsize /= n) call fail('Type_size (count kind) of 2^31 + 5 bytes')
  ! By its own name: the same kinds as the int form's (no overload).
  call MPI_Type_get_extent_c(big, lbc, extc)
  if (lbc /= 0 .or. extc /= n) call fail('Type_get_extent_c')
  call MPI_Type_free(big)
  n = 10
  call MPI_Pack_size(n, MPI_INTEGER, MPI_COMM_WORLD, tsize)
  if (tsize < 40) call fail('Pack_size (count kind)')

  call MPI_Finalize()
  if (rank == 0) print *, 'f_f08_large ok'
contains
  subroutine fail(what)
    character(len=*) :: what
    print *, 'FAIL: ', what
    call MPI_Abort(MPI_COMM_WORLD, 99)
  end subroutine fail
end program f_f08_large
