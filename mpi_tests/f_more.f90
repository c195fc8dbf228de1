! `use mpi`: every collective with MPI_IN_PLACE, attributes with Fortran
! callbacks and the predefined attributes, Info and Type_set_name strings,
! an error handler written in Fortran.
module handlers
  integer :: calls = 0, lastcode = 0
contains
  subroutine myhandler(comm, code)
    integer :: comm, code
    calls = calls + 1
    lastcode = code
  end subroutine
  subroutine mycopy(oldcomm, keyval, extra, vin, vout, flag, ierr)
    use mpi
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, vin, vout
    logical :: flag
    vout = vin + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine
end module

program fmore
  use mpi
  use handlers
  implicit none
  integer :: ierr, rank, nprocs, i, k, n, eh, kv, dup, info, vlen, nkeys, dt
  integer, allocatable :: a(:), b(:), cnt(:), dsp(:)
  double precision :: x(4)
  integer(kind=MPI_ADDRESS_KIND) :: val, extra
  logical :: flag
  character(len=MPI_MAX_INFO_VAL) :: value
  character(len=MPI_MAX_OBJECT_NAME) :: tname
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  n = nprocs
  allocate(a(n), b(n), cnt(n), dsp(n))
  ! Allreduce / Reduce / Scan / Exscan / Allgather / Gather / Scatter / Alltoall / Reduce_scatter_block, in place
  x = rank
  call MPI_Allreduce(MPI_IN_PLACE, x, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (any(x /= n * (n - 1) / 2)) call fail('allreduce in place')
  i = rank + 1
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, i, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
    if (i /= product([(k, k = 1, n)])) call fail('reduce in place')
  else
    call MPI_Reduce(i, i, 1, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
  end if
  a = 0
  a(rank + 1) = rank * 3
  call MPI_Allgather(MPI_IN_PLACE, 1, MPI_INTEGER, a, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (any(a /= [(3 * k, k = 0, n - 1)])) call fail('allgather in place')
  a = 0
  a(rank + 1) = rank + 7
  if (rank == 0) then
    call MPI_Gather(MPI_IN_PLACE, 1, MPI_INTEGER, a, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (any(a /= [(k + 7, k = 0, n - 1)])) call fail('gather in place')
    a = [(k * 11, k = 0, n - 1)]
    call MPI_Scatter(a, 1, MPI_INTEGER, MPI_IN_PLACE, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Gather(a(rank + 1), 1, MPI_INTEGER, b, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_Scatter(b, 1, MPI_INTEGER, i, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (i /= rank * 11) call fail('scatter')
  end if
  a = [(rank * 100 + k, k = 0, n - 1)]
  call MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INTEGER, a, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (any(a /= [(k * 100 + rank, k = 0, n - 1)])) call fail('alltoall in place')
  a = [(k + rank, k = 0, n - 1)]
  call MPI_Reduce_scatter_block(MPI_IN_PLACE, a, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (a(1) /= n * rank + n * (n - 1) / 2) call fail('reduce_scatter_block in place')
  i = rank
  call MPI_Scan(MPI_IN_PLACE, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (i /= rank * (rank + 1) / 2) call fail('scan in place')
  cnt = 1
  dsp = [(k, k = 0, n - 1)]
  a = 0
  a(rank + 1) = -rank
  call MPI_Allgatherv(MPI_IN_PLACE, 1, MPI_INTEGER, a, cnt, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (any(a /= [(-k, k = 0, n - 1)])) call fail('allgatherv in place')
  if (rank == 0) a = 42
  call MPI_Bcast(a, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (any(a /= 42)) call fail('bcast')
  ! predefined attribute through Fortran: the value itself
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag, ierr)
  if (.not. flag .or. val < 32767) call fail('tag_ub attribute')
  ! Fortran keyval with a Fortran copy callback, and MPI_COMM_NULL_DELETE_FN
  extra = 5
  call MPI_Comm_create_keyval(mycopy, MPI_COMM_NULL_DELETE_FN, kv, extra, ierr)
  val = 37
  call MPI_Comm_set_attr(MPI_COMM_WORLD, kv, val, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, kv, val, flag, ierr)
  if (.not. flag .or. val /= 42) call fail('attribute copied by the Fortran callback')
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, kv, ierr)
  call MPI_Comm_free_keyval(kv, ierr)
  ! Info strings
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'colour', 'blue   ', ierr)
  call MPI_Info_get_nkeys(info, nkeys, ierr)
  call MPI_Info_get(info, 'colour', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (.not. flag .or. value /= 'blue' .or. nkeys /= 1) call fail('info get')
  call MPI_Info_get_valuelen(info, 'colour', vlen, flag, ierr)
  if (vlen /= 4) call fail('info valuelen')
  call MPI_Info_free(info, ierr)
  ! Type names
  call MPI_Type_contiguous(2, MPI_INTEGER, dt, ierr)
  call MPI_Type_set_name(dt, 'pair', ierr)
  call MPI_Type_get_name(dt, tname, vlen, ierr)
  if (tname /= 'pair' .or. vlen /= 4) call fail('type name')
  call MPI_Type_free(dt, ierr)
  ! an error handler written in Fortran
  call MPI_Comm_create_errhandler(myhandler, eh, ierr)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh, ierr)
  call MPI_Send(a, 1, MPI_INTEGER, nprocs + 3, 0, MPI_COMM_WORLD, ierr)
  if (calls /= 1 .or. lastcode /= MPI_ERR_RANK .or. ierr /= MPI_ERR_RANK) call fail('fortran error handler')
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)
  call MPI_Errhandler_free(eh, ierr)
  call MPI_Finalize(ierr)
  if (rank == 0) print *, 'f_more ok'
contains
  subroutine fail(what)
    character(len=*) :: what
    integer :: e
    print *, 'FAIL: ', what
    call MPI_Abort(MPI_COMM_WORLD, 99, e)
  end subroutine
end program
