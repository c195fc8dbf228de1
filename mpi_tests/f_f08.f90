! use mpi_f08: handle types and their comparisons, TYPE(MPI_Status),
! choice buffers of any type and rank, optional ierror, LOGICAL flags,
! MPI_IN_PLACE / MPI_STATUS(ES)_IGNORE, strings, point-to-point,
! nonblocking with request arrays, collectives, derived types, a Cartesian
! communicator, one-sided, and a non-contiguous section whose count is
! not its size refused with MPI_ERR_BUFFER.
program f_f08
  use mpi_f08
  implicit none
  integer :: rank, nprocs, right, left, cnt, ierr, i, n, rlen
  type(MPI_Comm) :: dup, cart
  type(MPI_Status) :: st, sts(2)
  type(MPI_Request) :: reqs(2)
  type(MPI_Datatype) :: vec
  type(MPI_Win) :: win
  real(kind=8) :: a(3, 4), b(3, 4)
  integer :: x(10), y(10), dims(1), coords(1)
  logical :: flag, periods(1)
  character(len=MPI_MAX_OBJECT_NAME) :: cname
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)

  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  if (ierr /= MPI_SUCCESS) call fail('comm_dup')
  if (dup == MPI_COMM_WORLD .or. .not. (dup /= MPI_COMM_WORLD)) call fail('handle comparison')
  call MPI_Comm_set_name(dup, 'f08 dup')
  call MPI_Comm_get_name(dup, cname, rlen)
  if (cname /= 'f08 dup' .or. rlen /= 7) call fail('comm name')

  a = rank
  call MPI_Sendrecv(a, 12, MPI_DOUBLE_PRECISION, right, 1, b, 12, MPI_DOUBLE_PRECISION, left, 1, dup, st)
  call MPI_Get_count(st, MPI_DOUBLE_PRECISION, cnt)
  if (st%MPI_SOURCE /= left .or. st%MPI_TAG /= 1 .or. cnt /= 12 .or. b(3, 4) /= left) call fail('sendrecv')

  x = [(rank * 10 + i, i = 1, 10)]
  call MPI_Irecv(y, 10, MPI_INTEGER, left, 2, dup, reqs(1))
  call MPI_Isend(x, 10, MPI_INTEGER, right, 2, dup, reqs(2))
  call MPI_Waitall(2, reqs, sts)
  if (any(reqs /= MPI_REQUEST_NULL)) call fail('requests not freed')
  if (sts(1)%MPI_SOURCE /= left .or. y(10) /= left * 10 + 10) call fail('waitall')
  call MPI_Irecv(y, 10, MPI_INTEGER, left, 3, dup, reqs(1))
  call MPI_Isend(x, 10, MPI_INTEGER, right, 3, dup, reqs(2))
  flag = .false.
  do while (.not. flag)
    call MPI_Testall(2, reqs, flag, MPI_STATUSES_IGNORE)
  end do

  n = rank
  call MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_INTEGER, MPI_SUM, dup)
  if (n /= nprocs * (nprocs - 1) / 2) call fail('allreduce in place')
  cname = 'from root'
  if (rank /= 0) cname = ' '
  call MPI_Bcast(cname, 9, MPI_CHARACTER, 0, dup)
  if (cname /= 'from root') call fail('bcast of a string')

  ! A vector type: every other integer.
  call MPI_Type_vector(5, 1, 2, MPI_INTEGER, vec)
  call MPI_Type_commit(vec)
  y = -1
  call MPI_Sendrecv(x, 1, vec, right, 4, y, 5, MPI_INTEGER, left, 4, dup, MPI_STATUS_IGNORE)
  if (y(1) /= left * 10 + 1 .or. y(5) /= left * 10 + 9 .or. y(6) /= -1) call fail('vector type')
  call MPI_Type_free(vec)
  if (vec /= MPI_DATATYPE_NULL) call fail('type_free')

  dims(1) = nprocs
  periods(1) = .true.
  call MPI_Cart_create(dup, 1, dims, periods, .false., cart)
  call MPI_Cart_coords(cart, rank, 1, coords)
  periods(1) = .false.
  call MPI_Cart_get(cart, 1, dims, periods, coords)
  if (.not. periods(1) .or. coords(1) /= rank) call fail('cartesian')
  call MPI_Comm_free(cart)

  ! One-sided: put my rank into the right neighbour's window.
  wsize = 4
  y = -1
  call MPI_Win_create(y, wsize, 4, MPI_INFO_NULL, dup, win)
  call MPI_Win_fence(0, win)
  disp = 0
  call MPI_Put(rank, 1, MPI_INTEGER, right, disp, 1, MPI_INTEGER, win)
  call MPI_Win_fence(0, win)
  if (y(1) /= left) call fail('put')
  call MPI_Win_free(win)

  ! A non-contiguous section whose count is not its size is refused
  ! (f_f08_sections passes whole sections).
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN)
  call MPI_Send(a(1, :), 3, MPI_DOUBLE_PRECISION, right, 5, dup, ierr)
  if (ierr /= MPI_ERR_BUFFER) call fail('a section of 4 elements sent as 3 accepted')

  call MPI_Comm_free(dup)
  if (MPI_Wtime() <= 0d0) call fail('wtime')
  call MPI_Finalize()
  if (rank == 0) print *, 'f_f08 ok'
contains
  subroutine fail(what)
    character(len=*) :: what
    print *, 'FAIL: ', what
    call MPI_Abort(MPI_COMM_WORLD, 99)
  end subroutine fail
end program f_f08
