! use mpi_f08: the routines that take procedures or C pointers, through
! the standard's abstract interfaces: a user op (MPI_User_function, with
! TYPE(C_PTR) VALUE buffers) in an allreduce, communicator keyvals with a
! user copy callback and the predefined ones (MPI_Comm_dup copies or not),
! MPI_Comm_get_attr, an error handler made with MPI_Comm_create_errhandler
! that MPI_Comm_call_errhandler reaches, a generalized request whose
! query callback fills the status, MPI_Alloc_mem / MPI_Free_mem, the
! window allocations with MPI_Win_shared_query, MPI_Buffer_detach and
! MPI_Pcontrol. Results checked on every rank.
module f08_procs_cb
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: handler_calls = 0, handler_code = 0, copies = 0
contains
  subroutine add_ints(invec, inoutvec, len, datatype)
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    if (datatype /= MPI_INTEGER) stop 3
    b = b + a
  end subroutine add_ints
  subroutine copy_plus_one(oldcomm, comm_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
    type(MPI_Comm) :: oldcomm
    integer :: comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    copies = copies + 1
    attribute_val_out = attribute_val_in + extra_state
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine copy_plus_one
  subroutine on_error(comm, error_code)
    type(MPI_Comm) :: comm
    integer :: error_code
    handler_calls = handler_calls + 1
    handler_code = error_code
  end subroutine on_error
  subroutine query(extra_state, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    type(MPI_Status) :: status
    integer :: ierror
    call MPI_Status_set_elements(status, MPI_INTEGER, int(extra_state))
    call MPI_Status_set_cancelled(status, .false.)
    status%MPI_SOURCE = MPI_UNDEFINED
    status%MPI_TAG = MPI_UNDEFINED
    ierror = MPI_SUCCESS
  end subroutine query
  subroutine free_fn(extra_state, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: ierror
    ierror = MPI_SUCCESS
  end subroutine free_fn
  subroutine cancel_fn(extra_state, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    logical :: complete
    integer :: ierror
    ierror = MPI_SUCCESS
  end subroutine cancel_fn
end module f08_procs_cb

program f_f08_procs
  use mpi_f08
  use f08_procs_cb
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: rank, nprocs, i, cnt, key, key2, disp_unit, bsize, x(4), y(4)
  type(MPI_Op) :: op
  type(MPI_Comm) :: dup
  type(MPI_Errhandler) :: eh
  type(MPI_Request) :: req
  type(MPI_Status) :: st
  type(MPI_Win) :: win
  type(c_ptr) :: mem, base, got
  integer(kind=MPI_ADDRESS_KIND) :: val, qsize
  logical :: flag
  integer, pointer :: arr(:)
  character, allocatable, target :: bbuf(:)

  call MPI_Init()
  call MPI_Pcontrol(1)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)

  ! a user op (a sum through c_f_pointer), against the exact sums
  call MPI_Op_create(add_ints, .true., op)
  x = [(rank * 10 + i, i = 1, 4)]
  call MPI_Allreduce(x, y, 4, MPI_INTEGER, op, MPI_COMM_WORLD)
  do i = 1, 4
    if (y(i) /= 10 * nprocs * (nprocs - 1) / 2 + nprocs * i) call fail('user op')
  end do
  call MPI_Op_free(op)

  ! keyvals: a user copy callback adds the extra state; the null copy does not copy
  call MPI_Comm_create_keyval(copy_plus_one, MPI_COMM_NULL_DELETE_FN, key, 10_MPI_ADDRESS_KIND)
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key2, 0_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, 5_MPI_ADDRESS_KIND)
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key2, 7_MPI_ADDRESS_KIND)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_get_attr(dup, key, val, flag)
  if (.not. flag .or. val /= 15 .or. copies /= 1) call fail('user copy callback')
  call MPI_Comm_get_attr(dup, key2, val, flag)
  if (flag) call fail('MPI_COMM_NULL_COPY_FN copied')
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, val, flag)
  if (.not. flag .or. val < 32767) call fail('MPI_TAG_UB')

  ! an error handler of ours, called through MPI_Comm_call_errhandler
  call MPI_Comm_create_errhandler(on_error, eh)
  call MPI_Comm_set_errhandler(dup, eh)
  call MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER)
  if (handler_calls /= 1 .or. handler_code /= MPI_ERR_OTHER) call fail('error handler')
  call MPI_Errhandler_free(eh)
  call MPI_Comm_free(dup)
  call MPI_Comm_free_keyval(key)
  call MPI_Comm_free_keyval(key2)

  ! a generalized request: the query callback gives the status
  call MPI_Grequest_start(query, free_fn, cancel_fn, 6_MPI_ADDRESS_KIND, req)
  call MPI_Grequest_complete(req)
  call MPI_Wait(req, st)
  call MPI_Get_count(st, MPI_INTEGER, cnt)
  if (cnt /= 6 .or. req /= MPI_REQUEST_NULL) call fail('generalized request')

  ! memory from MPI
  call MPI_Alloc_mem(40_MPI_ADDRESS_KIND, MPI_INFO_NULL, mem)
  call c_f_pointer(mem, arr, [10])
  arr = [(i, i = 1, 10)]
  if (sum(arr) /= 55) call fail('alloc_mem')
  call MPI_Free_mem(arr)

  ! windows: allocated memory, and shared memory read through a neighbour's pointer
  call MPI_Win_allocate(16_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, base, win)
  call c_f_pointer(base, arr, [4])
  arr = rank
  call MPI_Win_free(win)
  call MPI_Win_allocate_shared(16_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, base, win)
  call c_f_pointer(base, arr, [4])
  arr = 100 + rank
  call MPI_Win_fence(0, win)
  call MPI_Win_shared_query(win, mod(rank + 1, nprocs), qsize, disp_unit, got)
  call c_f_pointer(got, arr, [4])
  if (qsize /= 16 .or. disp_unit /= 4 .or. arr(4) /= 100 + mod(rank + 1, nprocs)) call fail('win_shared_query')
  call MPI_Win_fence(0, win)
  call MPI_Win_free(win)

  ! the Bsend buffer back
  allocate(bbuf(1000))
  call MPI_Buffer_attach(bbuf, 1000)
  call MPI_Buffer_detach(got, bsize)
  if (bsize /= 1000 .or. .not. c_associated(got, c_loc(bbuf))) call fail('buffer_detach')

  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) print '(a)', 'f_f08_procs: ok'
  call MPI_Finalize()
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a, i0, 2a)', 'FAIL rank ', rank, ' ', what
    call MPI_Abort(MPI_COMM_WORLD, 99)
  end subroutine fail
end program f_f08_procs
